"""What changed in `daily/` since the last dream: the scan window over the `dream` catalog
(`metadata/dream.json`, kept by `reme.pipelines.memory.daily_changes`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from reme.pipelines.memory import daily_changes
from reme.pipelines.memory.daily_changes import changed, daily_markdown, window_days
from reme.pipelines.port import FileEntry, MemoryPort

CATALOG = "dream"
CATALOG_VERSION = 1
SKIPPED_NAMES = ("interests.yaml", "_proactive.yaml")


@dataclass(frozen=True)
class Scan:
    window: tuple[str, str]  # first and last day, inclusive
    files: tuple[FileEntry, ...]  # every scanned file
    changed: tuple[FileEntry, ...]  # those whose stamp differs from the catalog


async def scan(port: MemoryPort, last: date, scan_days: int) -> Scan:
    """Day pages and Markdown cards of the `scan_days` days ending at `last`, and which changed."""
    days = window_days(last, scan_days)
    found = [e for e in await daily_markdown(port, days) if e.path.rsplit("/", 1)[-1] not in SKIPPED_NAMES]
    return Scan((days[0], days[-1]), tuple(found), tuple(changed(port, CATALOG, found)))


def checkpoint(port: MemoryPort, result: Scan, processed: set[str]) -> list[str]:
    """Record the scanned stamps of `processed` paths; drop entries of files that vanished. Atomic."""
    done = [entry for entry in result.changed if entry.path in processed]
    daily_changes.checkpoint(port, CATALOG, done, version=CATALOG_VERSION)
    return sorted(entry.path for entry in done)

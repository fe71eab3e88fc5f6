"""What changed in `daily/` since the last dream (SPEC 12.2, 12.4): the scan window and the `dream` catalog.

The catalog (`metadata/dream.json`) maps each processed daily file to the `(mtime, size)` it had when
it was processed; a file is changed when its stamp differs. Checkpointing records the stamps seen by
the scan, not the current ones, so a file edited during a run is seen as changed by the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from reme.pipelines.port import FileEntry, MemoryPort

CATALOG = "dream"
CATALOG_VERSION = 1
SKIPPED_NAMES = ("interests.yaml", "_proactive.yaml")


@dataclass(frozen=True)
class Scan:
    window: tuple[str, str]  # first and last day, inclusive
    files: tuple[FileEntry, ...]  # every scanned file
    changed: tuple[FileEntry, ...]  # those whose stamp differs from the catalog


def window_days(last: date, scan_days: int) -> list[str]:
    return [(last - timedelta(days=offset)).isoformat() for offset in range(scan_days - 1, -1, -1)]


async def scan(port: MemoryPort, last: date, scan_days: int) -> Scan:
    """Day pages and Markdown cards of the `scan_days` days ending at `last`, and which changed."""
    daily = port.folder("daily")
    days = window_days(last, scan_days)
    found: list[FileEntry] = []
    pages = {entry.path: entry for entry in await port.list_files(daily, extensions=(".md",))}
    for day in days:
        page = pages.get(f"{daily}/{day}.md")
        if page is not None:
            found.append(page)
        cards = await port.list_files(f"{daily}/{day}", extensions=(".md",), recursive=True)
        found.extend(entry for entry in cards if entry.path.rsplit("/", 1)[-1] not in SKIPPED_NAMES)
    catalog = _entries(port.read_state(CATALOG))
    changed = [entry for entry in found if catalog.get(entry.path) != _stamp(entry)]
    return Scan((days[0], days[-1]), tuple(found), tuple(changed))


def checkpoint(port: MemoryPort, result: Scan, processed: set[str]) -> list[str]:
    """Record the scanned stamps of `processed` paths; drop entries of files that vanished. Atomic."""
    entries = _entries(port.read_state(CATALOG))
    for path in list(entries):
        if not port.exists(path):
            del entries[path]
    done = sorted(entry.path for entry in result.changed if entry.path in processed)
    for entry in result.changed:
        if entry.path in processed:
            entries[entry.path] = _stamp(entry)
    port.write_state(CATALOG, {"version": CATALOG_VERSION, "files": entries})
    return done


def _stamp(entry: FileEntry) -> dict[str, Any]:
    return {"mtime": entry.mtime, "size": entry.size}


def _entries(state: dict[str, Any]) -> dict[str, Any]:
    files = state.get("files")
    return dict(files) if isinstance(files, dict) else {}

"""Which daily Markdown files changed since a pipeline last read them: its scan window and catalog.

Dream and proactive refresh each keep a catalog in `metadata/<name>.json` mapping every file they
processed to the `(mtime, size)` it had then; a file is changed when its stamp differs. Recording the
stamps the scan saw (not the current ones) means a file edited during a run is changed for the next.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta

from reme.jsontypes import JSONObject, JSONValue
from reme.pipelines.port import FileEntry, MemoryPort


def window_days(last: date, scan_days: int) -> list[str]:
    """The `scan_days` days ending at `last`, oldest first, as `YYYY-MM-DD`."""
    return [(last - timedelta(days=offset)).isoformat() for offset in range(scan_days - 1, -1, -1)]


async def daily_markdown(port: MemoryPort, days: Iterable[str]) -> list[FileEntry]:
    """The day pages `daily/<day>.md` and every Markdown file under `daily/<day>/`, day by day."""
    daily = port.folder("daily")
    pages = {entry.path: entry for entry in await port.list_files(daily, extensions=(".md",))}
    found: list[FileEntry] = []
    for day in days:
        page = pages.get(f"{daily}/{day}.md")
        if page is not None:
            found.append(page)
        found += await port.list_files(f"{daily}/{day}", extensions=(".md",), recursive=True)
    return found


def stamp(entry: FileEntry) -> JSONObject:
    return {"mtime": entry.mtime, "size": entry.size}


def catalogued(port: MemoryPort, catalog: str) -> dict[str, JSONValue]:
    """The catalog's `path -> stamp` entries (empty when missing or unreadable)."""
    files = port.read_state(catalog).get("files")
    return dict(files) if isinstance(files, dict) else {}


def changed(port: MemoryPort, catalog: str, files: Iterable[FileEntry]) -> list[FileEntry]:
    """The files whose stamp differs from the one the catalog recorded."""
    seen = catalogued(port, catalog)
    return [entry for entry in files if seen.get(entry.path) != stamp(entry)]


def checkpoint(port: MemoryPort, catalog: str, entries: Iterable[FileEntry], **extra: JSONValue) -> None:
    """Record these files as read with the stamps the scan saw, drop vanished files; atomic."""
    state = port.read_state(catalog)
    files = {path: seen for path, seen in catalogued(port, catalog).items() if port.exists(path)}
    files.update({entry.path: stamp(entry) for entry in entries})
    port.write_state(catalog, {**state, **extra, "files": files})

"""What proactive refresh reads: the changed daily Markdown of the scan window, packed within bounds.

Changed means new or different (mtime, size) from the flow's own catalog (`proactive`, in
`metadata/`), which nothing else writes. Packing is newest first; each file is cut at `max_chars_per_file` and all together at
`max_total_chars`, and the prompt says what was cut. A file left out entirely is not checkpointed,
so a later run reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from reme.errors import ReMeError
from reme.pipelines.memory.daily_changes import changed, daily_markdown, window_days
from reme.pipelines.port import FileEntry, MemoryPort
from reme.pipelines.proactive.topics import path_date

MAX_FILE_BYTES = 16 * 1024 * 1024  # a larger "note" is not material; it is reported and skipped


@dataclass
class Material:
    """The changed files of a window and the text the model will see."""

    window: list[str]
    changed: list[FileEntry] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)  # paths whose text is in the prompt
    cut: list[str] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)  # changed, but no room left in the prompt
    skipped: list[dict[str, str]] = field(default_factory=list)
    blocks: dict[str, str] = field(default_factory=dict)  # path -> its text as the prompt shows it

    @property
    def text(self) -> str:
        parts = list(self.blocks.values())
        if self.omitted:
            parts.append(f"[{len(self.omitted)} more changed file(s) not shown: no room left in this prompt]")
        return "\n\n".join(parts)

    def text_of(self, paths: set[str]) -> str:
        return "\n\n".join(block for path, block in self.blocks.items() if path in paths)


async def gather(
    port: MemoryPort,
    day: date,
    *,
    catalog: str,
    scan_days: int,
    max_chars_per_file: int,
    max_total_chars: int,
) -> Material:
    days = window_days(day, scan_days)
    material = Material(window=days)
    material.changed = changed(port, catalog, await daily_markdown(port, days))
    budget = max_total_chars
    newest_first = sorted(material.changed, key=lambda e: (path_date(e.path) or "", e.path), reverse=True)
    for entry in newest_first:
        if entry.size > MAX_FILE_BYTES:
            material.skipped.append({"path": entry.path, "reason": f"larger than {MAX_FILE_BYTES} bytes"})
            continue
        if budget <= 0:
            material.omitted.append(entry.path)
            continue
        try:
            loaded = await port.load(entry.path)
        except ReMeError as exc:
            material.skipped.append({"path": entry.path, "reason": exc.message})
            continue
        if loaded is None:  # deleted since the listing
            continue
        limit = min(max_chars_per_file, budget)
        text = loaded.content[:limit]
        note = ""
        if len(loaded.content) > limit:
            material.cut.append(entry.path)
            note = f"\n[... cut: {len(loaded.content) - limit} more characters of this file not shown]"
        budget -= len(text)
        material.shown.append(entry.path)
        material.blocks[entry.path] = f'<file path="{entry.path}">\n{text}{note}\n</file>'
    return material

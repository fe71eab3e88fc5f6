"""Daily material packed for a prompt within fixed bounds (docs/spec.md §12.2): what the model reads, and what it did not.

Each file is cut at `max_chars_per_file` and the whole at `max_total_chars`; every cut is said in the
text. A file that no longer fits at all is *left out* and reported, so the caller does not mark it
processed: the next run shows it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from reme.pipelines.port import Notes

MIN_USEFUL_CHARS = 200  # a file that would get fewer characters than this waits for the next run


@dataclass(frozen=True)
class Bounds:
    max_chars_per_file: int = 60_000
    max_total_chars: int = 300_000


@dataclass
class Packed:
    text: str = ""
    shown: list[str] = field(default_factory=list)  # paths the model sees (whole or cut)
    cut: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


async def pack(port: Notes, paths: Sequence[str], bounds: Bounds) -> Packed:
    """The files as `=== <path> ===` sections, bounded; files that vanished are skipped silently."""
    packed = Packed()
    parts: list[str] = []
    budget = bounds.max_total_chars
    for path in paths:
        loaded = await port.load(path)
        if loaded is None:
            continue
        room = min(bounds.max_chars_per_file, budget)
        if room < min(MIN_USEFUL_CHARS, len(loaded.content) or 1):
            packed.left_out.append(path)
            continue
        text = loaded.content
        note = ""
        if len(text) > room:
            note = f"\n[... cut: {len(text) - room} more characters of {path} not shown]\n"
            text = text[:room]
            packed.cut.append(path)
        parts.append(f"=== {path} ===\n{text}{note}")
        packed.shown.append(path)
        budget -= len(text)
    if packed.left_out:
        parts.append(
            f"[{len(packed.left_out)} more changed file(s) did not fit and will be shown in the next run: "
            + ", ".join(packed.left_out)
            + "]"
        )
    packed.text = "\n\n".join(parts)
    return packed

"""Line-packing chunker for plain text files (txt, csv, logs, ...)."""

from __future__ import annotations

from reme.index.chunk_base import Chunk, make_chunk, pack_lines


def chunk_plain_lines(path: str, lines: list[str], start: int, end: int, chunk_chars: int) -> list[Chunk]:
    """Pack the file's whole lines `start`..`end` (1-based, inclusive) into chunks of at most
    ``chunk_chars`` characters."""
    numbered = ((n, lines[n - 1]) for n in range(start, end + 1))
    return [make_chunk(path, s.start, s.end, s.text, []) for s in pack_lines(numbered, chunk_chars)]

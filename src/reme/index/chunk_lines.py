"""Line-packing chunker for plain text files (txt, csv, logs, ...)."""

from __future__ import annotations

from reme.index.chunk_base import Chunk, make_chunk, pack_lines


def chunk_plain_text(path: str, text: str, chunk_chars: int) -> list[Chunk]:
    """Pack whole lines into chunks of at most ``chunk_chars`` characters."""
    numbered = enumerate((line.rstrip("\r") for line in text.split("\n")), 1)
    return [make_chunk(path, s.start, s.end, s.text, []) for s in pack_lines(numbered, chunk_chars)]

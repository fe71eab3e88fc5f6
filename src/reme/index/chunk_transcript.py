"""Chunker for session transcripts (``session/dialog/<id>.jsonl``): one rendered message per line."""

from __future__ import annotations

from reme.index.chunk_base import Chunk, make_chunk, pack_lines
from reme.workspace.transcript import render_line


def chunk_transcript(path: str, text: str, chunk_chars: int) -> list[Chunk]:
    """Pack rendered messages into chunks; line numbers are the transcript's jsonl lines."""
    numbered = ((n, render_line(line)) for n, line in enumerate(text.split("\n"), 1) if line.strip())
    return [make_chunk(path, s.start, s.end, s.text, []) for s in pack_lines(numbered, chunk_chars)]

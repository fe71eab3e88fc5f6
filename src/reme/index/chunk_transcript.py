"""Chunker for session transcripts (``session/dialog/<id>.jsonl``): one rendered message per line."""

from __future__ import annotations

from collections.abc import Iterable

from reme.index.chunk_base import Chunk, make_chunk, pack_lines
from reme.workspace.transcript import read_line


def chunk_transcript(path: str, text: str, chunk_chars: int, first_line: int = 1) -> list[Chunk]:
    """Pack rendered messages into chunks; line numbers are the transcript's jsonl lines (`text`
    starting at line `first_line`, for the end of a transcript re-chunked alone).

    Each chunk records the role its messages share, so search can tell what the user said from
    the assistant's replies (`reme.index.speakers`).
    """
    read = [read_line(line) if line.strip() else None for line in text.split("\n")]
    roles = [line[1] if line else "" for line in read]
    numbered = ((n, line[0]) for n, line in enumerate(read, first_line) if line)
    return [
        make_chunk(
            path,
            s.start,
            s.end,
            s.text,
            [],
            role=shared_role(roles[s.start - first_line : s.end - first_line + 1]),
        )
        for s in pack_lines(numbered, chunk_chars)
    ]


def shared_role(roles: Iterable[str]) -> str:
    """The one role of a chunk's messages (blank lines say nothing); '' when they differ or none is known."""
    known = {role for role in roles if role}
    return known.pop() if len(known) == 1 else ""

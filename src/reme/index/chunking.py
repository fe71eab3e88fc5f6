"""Entry point for chunking: picks the chunker from the file's path."""

from __future__ import annotations

from collections.abc import Iterator

from reme.index.chunk_base import (
    CHUNKER_VERSION,
    DEFAULT_CHUNK_CHARS,
    DEFAULT_CONTEXT_CHARS,
    DEFAULT_TRANSCRIPT_CHUNK_CHARS,
    Chunk,
    with_neighbour_context,
)
from reme.index.chunk_lines import chunk_plain_lines
from reme.index.chunk_markdown import WINDOW_CHARS, markdown_windows, window_bounds
from reme.index.chunk_transcript import chunk_transcript
from reme.workspace.transcript import is_transcript_path

__all__ = [
    "CHUNKER_VERSION",
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_CONTEXT_CHARS",
    "DEFAULT_TRANSCRIPT_CHUNK_CHARS",
    "Chunk",
    "chunk_text",
    "chunk_windows",
]

_MARKDOWN_SUFFIXES = (".md", ".markdown")


def chunk_text(
    path: str,
    text: str,
    *,
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
    transcript_chunk_chars: int = DEFAULT_TRANSCRIPT_CHUNK_CHARS,
    context_chars: int = DEFAULT_CONTEXT_CHARS,
) -> list[Chunk]:
    """Split one file's text into chunks with 1-based inclusive line ranges and stable ids.

    Session transcripts are packed to ``transcript_chunk_chars``, everything else to ``chunk_chars``.
    ``context_chars`` of bordering lines go into each chunk's ``search_text`` (never its text);
    in transcripts the pieces of a long message borrow none.
    """
    windows = chunk_windows(
        path,
        text,
        chunk_chars=chunk_chars,
        transcript_chunk_chars=transcript_chunk_chars,
        context_chars=context_chars,
    )
    return [chunk for window in windows for chunk in window]


def chunk_windows(
    path: str,
    text: str,
    *,
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
    transcript_chunk_chars: int = DEFAULT_TRANSCRIPT_CHUNK_CHARS,
    context_chars: int = DEFAULT_CONTEXT_CHARS,
    window_chars: int = WINDOW_CHARS,
) -> Iterator[list[Chunk]]:
    """`chunk_text` one window of about `window_chars` at a time, so a caller that indexes and drops
    each window holds a bounded amount of chunks (search text is several times the file's text).
    Context is borrowed within a window; a file within one window gives exactly `chunk_text`."""
    if chunk_chars < 1 or transcript_chunk_chars < 1:
        raise ValueError("chunk_chars and transcript_chunk_chars must be positive numbers of characters")
    if context_chars < 0:
        raise ValueError("context_chars must not be negative")
    if not text.strip():
        return
    if is_transcript_path(path):
        yield with_neighbour_context(
            chunk_transcript(path, text, transcript_chunk_chars), context_chars, cut_pieces_borrow=False
        )
        return
    if path.lower().endswith(_MARKDOWN_SUFFIXES):
        windows: Iterator[list[Chunk]] = markdown_windows(path, text, chunk_chars, window_chars)
    else:
        lines = [line.rstrip("\r") for line in text.split("\n")]
        windows = (
            chunk_plain_lines(path, lines, start, end, chunk_chars)
            for start, end in window_bounds(lines, 1, window_chars)
        )
    for chunks in windows:
        yield with_neighbour_context(chunks, context_chars)

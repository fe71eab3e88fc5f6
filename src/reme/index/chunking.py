"""Entry point for chunking: picks the chunker from the file's path."""

from __future__ import annotations

from reme.index.chunk_base import (
    CHUNKER_VERSION,
    DEFAULT_CHUNK_CHARS,
    DEFAULT_CONTEXT_CHARS,
    Chunk,
    with_neighbour_context,
)
from reme.index.chunk_lines import chunk_plain_text
from reme.index.chunk_markdown import chunk_markdown
from reme.index.chunk_transcript import chunk_transcript
from reme.workspace.transcript import is_transcript_path

__all__ = [
    "CHUNKER_VERSION",
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_CONTEXT_CHARS",
    "Chunk",
    "chunk_text",
]

_MARKDOWN_SUFFIXES = (".md", ".markdown")


def chunk_text(
    path: str,
    text: str,
    *,
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
    context_chars: int = DEFAULT_CONTEXT_CHARS,
) -> list[Chunk]:
    """Split one file's text into chunks with 1-based inclusive line ranges and stable ids.

    ``context_chars`` of bordering lines go into each chunk's ``search_text`` (never its text);
    in transcripts the pieces of a long message borrow none.
    """
    if chunk_chars < 1:
        raise ValueError("chunk_chars must be a positive number of characters")
    if context_chars < 0:
        raise ValueError("context_chars must not be negative")
    if not text.strip():
        return []
    if is_transcript_path(path):
        chunks = chunk_transcript(path, text, chunk_chars)
        return with_neighbour_context(chunks, context_chars, cut_pieces_borrow=False)
    if path.lower().endswith(_MARKDOWN_SUFFIXES):
        chunks = chunk_markdown(path, text, chunk_chars)
    else:
        chunks = chunk_plain_text(path, text, chunk_chars)
    return with_neighbour_context(chunks, context_chars)

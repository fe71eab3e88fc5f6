"""Entry point for chunking: picks the chunker from the file's path."""

from __future__ import annotations

from pathlib import PurePosixPath

from reme.index.chunk_base import DEFAULT_CHUNK_CHARS, Chunk
from reme.index.chunk_lines import chunk_plain_text
from reme.index.chunk_markdown import chunk_markdown
from reme.index.chunk_transcript import chunk_transcript

__all__ = ["DEFAULT_CHUNK_CHARS", "Chunk", "chunk_text", "is_transcript_path"]

_MARKDOWN_SUFFIXES = (".md", ".markdown")


def is_transcript_path(path: str) -> bool:
    """Session transcripts live as ``.../dialog/<id>.jsonl`` (``session/dialog/`` by default)."""
    pure = PurePosixPath(path)
    return pure.suffix == ".jsonl" and pure.parent.name == "dialog"


def chunk_text(path: str, text: str, *, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> list[Chunk]:
    """Split one file's text into chunks with 1-based inclusive line ranges and stable ids."""
    if chunk_chars < 1:
        raise ValueError("chunk_chars must be a positive number of characters")
    if not text.strip():
        return []
    if path.lower().endswith(_MARKDOWN_SUFFIXES):
        return chunk_markdown(path, text, chunk_chars)
    if is_transcript_path(path):
        return chunk_transcript(path, text, chunk_chars)
    return chunk_plain_text(path, text, chunk_chars)

"""Chunker for session transcripts (``session/dialog/<id>.jsonl``): one rendered message per line."""

from __future__ import annotations

import json
from typing import Any

from reme.index.chunk_base import Chunk, make_chunk, pack_lines


def render_message(raw_line: str) -> str:
    """Render one transcript line as ``[<speaker> @ <created_at>] <text>`` on a single line.

    ``content`` may be a string or ReMe 0.4's list of ``{"type": "text", "text": ...}`` blocks.
    A line that is not a JSON message is kept as it is, so nothing written is lost from search.
    """
    try:
        message = json.loads(raw_line)
    except ValueError:
        return raw_line.strip()
    if not isinstance(message, dict):
        return raw_line.strip()
    speaker = message.get("name") or message.get("role") or "unknown"
    text = " ".join(content_text(message.get("content")).split())
    created_at = message.get("created_at")
    return f"[{speaker} @ {created_at}] {text}" if created_at else f"[{speaker}] {text}"


def content_text(content: Any) -> str:
    """Plain text of a message's content, whether a string or a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return " ".join(parts)
    return "" if content is None else str(content)


def chunk_transcript(path: str, text: str, chunk_chars: int) -> list[Chunk]:
    """Pack rendered messages into chunks; line numbers are the transcript's jsonl lines."""
    numbered = ((n, render_message(line)) for n, line in enumerate(text.split("\n"), 1) if line.strip())
    return [make_chunk(path, s.start, s.end, s.text, []) for s in pack_lines(numbered, chunk_chars)]

"""Workspace files as exact text (no newline translation), the caps on them, lines counted as editors do."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_MAX_TEXT_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_IMAGE_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Caps that keep one request bounded; configurable per job step."""

    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    page_lines: int = 1000
    page_chars: int = 10_000  # agents see about 12k characters of a tool answer
    max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES


def read_text(path: Path, shown: str, max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> str:
    """UTF-8 text of a file, byte for byte; refuses folders, binary data and files over `max_bytes`."""
    if path.is_dir():
        raise IsADirectoryError(f"{shown!r} is a folder; use `list` to see what it holds")
    if not path.is_file():
        raise FileNotFoundError(f"no file {shown!r} in the workspace")
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(f"{shown!r} is {size} bytes, over the {max_bytes}-byte cap for text files")
    data = path.read_bytes()
    return decode_text(data, shown)


def decode_text(data: bytes, shown: str) -> str:
    if b"\x00" in data:
        raise ValueError(f"{shown!r} holds binary data, not text (use `read_image` for images)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{shown!r} is not UTF-8 text (invalid byte at offset {exc.start})") from None


def check_text(content: object, what: str = "content", max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> str:
    """Refuse non-strings, NUL characters and oversize text before anything is written."""
    if not isinstance(content, str):
        raise ValueError(f"{what} must be a string")
    if "\x00" in content:
        raise ValueError(f"{what} contains NUL characters; binary data cannot be written as text")
    size = len(content.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise ValueError(f"{what} is {size} bytes, over the {max_bytes}-byte cap")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} contains characters that are not valid Unicode (lone surrogates)") from None
    return content


def split_lines(text: str) -> list[str]:
    """Lines split on "\n" only, endings kept; a final newline starts no extra line, "" has none."""
    lines, start = [], 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        lines.append(text[start:end])
        start = end
    return lines


def sha256_of(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def fingerprint(target: Path, content: str) -> dict[str, Any]:
    """What `load` reports and `save` checks: the file's mtime and the sha256 of its text."""
    return {"mtime": target.stat().st_mtime, "sha256": sha256_of(content)}

"""Workspace files as exact text (no newline translation), the caps on them, lines counted as editors do."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reme.workspace import confined_read

DEFAULT_MAX_TEXT_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_IMAGE_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Caps that keep one request bounded; configurable per job step."""

    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    page_lines: int = 1000
    page_chars: int = 10_000  # agents see about 12k characters of a tool answer
    max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES


def read_text(root: Path, relative: str, max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> str:
    """UTF-8 text of the workspace file `relative`, byte for byte, read without leaving `root` (see
    `confined_read`); refuses folders, binary data and files over `max_bytes`."""
    return read_text_stat(root, relative, max_bytes)[0]


def read_text_stat(
    root: Path, relative: str, max_bytes: int = DEFAULT_MAX_TEXT_BYTES
) -> tuple[str, os.stat_result]:
    """`read_text` with the `stat` of the very file read (its mtime for `load`)."""
    try:
        data, info = confined_read.read_bytes(root, relative, max_bytes)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"no file {relative!r} in the workspace") from None
    return decode_text(data, relative), info


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


def check_replaced_size(text: str, old: str, new: str, count: int, max_bytes: int) -> None:
    """Refuse replacing `count` occurrences of `old` in `text` by `new` when the result would be over
    `max_bytes`, before it is built (a one-character `old` in a large file can ask for gigabytes)."""

    def size(part: str) -> int:
        return len(part.encode("utf-8", errors="surrogatepass"))

    result = size(text) + count * (size(new) - size(old))
    if result > max_bytes:
        raise ValueError(
            f"the resulting file would be {result} bytes ({count} replacement(s)), over the {max_bytes}-byte cap"
        )


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

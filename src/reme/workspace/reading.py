"""Reading file jobs (docs/spec.md §7): read, read_image, load, stat, list, frontmatter_read.

Every path is checked by the workspace before any I/O; the results are the metadata of docs/spec.md §6.2.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import stat as stat_module
from typing import Any

from reme.workspace import confined_read, frontmatter
from reme.workspace.layout import Workspace
from reme.workspace.links import LinkSource, count_edges
from reme.workspace.paths import UnsafePathError, is_markdown
from reme.workspace.textio import Limits, read_text, read_text_stat, sha256_of, split_lines
from reme.workspace.wikilinks import parse_links

IMAGE_SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
    b"BM": "image/bmp",
}


def read(
    ws: Workspace,
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    limits: Limits = Limits(),
) -> dict[str, Any]:
    """A line range of a text file, bounded to one page; `text` is the answer, the rest metadata."""
    relative = ws.relative_for(path, markdown=True)
    if start_line is not None and start_line < 1:
        raise ValueError("start_line must be 1 or more")
    if end_line is not None and end_line < 1:
        raise ValueError("end_line must be 1 or more")
    if start_line is not None and end_line is not None and start_line > end_line:
        raise ValueError(f"start_line ({start_line}) must not be after end_line ({end_line})")
    lines = split_lines(read_text(ws.root, relative, limits.max_text_bytes))
    total = len(lines)
    first = start_line or 1
    if first > max(total, 1):
        raise ValueError(f"start_line {first} is past the end of {relative!r}, which has {total} line(s)")
    last_wanted = min(end_line or total, total)
    taken, chars = 0, 0
    while first + taken <= last_wanted and taken < limits.page_lines:
        size = len(lines[first + taken - 1])
        if taken and chars + size > limits.page_chars:
            break
        chars += size
        taken += 1
    last = first + taken - 1
    return {
        "text": "".join(lines[first - 1 : last]),
        "path": relative,
        "start_line": first,
        "end_line": last,
        "total_lines": total,
        "next_start_line": last + 1 if last < last_wanted else None,
    }


def read_image(ws: Workspace, path: str, limits: Limits = Limits()) -> dict[str, Any]:
    """An image as base64 with its mime type; refuses non-images and files over the cap."""
    relative = ws.relative_for(path)
    try:
        data, info = confined_read.read_bytes(ws.root, relative, limits.max_image_bytes, what="images")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise FileNotFoundError(f"no file {relative!r} in the workspace") from None
    size = info.st_size
    mime = _image_type(relative, data)
    if mime is None:
        raise ValueError(
            f"{relative!r} is not an image (PNG, JPEG, GIF, WebP, BMP or SVG); use `read` for text"
        )
    return {"path": relative, "mime_type": mime, "size": size, "data": base64.b64encode(data).decode("ascii")}


def _image_type(relative: str, data: bytes) -> str | None:
    for signature, mime in IMAGE_SIGNATURES.items():
        if data.startswith(signature):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    guessed = mimetypes.guess_type(relative)[0]
    if guessed == "image/svg+xml" and b"<svg" in data[:4096]:
        return guessed
    return None


def load(ws: Workspace, path: str, limits: Limits = Limits()) -> dict[str, Any]:
    """Whole-file text with the `mtime` and `sha256` a later `save` can be checked against."""
    relative = ws.relative_for(path, markdown=True)
    content, info = read_text_stat(ws.root, relative, limits.max_text_bytes)
    mtime = info.st_mtime  # of the very file read, taken before reading: a later change shows
    return {"path": relative, "content": content, "mtime": mtime, "sha256": sha256_of(content)}


def stat(ws: Workspace, links: LinkSource, path: str, limits: Limits = Limits()) -> dict[str, Any]:
    """Type, size, mtime, front matter and link counts of a file or folder."""
    relative = ws.relative_for(path, markdown=True, allow_root=True)
    try:
        info = confined_read.stat(ws.root, relative)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"no file or folder {relative!r} in the workspace") from None
    is_dir = stat_module.S_ISDIR(info.st_mode)
    result: dict[str, Any] = {
        "path": relative,
        "type": "dir" if is_dir else "file",
        "size": info.st_size,
        "mtime": info.st_mtime,
        "front_matter": {},
        "outlink_count": 0,
        "inlink_count": count_edges(ws, links.inbound(relative)) if relative else 0,
    }
    if stat_module.S_ISREG(info.st_mode) and is_markdown(relative) and info.st_size <= limits.max_text_bytes:
        try:
            text = read_text(ws.root, relative, limits.max_text_bytes)
        except ValueError as exc:
            if isinstance(exc, UnsafePathError):
                raise
            result["error"] = str(exc)
            return result
        document = frontmatter.parse(text)
        result["front_matter"] = document.metadata
        result["outlink_count"] = len({link.key for link in parse_links(text)})
        if document.error:
            result["front_matter_error"] = document.error
    return result


def list_dir(
    ws: Workspace,
    path: str = "",
    recursive: bool = False,
    extensions: list[str] | None = None,
    sort_by: str = "name",
    limit: int | None = None,
) -> dict[str, Any]:
    """Entries `{path, type, size, mtime}` of a folder; hidden names and the root's `metadata/` are left out."""
    if sort_by not in ("name", "mtime"):
        raise ValueError(f"sort_by must be 'name' or 'mtime', not {sort_by!r}")
    if limit is not None and limit < 1:
        raise ValueError("limit must be 1 or more")
    relative = ws.relative_for(path, allow_root=True)
    try:
        folder_info = confined_read.stat(ws.root, relative)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"no folder {relative!r} in the workspace") from None
    if not stat_module.S_ISDIR(folder_info.st_mode):
        raise NotADirectoryError(f"{relative!r} is a file; use `stat` or `read`")
    wanted = _normalise_extensions(extensions)
    entries: list[dict[str, Any]] = []
    for entry_relative, info in _entries(ws, relative, recursive):
        kind = "dir" if stat_module.S_ISDIR(info.st_mode) else "file"
        if wanted is not None and (kind == "dir" or not entry_relative.lower().endswith(wanted)):
            continue
        entries.append(
            {
                "path": entry_relative,
                "type": kind,
                "size": info.st_size if kind == "file" else 0,
                "mtime": info.st_mtime,
            }
        )
    if sort_by == "mtime":
        entries.sort(key=lambda entry: (-entry["mtime"], entry["path"]))
    else:
        entries.sort(key=lambda entry: entry["path"])
    total = len(entries)
    if limit is not None:
        entries = entries[:limit]
    return {"path": relative, "entries": entries, "total": total, "truncated": len(entries) < total}


def _normalise_extensions(extensions: list[str] | None) -> tuple[str, ...] | None:
    if extensions is None:
        return None
    if not all(isinstance(ext, str) and ext.strip(".") for ext in extensions):
        raise ValueError("extensions must be non-empty strings such as 'md' or '.md'")
    return tuple("." + ext.lower().lstrip(".") for ext in extensions)


def _entries(ws: Workspace, folder: str, recursive: bool) -> list[tuple[str, os.stat_result]]:
    """`(path, stat)` below `folder`, read through confined descriptors; symlinked folders are listed
    but not descended into, links leading outside are left out."""
    found: list[tuple[str, os.stat_result]] = []
    try:
        children = confined_read.entries(ws.root, folder)
    except (OSError, UnsafePathError):
        return found  # removed, or swapped for a link, since it was listed
    for name, info, link in children:
        if name.startswith("."):
            continue
        if not folder and ws.is_metadata(name):
            continue
        child = f"{folder}/{name}" if folder else name
        found.append((child, info))
        if recursive and stat_module.S_ISDIR(info.st_mode) and not link:
            found.extend(_entries(ws, child, True))
    return found


def frontmatter_read(ws: Workspace, path: str, limits: Limits = Limits()) -> dict[str, Any]:
    """Front matter of a Markdown file; a broken block is reported in `error`, never raised."""
    relative = markdown_path(ws, path, write=False)
    document = frontmatter.parse(read_text(ws.root, relative, limits.max_text_bytes))
    result: dict[str, Any] = {"path": relative, "front_matter": document.metadata}
    if document.error:
        result["error"] = document.error
    return result


def markdown_path(ws: Workspace, path: str, *, write: bool) -> str:
    """A Markdown path (after the `.md` rule), or a ValueError: front matter lives only there."""
    relative = ws.relative_for(path, write=write, markdown=True)
    if not is_markdown(relative):
        raise ValueError(f"{relative!r} is not a Markdown file; front matter lives in .md files")
    return relative

"""File operations behind the file jobs of SPEC 7; each returns the metadata of SPEC 6.2.

Every path is checked by the workspace before any I/O; every write holds the path's lock, goes
through `atomic_write` and is reported to the `LinkSource` so derived state follows at once. A refused
request raises a ValueError / FileNotFoundError / FileExistsError with a message saying what to fix,
and leaves every file as it was.
"""

from __future__ import annotations

import base64
import mimetypes
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reme.workspace import frontmatter
from reme.workspace.atomic import atomic_write, fsync_dir
from reme.workspace.layout import Workspace
from reme.workspace.links import LinkSource, walk_files
from reme.workspace.paths import has_extension, is_markdown
from reme.workspace.textio import DEFAULT_MAX_TEXT_BYTES, check_text, read_text, sha256_of, split_lines
from reme.workspace.wikilinks import parse_links, retarget_links, tree_mapping

DEFAULT_IMAGE_BYTES = 5 * 1024 * 1024
IMAGE_SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
    b"BM": "image/bmp",
}


@dataclass(frozen=True)
class Limits:
    """Caps that keep one request bounded; configurable per job step."""

    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    page_lines: int = 2000
    page_chars: int = 60_000
    max_image_bytes: int = DEFAULT_IMAGE_BYTES


class ConflictError(ValueError):
    """`save` found the file changed since it was loaded."""

    def __init__(self, message: str, current: dict[str, Any]) -> None:
        super().__init__(message)
        self.current = current


# reading -------------------------------------------------------------------------------------------


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
    lines = split_lines(read_text(ws.absolute(relative), relative, limits.max_text_bytes))
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
    target = ws.absolute(relative)
    if not target.is_file():
        raise FileNotFoundError(f"no file {relative!r} in the workspace")
    size = target.stat().st_size
    if size > limits.max_image_bytes:
        raise ValueError(
            f"{relative!r} is {size} bytes; images over {limits.max_image_bytes} bytes are refused"
        )
    data = target.read_bytes()
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
    target = ws.absolute(relative)
    content = read_text(target, relative, limits.max_text_bytes)
    return {"path": relative, "content": content, **_fingerprint(target, content)}


def stat(ws: Workspace, links: LinkSource, path: str, limits: Limits = Limits()) -> dict[str, Any]:
    """Type, size, mtime, front matter and link counts of a file or folder."""
    relative = ws.relative_for(path, markdown=True, allow_root=True)
    target = ws.absolute(relative)
    if not target.exists():
        raise FileNotFoundError(f"no file or folder {relative!r} in the workspace")
    info = target.stat()
    result: dict[str, Any] = {
        "path": relative,
        "type": "dir" if target.is_dir() else "file",
        "size": info.st_size,
        "mtime": info.st_mtime,
        "front_matter": {},
        "outlink_count": 0,
        "inlink_count": len(links.inbound(relative)) if relative else 0,
    }
    if target.is_file() and is_markdown(relative) and info.st_size <= limits.max_text_bytes:
        try:
            text = read_text(target, relative, limits.max_text_bytes)
        except ValueError as exc:
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
    folder = ws.absolute(relative)
    if not folder.exists():
        raise FileNotFoundError(f"no folder {relative!r} in the workspace")
    if not folder.is_dir():
        raise NotADirectoryError(f"{relative!r} is a file; use `stat` or `read`")
    wanted = _normalise_extensions(extensions)
    entries = []
    for entry_path in _entries(ws, folder, recursive):
        kind = "dir" if entry_path.is_dir() else "file"
        entry_relative = ws.relative(entry_path)
        if wanted is not None and (kind == "dir" or not entry_relative.lower().endswith(wanted)):
            continue
        info = entry_path.stat()
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


def _entries(ws: Workspace, folder: Path, recursive: bool) -> list[Path]:
    found = []
    for child in sorted(folder.iterdir()):
        if child.name.startswith("."):
            continue
        if folder == ws.root and ws.is_metadata(child.name):
            continue
        if child.is_symlink() and not child.resolve().is_relative_to(ws.root):
            continue
        found.append(child)
        if recursive and child.is_dir() and not child.is_symlink():
            found.extend(_entries(ws, child, True))
    return found


def frontmatter_read(ws: Workspace, path: str, limits: Limits = Limits()) -> dict[str, Any]:
    """Front matter of a Markdown file; a broken block is reported in `error`, never raised."""
    relative = _markdown_path(ws, path, write=False)
    document = frontmatter.parse(read_text(ws.absolute(relative), relative, limits.max_text_bytes))
    result: dict[str, Any] = {"path": relative, "front_matter": document.metadata}
    if document.error:
        result["error"] = document.error
    return result


# writing -------------------------------------------------------------------------------------------


def write(
    ws: Workspace,
    links: LinkSource,
    path: str,
    content: str,
    name: str | None = None,
    description: str | None = None,
    metadata: dict[str, Any] | None = None,
    limits: Limits = Limits(),
) -> dict[str, Any]:
    """Create or replace a file; Markdown front matter is merged with the existing file's."""
    relative = ws.relative_for(path, write=True, markdown=True)
    target = ws.absolute(relative, write=True)
    check_text(content, "content", limits.max_text_bytes)
    changes = frontmatter.check_metadata(metadata or {})
    changes.update(
        {key: value for key, value in (("name", name), ("description", description)) if value is not None}
    )
    changes = frontmatter.check_metadata(changes)
    markdown = is_markdown(relative)
    if changes and not markdown:
        raise ValueError(
            f"{relative!r} is not Markdown; name, description and metadata only apply to .md files"
        )
    if target.is_dir():
        raise IsADirectoryError(f"{relative!r} is a folder; choose a file name")
    with ws.lock(relative):
        existed = target.is_file()
        text = content
        if markdown:
            old = read_text(target, relative, limits.max_text_bytes) if existed else None
            text = _merged_markdown(relative, old, content, changes)
        check_text(text, "the resulting file", limits.max_text_bytes)
        atomic_write(target, text)
    links.sync_paths([relative])
    return {"path": relative, "created": not existed}


def _merged_markdown(relative: str, old: str | None, content: str, changes: dict[str, Any]) -> str:
    incoming = frontmatter.parse(content)
    if incoming.error:
        raise ValueError(f"content starts with front matter that cannot be read ({incoming.error}); fix it")
    if old is None:
        return frontmatter.update(content, changes)
    existing = frontmatter.parse(old)
    if existing.error:
        raise ValueError(
            f"{relative!r} has broken front matter ({existing.error}); rewrite it whole with `save`"
        )
    base = existing.head + incoming.body if existing.has_front_matter else content
    merged = {**incoming.metadata, **changes} if existing.has_front_matter else changes
    return frontmatter.update(base, merged)


def edit(
    ws: Workspace, links: LinkSource, path: str, old: str, new: str, limits: Limits = Limits()
) -> dict[str, Any]:
    """Replace every occurrence of `old` by `new` in the body (front matter untouched)."""
    relative = ws.relative_for(path, write=True, markdown=True)
    target = ws.absolute(relative, write=True)
    if not isinstance(old, str) or old == "":
        raise ValueError("old must be a non-empty string to search for")
    check_text(new, "new", limits.max_text_bytes)
    with ws.lock(relative):
        text = read_text(target, relative, limits.max_text_bytes)
        head, body = _head_and_body(relative, text)
        count = body.count(old)
        if count == 0:
            raise ValueError(f"{old!r} does not occur in the body of {relative!r}; nothing was changed")
        result = head + body.replace(old, new)
        check_text(result, "the resulting file", limits.max_text_bytes)
        atomic_write(target, result)
    links.sync_paths([relative])
    return {"path": relative, "count": count}


def _head_and_body(relative: str, text: str) -> tuple[str, str]:
    if not is_markdown(relative):
        return "", text
    document = frontmatter.parse(text)
    return document.head, document.body


def frontmatter_update(
    ws: Workspace, links: LinkSource, path: str, metadata: dict[str, Any], limits: Limits = Limits()
) -> dict[str, Any]:
    """Merge keys into the front matter; the body stays byte-identical."""
    relative = _markdown_path(ws, path, write=True)
    target = ws.absolute(relative, write=True)
    changes = frontmatter.check_metadata(metadata)
    with ws.lock(relative):
        text = read_text(target, relative, limits.max_text_bytes)
        updated = frontmatter.update(text, changes)
        if updated != text:
            atomic_write(target, updated)
    if updated != text:
        links.sync_paths([relative])
    return {"path": relative, "front_matter": frontmatter.parse(updated).metadata}


def frontmatter_delete(
    ws: Workspace, links: LinkSource, path: str, keys: list[str], limits: Limits = Limits()
) -> dict[str, Any]:
    """Remove keys from the front matter; reports which were deleted and which were not there."""
    relative = _markdown_path(ws, path, write=True)
    target = ws.absolute(relative, write=True)
    if not isinstance(keys, list) or not keys:
        raise ValueError("keys must be a non-empty list of front-matter keys")
    with ws.lock(relative):
        text = read_text(target, relative, limits.max_text_bytes)
        updated, deleted, missing = frontmatter.delete(text, keys)
        if deleted:
            atomic_write(target, updated)
    if deleted:
        links.sync_paths([relative])
    return {"path": relative, "deleted": deleted, "missing": missing}


def _markdown_path(ws: Workspace, path: str, *, write: bool) -> str:
    relative = ws.relative_for(path, write=write, markdown=True)
    if not is_markdown(relative):
        raise ValueError(f"{relative!r} is not a Markdown file; front matter lives in .md files")
    return relative


def save(
    ws: Workspace,
    links: LinkSource,
    path: str,
    content: str,
    expected_mtime: float | None = None,
    expected_sha256: str | None = None,
    limits: Limits = Limits(),
) -> dict[str, Any]:
    """Write the whole file, unless it changed since the `expected_mtime`/`expected_sha256` it was loaded at."""
    relative = ws.relative_for(path, write=True, markdown=True)
    target = ws.absolute(relative, write=True)
    check_text(content, "content", limits.max_text_bytes)
    if target.is_dir():
        raise IsADirectoryError(f"{relative!r} is a folder; choose a file name")
    with ws.lock(relative):
        if expected_mtime is not None or expected_sha256 is not None:
            _check_unchanged(target, relative, expected_mtime, expected_sha256, limits)
        atomic_write(target, content)
        result = {"path": relative, **_fingerprint(target, content)}
    links.sync_paths([relative])
    return result


def _check_unchanged(
    target: Path, relative: str, expected_mtime: float | None, expected_sha256: str | None, limits: Limits
) -> None:
    if not target.is_file():
        raise ConflictError(f"conflict: {relative!r} no longer exists; load it again", {"path": relative})
    current = _fingerprint(target, read_text(target, relative, limits.max_text_bytes))
    stale = []
    if expected_mtime is not None and abs(current["mtime"] - expected_mtime) > 1e-6:
        stale.append("mtime")
    if expected_sha256 is not None and current["sha256"] != expected_sha256.lower():
        stale.append("sha256")
    if stale:
        raise ConflictError(
            f"conflict: {relative!r} changed since it was loaded ({' and '.join(stale)} differ); "
            "load it again and reapply your change",
            {"path": relative, **current},
        )


def _fingerprint(target: Path, content: str) -> dict[str, Any]:
    return {"mtime": target.stat().st_mtime, "sha256": sha256_of(content)}


# delete and move -----------------------------------------------------------------------------------


def delete(ws: Workspace, links: LinkSource, path: str) -> dict[str, Any]:
    """Delete a file or a folder; report the links from other files that still point at it."""
    relative = ws.relative_for(path, write=True, markdown=True)
    target = ws.absolute(relative, write=True)
    if relative in ws.dirs.values():
        raise PermissionError(f"{relative!r} is a workspace layout folder; delete what is inside it instead")
    if not (target.exists() or target.is_symlink()):
        raise FileNotFoundError(f"no file or folder {relative!r} in the workspace")
    folder = target.is_dir() and not target.is_symlink()
    removed = list(walk_files(ws, relative)) if folder else [relative]
    inbound = [entry for entry in links.inbound(relative) if entry["source_path"] not in set(removed)]
    with ws.lock(relative, *removed):
        if folder:
            shutil.rmtree(target)
        else:
            target.unlink()
        fsync_dir(target.parent)
    links.sync_paths(removed)
    return {"path": relative, "inbound": inbound, "removed": removed}


def move(
    ws: Workspace, links: LinkSource, src: str, dst: str, retarget: bool = True, overwrite: bool = False
) -> dict[str, Any]:
    """Move or rename a file or folder and, unless told not to, point inbound links at the new path."""
    source = ws.relative_for(src, write=True, markdown=True)
    source_path = ws.absolute(source, write=True)
    if not (source_path.exists() or source_path.is_symlink()):
        raise FileNotFoundError(f"no file or folder {source!r} in the workspace")
    if source in ws.dirs.values():
        raise PermissionError(f"{source!r} is a workspace layout folder and cannot be moved")
    folder = source_path.is_dir() and not source_path.is_symlink()
    destination = ws.check(dst, write=True)
    if is_markdown(source) and not folder and not has_extension(destination):
        destination += ".md"
    destination_path = ws.absolute(destination, write=True)
    if destination == source:
        raise ValueError(f"{source!r} is already at {destination!r}")
    if folder and destination.startswith(source + "/"):
        raise ValueError(f"cannot move the folder {source!r} into itself ({destination!r})")
    moved = list(walk_files(ws, source)) if folder else [source]
    mapping = tree_mapping(source, destination)
    with ws.lock(source, destination, *moved, *(mapping(path) or path for path in moved)):
        if destination_path.exists() or destination_path.is_symlink():
            if not overwrite:
                raise FileExistsError(f"{destination!r} already exists; pass overwrite=true to replace it")
            if folder or destination_path.is_dir():
                raise IsADirectoryError(
                    f"{destination!r} is a folder or {source!r} is one; only files are overwritten"
                )
        inbound = links.inbound(source) if retarget else []
        destination_path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source_path, destination_path)
        fsync_dir(source_path.parent)
        fsync_dir(destination_path.parent)
    changed, count = _retarget_sources(ws, inbound, mapping) if retarget else ([], 0)
    links.sync_paths([*moved, *(mapping(path) or path for path in moved), *changed])
    return {"src": source, "dst": destination, "retargeted_files": changed, "retargeted_links": count}


def _retarget_sources(ws: Workspace, inbound: list[dict[str, str]], mapping: Any) -> tuple[list[str], int]:
    """Rewrite link targets in every file that pointed at the moved path (now at its new place)."""
    changed: list[str] = []
    total = 0
    for source in sorted({entry["source_path"] for entry in inbound}):
        current = mapping(source) or source
        target = ws.root / current
        with ws.lock(current):
            try:
                text = read_text(target, current)
            except (FileNotFoundError, ValueError):
                continue
            rewritten, count = retarget_links(text, mapping)
            if count:
                atomic_write(target, rewritten)
                changed.append(current)
                total += count
    return changed, total

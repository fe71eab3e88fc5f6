"""Writing file jobs (docs/spec.md §7): write, edit, frontmatter_update, frontmatter_delete, save.

Each write holds the path's lock, goes through `atomic_write` and is reported to the `LinkSource` so
derived state follows at once. A refused request raises with a message saying what to fix and leaves
the file as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reme.workspace import confined_read, frontmatter
from reme.workspace.atomic import atomic_write
from reme.workspace.layout import Workspace
from reme.workspace.links import LinkSource
from reme.workspace.paths import is_markdown
from reme.workspace.reading import markdown_path
from reme.workspace.replaced import keep_previous
from reme.workspace.textio import (
    Limits,
    check_replaced_size,
    check_text,
    decode_text,
    fingerprint,
    read_text,
)


class ConflictError(ValueError):
    """`save` found the file changed since it was loaded."""

    def __init__(self, message: str, current: dict[str, Any]) -> None:
        super().__init__(message)
        self.current = current


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
    """Create or replace a file; Markdown front matter is merged with the existing file's.

    Replacing different text keeps the old bytes recoverable (`replaced.keep_previous`) and says so
    (`replaced`, `size`, `previous_size`, `previous_version`); the same text is not rewritten
    (`unchanged`, `size`).
    """
    relative = ws.relative_for(path, write=True, markdown=True)
    target = ws.absolute(relative, write=True)
    check_text(content, "content", limits.max_text_bytes)
    given = {key: value for key, value in (("name", name), ("description", description)) if value is not None}
    changes = frontmatter.check_metadata({**frontmatter.check_metadata(metadata or {}), **given})
    markdown = is_markdown(relative)
    if changes and not markdown:
        raise ValueError(
            f"{relative!r} is not Markdown; name, description and metadata only apply to .md files"
        )
    if target.is_dir():
        raise IsADirectoryError(f"{relative!r} is a folder; choose a file name")
    with ws.lock(relative):
        previous = _current_bytes(ws, relative, limits.max_text_bytes)
        text = content
        if markdown:
            old = decode_text(previous, relative) if previous is not None else None
            text = _merged_markdown(relative, old, content, changes)
        check_text(text, "the resulting file", limits.max_text_bytes)
        data = text.encode("utf-8")
        if previous == data:
            return {"path": relative, "created": False, "unchanged": True, "size": len(data)}
        kept = keep_previous(ws, relative, previous) if previous is not None else None
        atomic_write(target, data, ws.root)
    links.sync_paths([relative])
    if previous is None:
        return {"path": relative, "created": True}
    replaced = {"replaced": True, "size": len(data), "previous_size": len(previous), "previous_version": kept}
    return {"path": relative, "created": False, **replaced}


def _current_bytes(ws: Workspace, relative: str, max_bytes: int) -> bytes | None:
    """What `relative` holds, read without leaving the workspace (`confined_read`: a link swapped in
    since the path was checked is refused, never read into the kept version); None when no file is there."""
    try:
        return confined_read.read_bytes(ws.root, relative, max_bytes)[0]
    except FileNotFoundError:
        return None


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
        text = read_text(ws.root, relative, limits.max_text_bytes)
        head, body = _head_and_body(relative, text)
        count = body.count(old)
        if count == 0:
            raise ValueError(f"{old!r} does not occur in the body of {relative!r}; nothing was changed")
        check_replaced_size(text, old, new, count, limits.max_text_bytes)
        result = head + body.replace(old, new)
        check_text(result, "the resulting file", limits.max_text_bytes)
        atomic_write(target, result, ws.root)
    links.sync_paths([relative])
    return {"path": relative, "count": count}


def _same_mtime(current: float, expected: float) -> bool:
    """Whether `expected` is the file's mtime (NaN, or an integer too large for a float: never)."""
    try:
        return abs(current - float(expected)) <= 1e-6
    except OverflowError:
        return False


def _head_and_body(relative: str, text: str) -> tuple[str, str]:
    if not is_markdown(relative):
        return "", text
    document = frontmatter.parse(text)
    return document.head, document.body


def frontmatter_update(
    ws: Workspace, links: LinkSource, path: str, metadata: dict[str, Any], limits: Limits = Limits()
) -> dict[str, Any]:
    """Merge keys into the front matter; the body stays byte-identical."""
    relative = markdown_path(ws, path, write=True)
    target = ws.absolute(relative, write=True)
    changes = frontmatter.check_metadata(metadata)
    with ws.lock(relative):
        text = read_text(ws.root, relative, limits.max_text_bytes)
        updated = frontmatter.update(text, changes)
        if updated != text:
            atomic_write(target, updated, ws.root)
    if updated != text:
        links.sync_paths([relative])
    return {"path": relative, "front_matter": frontmatter.parse(updated).metadata}


def frontmatter_delete(
    ws: Workspace, links: LinkSource, path: str, keys: list[str], limits: Limits = Limits()
) -> dict[str, Any]:
    """Remove keys from the front matter; reports which were deleted and which were not there."""
    relative = markdown_path(ws, path, write=True)
    target = ws.absolute(relative, write=True)
    if not isinstance(keys, list) or not keys:
        raise ValueError("keys must be a non-empty list of front-matter keys")
    with ws.lock(relative):
        text = read_text(ws.root, relative, limits.max_text_bytes)
        updated, deleted, missing = frontmatter.delete(text, keys)
        if deleted:
            atomic_write(target, updated, ws.root)
    if deleted:
        links.sync_paths([relative])
    return {"path": relative, "deleted": deleted, "missing": missing}


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
            _check_unchanged(ws, target, relative, expected_mtime, expected_sha256, limits)
        atomic_write(target, content, ws.root)
        result = {"path": relative, **fingerprint(target, content)}
    links.sync_paths([relative])
    return result


def _check_unchanged(
    ws: Workspace,
    target: Path,
    relative: str,
    expected_mtime: float | None,
    expected_sha256: str | None,
    limits: Limits,
) -> None:
    if not target.is_file():
        raise ConflictError(f"conflict: {relative!r} no longer exists; load it again", {"path": relative})
    current = fingerprint(target, read_text(ws.root, relative, limits.max_text_bytes))
    stale = []
    if expected_mtime is not None and not _same_mtime(current["mtime"], expected_mtime):
        stale.append("mtime")
    if expected_sha256 is not None and current["sha256"] != expected_sha256.lower():
        stale.append("sha256")
    if stale:
        raise ConflictError(
            f"conflict: {relative!r} changed since it was loaded ({' and '.join(stale)} differ); "
            "load it again and reapply your change",
            {"path": relative, **current},
        )

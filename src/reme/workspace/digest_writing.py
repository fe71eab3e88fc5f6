"""The digest jobs' writes (docs/spec.md §12.3): `digest_write` creates a node, `digest_edit` changes its body.

Both check every rule before they write, hold the path's lock across check and write (so a node
that appears or changes meanwhile is seen), write through `atomic_write` and tell the `LinkSource`.
A refusal raises a `ReMeError` saying what to fix and leaves every file as it was.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from reme.errors import Conflict
from reme.workspace import frontmatter
from reme.workspace.atomic import atomic_write
from reme.workspace.digest import DigestRuleError, check_new_node_path, check_sources, node_parts
from reme.workspace.edges import check_conserved
from reme.workspace.layout import Workspace
from reme.workspace.links import LinkSource
from reme.workspace.textio import Limits, check_replaced_size, check_text, fingerprint, read_text, sha256_of
from reme.workspace.validity import check_kept


def digest_write(
    ws: Workspace,
    links: LinkSource,
    buckets: Collection[str],
    path: str,
    content: str,
    name: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, object] | None = None,
    limits: Limits = Limits(),
) -> dict[str, Any]:
    """Create the node `digest/<bucket>/<slug>.md`; front matter gets `name` (the stem) and `description`."""
    relative, text = draft_node(ws, buckets, path, content, name, description, metadata, limits)
    target = ws.absolute(relative, write=True)
    with ws.lock(relative):
        if target.exists() or target.is_symlink():
            raise DigestRuleError(
                f"{relative!r} already exists; update it with digest_edit, or choose another slug",
                {"path": relative},
            )
        atomic_write(target, text)
    links.sync_paths([relative])
    return {"path": relative, "created": True}


def draft_node(
    ws: Workspace,
    buckets: Collection[str],
    path: str,
    content: str,
    name: str | None = None,
    description: str | None = None,
    metadata: Mapping[str, object] | None = None,
    limits: Limits = Limits(),
) -> tuple[str, str]:
    """(path, file text) of a new node after every rule of `digest_write`, nothing written."""
    relative = ws.check(path, write=True)
    _, stem = check_new_node_path(relative, ws.folder("digest"), buckets)
    target = ws.absolute(relative, write=True)
    check_text(content, "content", limits.max_text_bytes)
    document = frontmatter.parse(content)
    if document.error:
        raise DigestRuleError(
            f"content starts with front matter that cannot be read ({document.error}); fix it"
        )
    given = {key: value for key, value in (("name", name), ("description", description)) if value is not None}
    changes = {**frontmatter.check_metadata(metadata or {}), **given}
    wanted = {**document.metadata, **changes}
    if wanted.get("name", stem) != stem:
        raise DigestRuleError(
            f"name {wanted['name']!r} differs from the file name {stem!r}; a node's name is its file "
            "name (leave name out, or choose the path to match)"
        )
    text_description = wanted.get("description")
    if not isinstance(text_description, str) or not text_description.strip():
        raise DigestRuleError(
            f"{relative!r} needs a description: one sentence saying what the node holds, so it can be "
            "found and triaged (description=...)"
        )
    check_sources(ws, relative, document.body)
    text = frontmatter.update(content, {**changes, "name": stem})
    check_text(text, "the resulting file", limits.max_text_bytes)
    if target.exists() or target.is_symlink():
        raise DigestRuleError(
            f"{relative!r} already exists; update it with digest_edit, or choose another slug",
            {"path": relative},
        )
    return relative, text


def digest_edit(
    ws: Workspace,
    links: LinkSource,
    path: str,
    old: str,
    new: str,
    expected_sha256: str | None = None,
    limits: Limits = Limits(),
) -> dict[str, Any]:
    """Replace every `old` by `new` in a node's body, keeping its edges, sources and front matter."""
    relative = ws.check(path, write=True)
    node_parts(relative, ws.folder("digest"))
    target = ws.absolute(relative, write=True)
    with ws.lock(relative):
        if not target.is_file():
            raise DigestRuleError(
                f"no node {relative!r}; create it with digest_write (or check the path with node_search)",
                {"path": relative},
            )
        text = read_text(ws.root, relative, limits.max_text_bytes)
        if expected_sha256 is not None and sha256_of(text) != expected_sha256.lower():
            raise Conflict(
                f"conflict: {relative!r} changed since you read it (sha256 differs); read it again and "
                "decide your edit on the current text",
                {"conflict": True, "path": relative, **fingerprint(target, text)},
            )
        result, count = draft_edit(ws, relative, text, old, new, limits)
        atomic_write(target, result)
    links.sync_paths([relative])
    return {"path": relative, "count": count}


def draft_edit(
    ws: Workspace,
    relative: str,
    text: str,
    old: str,
    new: str,
    limits: Limits = Limits(),
    *,
    conserve: bool = True,
) -> tuple[str, int]:
    """(edited text, occurrences) of a node's `text` under the rules of `digest_edit`, nothing written.

    `conserve=False` leaves E-1 out: a split checks E-2 over the parent and its children instead.
    """
    if not isinstance(old, str) or old == "":
        raise DigestRuleError("old must be a non-empty string to search for")
    check_text(new, "new", limits.max_text_bytes)
    document = frontmatter.parse(text)
    if document.error:
        raise DigestRuleError(
            f"{relative!r} has front matter that cannot be read ({document.error}); fix it first"
        )
    count = document.body.count(old)
    if count == 0:
        raise DigestRuleError(f"{old!r} does not occur in the body of {relative!r}; nothing was changed")
    try:
        check_replaced_size(text, old, new, count, limits.max_text_bytes)
    except ValueError as exc:
        raise DigestRuleError(str(exc)) from None
    result = document.head + document.body.replace(old, new)
    edited = frontmatter.parse(result)
    if edited.head != document.head:
        raise DigestRuleError(
            f"the edit would change the front matter of {relative!r}; digest_edit changes the body "
            "only (use frontmatter_update for front matter)"
        )
    if conserve:
        check_conserved(relative, document.body, edited.body)
        check_kept(relative, document.body, edited.body)
    check_sources(ws, relative, edited.body)
    check_text(result, "the resulting file", limits.max_text_bytes)
    return result, count

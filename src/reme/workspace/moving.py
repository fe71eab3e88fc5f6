"""Delete and move (docs/spec.md §3, 7): the link-aware file jobs.

`delete` reports the links that still point at what it removed and never rewrites other files;
`move` rewrites every inbound link (found through the `LinkSource`) unless told not to.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from reme.jsontypes import JSONObject
from reme.workspace import confined, move_journal
from reme.workspace.atomic import atomic_write
from reme.workspace.layout import Workspace
from reme.workspace.links import LinkSource, walk_files
from reme.workspace.paths import first_segment, has_extension, is_markdown, real, within
from reme.workspace.resolving import ends_with, resolve, short_form
from reme.workspace.textio import read_text
from reme.workspace.wikilinks import linkable, retarget_links, tree_mapping


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
    gone = set(removed)
    inbound = [entry for entry in links.inbound(relative) if entry["source_path"] not in gone]
    with ws.lock(relative, *removed):
        confined.remove(ws.root, relative, folder=folder)
    links.sync_paths(removed)
    return {"path": relative, "inbound": inbound, "removed": removed}


def move(
    ws: Workspace, links: LinkSource, src: str, dst: str, retarget: bool = True, overwrite: bool = False
) -> dict[str, Any]:
    """Move or rename a file or folder and, unless told not to, point inbound links at the new path.

    `dst` ending in `/` names the folder to move into (`daily/` → `daily/<name of src>`). The rename
    and the link rewrites run under a move intent, so a crash between them is finished later.
    """
    recover_moves(ws, links)
    source = ws.relative_for(src, write=True, markdown=True)
    source_path = ws.absolute(source, write=True)
    if not (source_path.exists() or source_path.is_symlink()):
        raise FileNotFoundError(f"no file or folder {source!r} in the workspace")
    if source in ws.dirs.values():
        raise PermissionError(f"{source!r} is a workspace layout folder and cannot be moved")
    folder = source_path.is_dir() and not source_path.is_symlink()
    destination = ws.check(dst, write=True)
    if isinstance(dst, str) and dst.endswith("/"):
        destination = f"{destination}/{source.rsplit('/', 1)[-1]}"
    if is_markdown(source) and not folder and not has_extension(destination):
        destination += ".md"
    destination_path = ws.absolute(destination, write=True)
    if destination == source:
        raise ValueError(f"{source!r} is already at {destination!r}")
    if folder and within(real(source_path), destination_path):  # also through a symlink to the folder
        raise ValueError(f"cannot move the folder {source!r} into itself ({destination!r})")
    moved = list(walk_files(ws, source)) if folder else [source]
    mapping = tree_mapping(source, destination)
    with ExitStack() as journal:
        with ws.lock(source, destination, *moved, *(mapping(path) or path for path in moved)):
            if destination_path.exists() or destination_path.is_symlink():
                if not overwrite:
                    raise FileExistsError(
                        f"{destination!r} already exists; pass overwrite=true to replace it"
                    )
                if folder or destination_path.is_dir():
                    raise IsADirectoryError(
                        f"{destination!r} is a folder or {source!r} is one; only files are overwritten"
                    )
                if source_path.is_symlink() and real(source_path) == real(destination_path):
                    # the link would replace its own target and then point at itself: the text is gone
                    raise ValueError(
                        f"{source!r} is a symbolic link to {destination!r}: they are the same file; "
                        f"delete {source!r} instead"
                    )
            inbound = links.inbound(source) if retarget else []
            if inbound and not linkable(destination):
                raise ValueError(
                    f"{len(inbound)} link(s) point at {source!r}, and a wikilink cannot name {destination!r} "
                    "('#', '|', '[' and ']' cut it short); choose another name or pass retarget=false"
                )
            if inbound:  # links to rewrite after the rename: a crash in between must be finished later
                journal.enter_context(move_journal.recorded(ws, source, destination, inbound))
            confined.rename(ws.root, source, destination)
        changed, count = (
            _retarget_sources(ws, inbound, _link_mapping(ws, links, inbound, mapping, moved))
            if retarget
            else ([], 0)
        )
    links.sync_paths([*moved, *(mapping(path) or path for path in moved), *changed])
    return {"src": source, "dst": destination, "retargeted_files": changed, "retargeted_links": count}


def recover_moves(ws: Workspace, links: LinkSource) -> list[JSONObject]:
    """Finish the moves a killed writer left half done (see `move_journal`); reports what it did."""

    def finish(intent: move_journal.MoveIntent) -> dict[str, Any]:
        full = tree_mapping(intent.src, intent.dst)
        # A short link (`[[solar]]`) is finished as the full new path of the file it named.
        short = {e["target_path"]: full(e.get("resolved_path") or e["target_path"]) for e in intent.inbound}
        changed, count = _retarget_sources(
            ws, intent.inbound, lambda target: short.get(target) or full(target)
        )
        links.sync_paths([intent.src, intent.dst, *changed])
        return {"retargeted_files": changed, "retargeted_links": count}

    return move_journal.recover(ws, finish)


def _link_mapping(
    ws: Workspace,
    links: LinkSource,
    inbound: list[dict[str, str]],
    mapping: Callable[[str], str | None],
    moved: list[str],
) -> Callable[[str], str | None]:
    """New text for each inbound target: full paths follow the move; a short one (`[[solar]]`, docs/spec.md §2.2) keeps its shape while it still names just the moved file afterwards, else becomes the full
    path. Runs after the files moved: the disk is the new state, the link source's list of files is
    the old one with the moved paths mapped."""
    new_paths = [mapping(path) or path for path in moved]

    def exists(path: str) -> bool:
        try:
            return ws.absolute(ws.check(path)).exists()
        except ValueError:
            return False

    def ending_with(suffix: str) -> set[str]:
        kept = {path for path in links.ending_with(suffix) if mapping(path) is None}
        return kept | {path for path in new_paths if ends_with(path, suffix)}

    table: dict[str, str] = {}
    for entry in inbound:
        written, named = entry["target_path"], entry.get("resolved_path", entry["target_path"])
        new = mapping(named)
        if new is None or written in table:
            continue
        if written != named:
            short = short_form(written, named, new)
            new = short if resolve(short, exists, ending_with) == new else new
        table[written] = new
    return lambda target: table[target] if target in table else mapping(target)


def _retarget_sources(
    ws: Workspace, inbound: list[dict[str, str]], mapping: Callable[[str], str | None]
) -> tuple[list[str], int]:
    """Rewrite link targets in every file that pointed at the moved path (now at its new place).

    Files under `resource/` are raw material that reme never modifies; their links are left as they are.
    """
    changed: list[str] = []
    total = 0
    for source in sorted({entry["source_path"] for entry in inbound}):
        current = mapping(source) or source
        if first_segment(current) == ws.folder("resource"):
            continue
        target = ws.root / current
        with ws.lock(current):
            try:
                text = read_text(ws.root, current)
            except (FileNotFoundError, ValueError):
                continue
            rewritten, count = retarget_links(text, mapping)
            if count:
                atomic_write(target, rewritten, ws.root)
                changed.append(current)
                total += count
    return changed, total

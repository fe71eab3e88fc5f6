"""Who links to what: the index's link graph when there is one, a workspace scan otherwise (docs/spec.md §3).

File operations ask a `LinkSource` for inbound links before a move or delete and tell it which paths
they changed afterwards, so search and the graph see a write at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Protocol

from reme.workspace.layout import Workspace
from reme.workspace.paths import is_markdown
from reme.workspace.resolving import ends_with, resolve
from reme.workspace.textio import read_text
from reme.workspace.wikilinks import parse_links


class LinkSource(Protocol):
    def inbound(self, path: str) -> list[dict[str, str]]:
        """`{source_path, target_path, resolved_path}` of every link pointing at `path` or into it (a
        folder), `target_path` as written (maybe short, docs/spec.md §2.2), `resolved_path` the file it names."""
        ...

    def ending_with(self, suffix: str) -> list[str]:
        """Known files whose path ends with `/<suffix>`: the candidates of short links."""
        ...

    def sync_paths(self, paths: list[str]) -> None:
        """Bring derived state up to date for these changed (created, edited, removed) paths."""
        ...


def points_at(target: str, path: str) -> bool:
    """Whether a link target names `path` itself or something inside the folder `path`."""
    return target == path or target.startswith(path.rstrip("/") + "/")


def count_edges(workspace: Workspace, inbound: list[dict[str, str]]) -> int:
    """Distinct inbound edges `(source, target, predicate)` behind `inbound`'s (source, target) pairs.

    `[[A]]` and `is_a:: [[A]]` in one file are two edges (docs/spec.md §2.2), which the pairs cannot tell
    apart; so each linking file is read again. A file that cannot be read counts its pairs.
    """
    targets: dict[str, set[str]] = {}
    for entry in inbound:
        targets.setdefault(entry["source_path"], set()).add(entry["target_path"])
    total = 0
    for source, wanted in targets.items():
        try:
            text = read_text(workspace.root, source)
        except (OSError, ValueError):
            total += len(wanted)
            continue
        edges = {link.key for link in parse_links(text) if link.target in wanted}
        total += len(edges) or len(wanted)
    return total


class ScanLinks:
    """Inbound links found by reading every Markdown file; used when no index is configured."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def inbound(self, path: str) -> list[dict[str, str]]:
        files = list(markdown_files(self.workspace))
        resolved: dict[str, str | None] = {}
        found: dict[tuple[str, str], str] = {}
        for source in files:
            try:
                text = read_text(self.workspace.root, source)
            except (OSError, ValueError):
                continue
            for link in parse_links(text):
                if link.target not in resolved:
                    resolved[link.target] = self._resolve(link.target, files)
                named = resolved[link.target] or link.target
                if points_at(link.target, path) or points_at(named, path):
                    found[(source, link.target)] = named
        return [
            {"source_path": source, "target_path": target, "resolved_path": found[(source, target)]}
            for source, target in sorted(found)
        ]

    def _resolve(self, target: str, files: list[str]) -> str | None:
        def exists(path: str) -> bool:
            """A link names a file: a folder of that name is no match, as in the index's graph."""
            try:
                return self.workspace.resolve(path).is_file()
            except ValueError:
                return False

        return resolve(target, exists, lambda suffix: [f for f in files if ends_with(f, suffix)])

    def ending_with(self, suffix: str) -> list[str]:
        return [path for path in markdown_files(self.workspace) if ends_with(path, suffix)]

    def sync_paths(self, paths: list[str]) -> None:
        """Nothing is derived without an index."""


def markdown_files(workspace: Workspace, under: str = "") -> Iterator[str]:
    """Relative paths of Markdown files, skipping `metadata/`, hidden entries and symlinked folders."""
    for relative in walk_files(workspace, under):
        if is_markdown(relative):
            yield relative


def walk_files(workspace: Workspace, under: str = "") -> Iterator[str]:
    """Every regular file below `under`, sorted, without `metadata/` and hidden names."""
    start = workspace.root / under if under else workspace.root
    for folder, subfolders, files in os.walk(start):
        relative_folder = os.path.relpath(folder, workspace.root)
        relative_folder = "" if relative_folder == "." else relative_folder.replace(os.sep, "/")
        subfolders[:] = sorted(
            name
            for name in subfolders
            if not name.startswith(".")
            and not (relative_folder == "" and workspace.is_metadata(name))
            and not os.path.islink(os.path.join(folder, name))
        )
        for name in sorted(files):
            if name.startswith("."):
                continue
            yield f"{relative_folder}/{name}" if relative_folder else name

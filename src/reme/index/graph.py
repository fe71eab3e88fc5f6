"""The file graph over the catalog's link table: existence, backlinks, pending edges, traversal.

An edge is *pending* while its target resolves to no file (docs/spec.md §2.2: the literal path,
`<target>.md`, or the one catalogued file ending with `/<target>` or `/<target>.md`). Existence of
an indexed path is what the catalog says (so a target becomes real when it is indexed and pending
again when it is deleted, and a second `solar.md` makes `[[solar]]` pending); any other target (a
resource, a folder) is checked on disk. Resolution happens when asked, never stored, so it always
follows the files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from reme.index.store import LinkRow, MetadataStore
from reme.index.wal import Row
from reme.workspace.paths import UnsafePathError, check_relative, within
from reme.workspace.resolving import ends_with, resolve, spellings

_LINK_COLUMNS = "source, target, predicate, anchor, alias, embed, line"

Direction = Literal["forward", "backward", "both"]


@dataclass(frozen=True)
class Edge:
    source: str
    target: str  # as written
    resolved: str | None  # the file it names; None while pending
    predicate: str | None
    anchor: str | None

    @classmethod
    def of(cls, link: LinkRow, resolved: str | None) -> Edge:
        return cls(link.source, link.target, resolved, link.predicate, link.anchor)

    @property
    def leads_to(self) -> str:
        """The node this edge reaches: the resolved file, or the target as written while pending."""
        return self.resolved or self.target


@dataclass(frozen=True)
class GraphNode:
    """A file reached by a traversal: its frontmatter name/description when catalogued, and whether it exists."""

    path: str
    name: str | None
    description: str | None
    exists: bool


class LinkGraph:
    def __init__(self, root: Path, store: MetadataStore, is_indexed_path: Callable[[str], bool]) -> None:
        self.root = root
        self.store = store
        self.is_indexed_path = is_indexed_path

    def exists(self, path: str) -> bool:
        """Link text is anything a note says: a target that would leave the workspace never exists."""
        if self.is_indexed_path(path):
            return self.store.file(path) is not None
        try:
            full = self.root / check_relative(path)
        except UnsafePathError:
            return False
        return not full.is_symlink() and within(self.root, full) and full.is_file()  # a folder is no note

    def ending_with(self, suffix: str) -> list[str]:
        """Catalogued files whose path ends with `/<suffix>` (case as written)."""
        pattern = "*/" + "".join(f"[{ch}]" if ch in "*?[" else ch for ch in suffix)
        return [row[0] for row in self.store.query("SELECT path FROM files WHERE path GLOB ?", (pattern,))]

    def resolve(self, target: str) -> str | None:
        """The file a link target names (docs/spec.md §2.2), or None while it is pending."""
        return resolve(target, self.exists, self.ending_with)

    def outlinks(self, path: str) -> list[LinkRow]:
        return self.store.outlinks(path)

    def inlinks(self, path: str) -> list[LinkRow]:
        """Links written as `path` itself, or in a shorter form that resolves to it."""
        return self._resolving_to([path])

    def _resolving_to(self, paths: Iterable[str]) -> list[LinkRow]:
        """Links whose target is one of `paths` as written, or a spelling that resolves to it."""
        wanted = set(paths)
        by_spelling: dict[str, set[str]] = {}
        for path in wanted:
            for spelling in spellings(path):
                by_spelling.setdefault(spelling, set()).add(path)
        resolved: dict[str, str | None] = {}
        found: list[LinkRow] = []
        for link in self._links_to(list(by_spelling)):
            if link.target not in wanted:
                if link.target not in resolved:
                    resolved[link.target] = self.resolve(link.target)
                if resolved[link.target] not in by_spelling[link.target]:
                    continue
            found.append(link)
        return found

    def _links_to(self, targets: list[str]) -> list[LinkRow]:
        rows: list[Row] = []
        for start in range(0, len(targets), 500):
            batch = targets[start : start + 500]
            rows += self.store.query(
                f"SELECT {_LINK_COLUMNS}, seq FROM links WHERE target IN ({','.join('?' * len(batch))})",
                batch,
            )
        rows.sort(key=lambda row: (row[0], row[-1]))
        return [LinkRow(s, t, p, a, al, bool(e), ln) for s, t, p, a, al, e, ln, _ in rows]

    def inbound(self, path: str) -> list[dict[str, str]]:
        """Distinct `(source_path, target_path, resolved_path)` of links pointing at a file or into a
        folder, written in full or short (`target_path` as written)."""
        literal = self.store.links_into(path)
        short = self._resolving_to(self.store.paths_under(path) or [path])
        entries: dict[tuple[str, str], str] = {}
        for link in sorted([*literal, *short], key=lambda link: (link.source, link.line)):
            entries.setdefault((link.source, link.target), self.resolve(link.target) or link.target)
        return [
            {"source_path": source, "target_path": target, "resolved_path": resolved}
            for (source, target), resolved in entries.items()
        ]

    def pending_edges(self) -> list[Edge]:
        """Edges whose target resolves to no file (yet); one read of the catalog's paths serves all."""
        by_name: dict[str, list[str]] = {}
        for (path,) in self.store.query("SELECT path FROM files"):
            by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)

        def ending_with(suffix: str) -> list[str]:
            return [p for p in by_name.get(suffix.rsplit("/", 1)[-1], ()) if ends_with(p, suffix)]

        targets = self.store.unresolved_targets()
        missing = {t for t in targets if resolve(t, self.exists, ending_with) is None}
        edges: list[Edge] = []
        for target in sorted(missing):
            edges.extend(Edge.of(link, None) for link in self.store.inlinks(target))
        return edges

    def neighbours(self, path: str, direction: Direction) -> list[Edge]:
        """Edges touching `path` in that direction, always stored source → target."""
        edges: list[Edge] = []
        if direction in ("forward", "both"):
            edges += [Edge.of(link, self.resolve(link.target)) for link in self.store.outlinks(path)]
        if direction in ("backward", "both"):
            edges += [Edge.of(link, self.resolve(link.target)) for link in self.inlinks(path)]
        return edges

    def traverse(
        self, seeds: Iterable[str], depth: int, direction: Direction, max_nodes: int = 1000
    ) -> tuple[list[GraphNode], list[Edge]]:
        """Breadth-first from `seeds` up to `depth` hops: nodes with name/description/exists, and edges."""
        order: list[str] = list(dict.fromkeys(seeds))
        seen = set(order)
        edges: dict[Edge, None] = {}
        frontier = list(order)
        for _ in range(depth):
            following: list[str] = []
            for path in frontier:
                for edge in self.neighbours(path, direction):
                    edges[edge] = None
                    for other in (edge.source, edge.leads_to):
                        if other not in seen and len(order) < max_nodes:
                            seen.add(other)
                            order.append(other)
                            following.append(other)
            frontier = following
            if not frontier:
                break
        rows = self.store.files(order)
        nodes = [
            GraphNode(
                path,
                rows[path].name if path in rows else None,
                rows[path].description if path in rows else None,
                path in rows or self.exists(path),
            )
            for path in order
        ]
        return nodes, [edge for edge in edges if edge.source in seen and edge.leads_to in seen]

"""The file graph over the catalog's link table: existence, backlinks, pending edges, traversal.

An edge is *pending* while its target does not exist. Existence of an indexed path is what the
catalog says (so a target becomes real when it is indexed and pending again when it is deleted);
any other target (a resource, a folder) is checked on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from reme.index.store import LinkRow, MetadataStore
from reme.workspace.paths import UnsafePathError, check_relative, within

Direction = Literal["forward", "backward", "both"]


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    predicate: str | None
    anchor: str | None

    @classmethod
    def of(cls, link: LinkRow) -> Edge:
        return cls(link.source, link.target, link.predicate, link.anchor)


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
        return not full.is_symlink() and within(self.root, full) and full.exists()

    def outlinks(self, path: str) -> list[LinkRow]:
        return self.store.outlinks(path)

    def inlinks(self, path: str) -> list[LinkRow]:
        return self.store.inlinks(path)

    def inbound(self, path: str) -> list[dict[str, str]]:
        """Distinct `(source_path, target_path)` of links pointing at a file or into a folder."""
        pairs = dict.fromkeys((link.source, link.target) for link in self.store.links_into(path))
        return [{"source_path": source, "target_path": target} for source, target in pairs]

    def pending_edges(self) -> list[Edge]:
        """Edges whose target does not exist (yet)."""
        missing = {t for t in self.store.unresolved_targets() if not self.exists(t)}
        edges: list[Edge] = []
        for target in sorted(missing):
            edges.extend(Edge.of(link) for link in self.store.inlinks(target))
        return edges

    def neighbours(self, path: str, direction: Direction) -> list[Edge]:
        """Edges touching `path` in that direction, always stored source → target."""
        edges: list[Edge] = []
        if direction in ("forward", "both"):
            edges += [Edge.of(link) for link in self.store.outlinks(path)]
        if direction in ("backward", "both"):
            edges += [Edge.of(link) for link in self.store.inlinks(path)]
        return edges

    def traverse(
        self, seeds: Iterable[str], depth: int, direction: Direction, max_nodes: int = 1000
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
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
                    for other in (edge.source, edge.target):
                        if other not in seen and len(order) < max_nodes:
                            seen.add(other)
                            order.append(other)
                            following.append(other)
            frontier = following
            if not frontier:
                break
        rows = self.store.files(order)
        nodes = [
            {
                "path": path,
                "name": rows[path].name if path in rows else None,
                "description": rows[path].description if path in rows else None,
                "exists": path in rows or self.exists(path),
            }
            for path in order
        ]
        kept = [asdict(edge) for edge in edges if edge.source in seen and edge.target in seen]
        return nodes, kept

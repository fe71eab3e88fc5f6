"""The digest's nodes as maintain and audit see them: listed, loaded, and measured for overload (docs/spec.md §12.5)."""

from __future__ import annotations

from dataclasses import dataclass

from reme.errors import ReMeError
from reme.pipelines.port import FileText, Notes
from reme.workspace import frontmatter
from reme.workspace.digest import is_node, section_count


@dataclass(frozen=True)
class Overload:
    """A node is overloaded past either bound: it has become a catch-all page."""

    max_node_chars: int = 6000
    max_sections: int = 8

    def __post_init__(self) -> None:
        """A bound under 1 would call every node overloaded (and maintain would split them)."""
        for name, value in (("max_node_chars", self.max_node_chars), ("max_sections", self.max_sections)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ReMeError(f"{name} must be a whole number of at least 1, not {value!r}")

    def reason(self, text: str) -> str | None:
        """Why the node's body is overloaded, or None."""
        body = frontmatter.parse(text).body
        problems = []
        if len(body) > self.max_node_chars:
            problems.append(f"{len(body)} characters > {self.max_node_chars}")
        sections = section_count(body)
        if sections > self.max_sections:
            problems.append(f"{sections} sections > {self.max_sections}")
        return "; ".join(problems) or None


async def load_nodes(port: Notes, max_nodes: int) -> list[FileText]:
    """Every digest node, sorted by path; a digest larger than `max_nodes` is refused (raise the bound)."""
    digest = port.folder("digest")
    entries = [
        entry
        for entry in await port.list_files(digest, extensions=(".md",), recursive=True)
        if is_node(entry.path, digest)
    ]
    if len(entries) > max_nodes:
        raise ReMeError(
            f"the digest holds {len(entries)} nodes, more than max_nodes {max_nodes}; raise the step setting"
        )
    loaded = [await port.load(entry.path) for entry in entries]
    return [node for node in loaded if node is not None]

"""The digest's nodes as maintain, audit and export see them: listed, loaded, and measured for overload
(docs/spec.md §12.5). A node that cannot be read is named and left as it is; the others are still served."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypedDict

from reme.errors import ReMeError
from reme.pipelines.port import FileText, Notes
from reme.workspace.digest import is_node, section_count
from reme.workspace.fmsplit import split


class Skipped(TypedDict):
    """A digest file a job left out (its bytes are not UTF-8 text, it is over the size cap, ...)."""

    path: str
    reason: str


@dataclass
class Nodes:
    """The nodes read, and the files that could not be (each named with why)."""

    loaded: list[FileText] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def body_of(text: str) -> str:
    """The text after the front-matter fences, also when the YAML between them is invalid or too large:
    a broken block is still front matter, and measuring or auditing it as body would mislead."""
    return split(text).body(text)


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
        body = body_of(text)
        problems = []
        if len(body) > self.max_node_chars:
            problems.append(f"{len(body)} characters > {self.max_node_chars}")
        sections = section_count(body)
        if sections > self.max_sections:
            problems.append(f"{sections} sections > {self.max_sections}")
        return "; ".join(problems) or None


async def load_files(port: Notes, paths: Iterable[str]) -> Nodes:
    """Each file of `paths` that can be read; one that cannot is skipped with why, never failing the rest."""
    found = Nodes()
    for path in paths:
        try:
            node = await port.load(path)
        except ReMeError as exc:
            found.skipped.append({"path": path, "reason": exc.message.removeprefix("load failed: ")})
            continue
        if node is not None:  # gone since it was listed
            found.loaded.append(node)
    return found


async def load_nodes(port: Notes, max_nodes: int) -> Nodes:
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
    return await load_files(port, [entry.path for entry in entries])


def skipped_lines(skipped: list[Skipped], most: int) -> list[str]:
    """One answer line per skipped file (the first `most`; the job's metadata names them all)."""
    lines = [f"SKIPPED {s['path']} — {s['reason']}; left as it is" for s in skipped[:most]]
    if len(skipped) > most:
        lines.append(f"… {len(skipped) - most} more skipped file(s) in metadata.skipped")
    return lines

"""The tools of one split run (docs/spec.md §12.5), guarded in code: the agent stages, nothing reaches the disk.

`SplitGuard.run_job` stands between the split agent and reme's jobs:
- `digest_write` may only create new children in the parent's bucket, each citing only sources the
  parent already cites (a split moves knowledge, it does not invent provenance);
- `digest_edit` may only change the parent, in place (F-1; inbound links stay valid, F-10); E-1 is
  left out because a split moves links into the children: instead each edit is checked for E-2
  against the children staged so far (write them first). The first refusal goes back to the agent
  as its one retry, the second ends the run with `ConservationViolation`; `check_split` checks E-2
  over the whole union again once the agent has finished;
- every other write is refused, and `read` of a staged file shows the staged text.
Both writes are checked with the digest rules (`MemoryPort.draft_node` / `draft_edit`) and kept in
memory; the pipeline commits the whole split in one file transaction, or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from reme.errors import ReMeError
from reme.pipelines.dream.guard import (
    MAX_VIOLATIONS,
    Params,
    ToolReply,
    UnitAborted,
    optional_text,
    refused_by,
    text_param,
)
from reme.pipelines.journal.records import LostEdge, Violation
from reme.pipelines.port import DigestRun, FileText
from reme.workspace import frontmatter
from reme.workspace.digest import is_node, node_parts, source_links
from reme.workspace.edges import describe, edges, missing_edges
from reme.workspace.resolving import MD, ends_with, resolve, spellings

WRITE_TOOLS = ("write", "edit", "save", "delete", "move", "digest_write", "digest_edit", "frontmatter_update")


class SplitReport(BaseModel):
    """What the split agent says it did; checked against what it staged."""

    split: bool = Field(description="true when you split the node; false to leave it as it is")
    children: list[str] = Field(default_factory=list, max_length=32, description="the new child nodes")
    reason: str = Field(min_length=1, max_length=1000, description="one sentence: why (not) split this way")


@dataclass
class SplitGuard:
    port: DigestRun
    digest: str
    parent: FileText
    max_children: int
    children: dict[str, str] = field(default_factory=dict)  # staged path -> file text
    parent_text: str | None = None  # the staged parent
    refusals: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    @property
    def bucket(self) -> str:
        return node_parts(self.parent.path, self.digest)[0]

    def parent_sources(self) -> set[str]:
        return {link.target for link in source_links(frontmatter.parse(self.parent.content).body)}

    def file_of(self, target: str) -> str:
        """The file a link target names (the workspace's link resolution over the disk and this split's
        staged nodes), so `[[x]]`, `[[x.md]]` and a short `[[slug]]` compare equal; a target naming no
        known file stands for `<target>.md`."""
        found = resolve(target, self._known, self._ending_with)
        if found is not None:
            return found
        return target if target.endswith(MD) else target + MD

    def _known(self, path: str) -> bool:
        if path == self.parent.path or path in self.children:
            return True
        try:
            return self.port.exists(self.port.check_path(path))
        except (ReMeError, ValueError, OSError):
            return False

    def _ending_with(self, suffix: str) -> list[str]:
        return [path for path in (self.parent.path, *self.children) if ends_with(path, suffix)]

    def invented_sources(self, content: str) -> list[str]:
        """Sources of a child's text (as written) that name no file the parent cites."""
        cited = {self.file_of(target) for target in self.parent_sources()}
        return sorted(
            {
                link.target
                for link in source_links(frontmatter.parse(content).body)
                if self.file_of(link.target) not in cited
                and not any(link.target in spellings(path) for path in cited)
            }
        )

    async def run_job(self, job: str, **params: object) -> object:
        """The agent's tool call: writes are staged here, a read of a staged file shows it, the rest pass."""
        if job == "digest_write":
            return await self._write_child(params)
        if job == "digest_edit":
            return await self._edit_parent(params)
        if job in WRITE_TOOLS:
            return self._refuse(
                f"a split writes only through digest_write (children) and digest_edit (the parent), not {job}"
            )
        if job == "read":
            staged = self._staged(text_param(params, "path"))
            if staged is not None:
                return ToolReply(True, staged, {"path": text_param(params, "path"), "staged": True})
        return await self.port.run_job(job, **params)

    def _staged(self, path: str) -> str | None:
        path = path if path.endswith(".md") else f"{path}.md"
        if path == self.parent.path:
            return self.parent_text
        return self.children.get(path)

    def _refuse(self, message: str) -> ToolReply:
        self.refusals.append(message)
        return ToolReply(False, f"refused: {message}")

    async def _write_child(self, params: Params) -> ToolReply:
        path = text_param(params, "path")
        digest = self.digest
        if not is_node(path, digest) or node_parts(path, digest)[0] != self.bucket:
            return self._refuse(
                f"{path!r}: children of {self.parent.path} are new nodes in {digest}/{self.bucket}/"
            )
        if path == self.parent.path or path in self.children:
            return self._refuse(f"{path!r} is already part of this split; change the parent with digest_edit")
        if len(self.children) >= self.max_children:
            return self._refuse(f"at most {self.max_children} children per split")
        content = text_param(params, "content")
        invented = self.invented_sources(content)
        if invented:
            return self._refuse(
                f"{path!r} cites sources the parent does not ({', '.join(invented)}); a child keeps the "
                "parent's relevant `derived_from::` lines as they are"
            )
        try:
            text = await self.port.draft_node(
                path,
                content,
                description=optional_text(params, "description"),
                name=optional_text(params, "name"),
            )
        except ReMeError as exc:
            return refused_by(exc)
        self.children[path] = text
        return ToolReply(
            True, f"Staged {path}; it is written with the whole split once E-2 holds", {"path": path}
        )

    async def _edit_parent(self, params: Params) -> ToolReply:
        path = text_param(params, "path")
        if path != self.parent.path:
            return self._refuse(
                f"only the parent {self.parent.path} may be edited in this split (children are written "
                f"whole with digest_write; other nodes stay as they are), not {path!r}"
            )
        current = self.parent_text if self.parent_text is not None else self.parent.content
        try:
            edited = await self.port.draft_edit(
                path, current, text_param(params, "old"), text_param(params, "new"), conserve=False
            )
        except ReMeError as exc:
            return refused_by(exc)
        lost = self.lost_edges(edited)
        if lost:
            return self._violation(lost)
        self.parent_text = edited
        return ToolReply(True, f"Staged the edit of {path}", {"path": path, "staged": True})

    def lost_edges(self, parent_text: str) -> list[LostEdge]:
        """E-2: edges of the old parent in neither this parent text nor a staged child."""
        bodies = [frontmatter.parse(text).body for text in self.children.values()]
        old = frontmatter.parse(self.parent.content).body
        lost = missing_edges(old, frontmatter.parse(parent_text).body, *bodies)
        return [LostEdge(target=str(edge["target"]), predicate=edge["predicate"]) for edge in lost]

    def _violation(self, lost: list[LostEdge]) -> ToolReply:
        self.violations.append({"path": self.parent.path, "missing_edges": lost})
        shown = ", ".join(
            describe({"target": e["target"], "predicate": e.get("predicate")}) for e in lost[:20]
        )
        message = (
            f"the edit of {self.parent.path} would drop {len(lost)} link(s) that no child staged so far "
            f"keeps: {shown} (E-2)"
        )
        if len(self.violations) >= MAX_VIOLATIONS:
            raise UnitAborted(f"ConservationViolation: {message}", {"missing_edges": lost})
        return ToolReply(
            False,
            f"refused: {message}. Nothing was staged. This is your one retry: keep those links in the "
            "overview, or write the children that hold them first",
            {"missing_edges": lost},
        )


def check_split(guard: SplitGuard, report: SplitReport) -> tuple[str | None, list[LostEdge]]:
    """(why the staged split may not be kept, the E-2 edges it would lose); (None, []) when it may."""
    parent = guard.parent.path
    if sorted(report.children) != sorted(guard.children):
        return (
            f"the report lists {sorted(report.children)}, but the split staged {sorted(guard.children)}",
            [],
        )
    if not guard.children:
        return "a split needs at least one new child node", []
    if guard.parent_text is None or guard.parent_text == guard.parent.content:
        return f"the parent {parent} was not turned into an overview (digest_edit)", []
    new_parent = frontmatter.parse(guard.parent_text).body
    old_size = len(frontmatter.parse(guard.parent.content).body)
    if len(new_parent) >= old_size:
        return (
            f"the overview of {parent} ({len(new_parent)} characters) is not shorter than the node was ({old_size})",
            [],
        )
    linked = {guard.file_of(target) for target, _ in edges(new_parent)}
    unlinked = [child for child in guard.children if child not in linked]
    if unlinked:
        return f"the overview {parent} must link each child; it does not link {', '.join(unlinked)}", []
    lost = guard.lost_edges(guard.parent_text)
    if lost:
        return f"ConservationViolation: the split of {parent} would drop {len(lost)} link(s) (E-2)", lost
    return None, []

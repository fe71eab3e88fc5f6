"""Dream phase 2 (docs/spec.md §12.3): one isolated agent run integrates one unit into the digest.

The prompt holds the unit, its evidence (bounded) and a bounded recall — `node_search` plus a
depth-2 `traverse` around the top hit, names and descriptions only — so its size does not grow with
the digest. The agent's report is checked against what the guard saw written; a unit that fails for
any reason is put back (its node byte-identical to before, a node it created removed) so the next
run can retry it from a clean digest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from reme.errors import ReMeError
from reme.llm.prompts import render_prompt
from reme.llm.runner import AgentFailed, OnEvent, run_agent
from reme.llm.tools import PathPolicy
from reme.pipelines.dream.extract import Unit
from reme.pipelines.dream.guard import Subject, UnitAborted, UnitGuard
from reme.pipelines.dream.material import Bounds, pack
from reme.pipelines.journal.records import Action, Modified, Violation
from reme.pipelines.port import DigestRun, Neighbourhood
from reme.workspace import frontmatter
from reme.workspace.dates import path_day
from reme.workspace.digest import node_parts, source_links

TOOLS = (
    "node_search",
    "search",
    "traverse",
    "read",
    "frontmatter_read",
    "digest_write",
    "digest_edit",
    "frontmatter_update",
)


class Report(BaseModel):
    """What the agent says it did; checked against the files."""

    action: Literal["CREATE", "CORROBORATE", "REFINE", "CORRECT"]
    target_path: str = Field(min_length=1, max_length=300, description="the node written or updated")
    reason: str = Field(min_length=1, max_length=1000, description="one sentence: why this action")


@dataclass(frozen=True)
class Recall:
    limit: int = 20
    depth: int = 2
    max_nodes: int = 30


@dataclass
class UnitResult:
    unit: Unit
    usage: dict[str, int]
    action: Action | None = None
    error: str | None = None
    created: str | None = None
    created_sha256: str | None = None
    modified: Modified | None = None
    violations: list[Violation] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)


async def recall(port: DigestRun, unit: Unit, settings: Recall) -> str:
    """Candidate nodes for the unit as bounded prompt lines: search hits, then their neighbourhood."""
    try:
        hits = await port.node_search(f"{unit.name}\n{unit.summary}"[:2000], limit=settings.limit)
    except ReMeError:
        hits = []  # an empty digest, or no index: the agent can still search itself
    lines = [_line(hit.path, hit.name, hit.description) for hit in hits[: settings.limit]]
    if hits:
        try:
            around = await port.traverse([hits[0].path], depth=settings.depth, direction="both")
        except ReMeError:
            around = Neighbourhood()
        known = {hit.path for hit in hits}
        digest = port.folder("digest") + "/"
        near = [n for n in around.nodes if n.exists and n.path not in known and n.path.startswith(digest)]
        if near:
            lines.append(f"Linked around {hits[0].path}:")
            lines.extend(_line(node.path, node.name, node.description) for node in near[: settings.max_nodes])
    return "\n".join(lines) or "(no existing node matches; the digest may be empty)"


def _line(path: str, name: str | None, description: str | None) -> str:
    shown = " ".join((description or "").split())[:300]
    return f"- {path} — {name or ''}: {shown}"


def cites(text: str, evidence: Sequence[str]) -> bool:
    """Whether the node's `## Sources` holds a `derived_from::` edge to one of the unit's evidence files."""
    return any(_among(link.target, evidence) for link in source_links(frontmatter.parse(text).body))


def _among(target: str, evidence: Sequence[str]) -> bool:
    return target in evidence or f"{target}.md" in evidence


def added_sources(after: str, before: str | None, evidence: Sequence[str]) -> list[str]:
    """`derived_from::` targets the run added that are not the unit's evidence: provenance names only
    what the unit was given, never a missing note, another day's note or a digest node."""
    kept = {link.target for link in source_links(frontmatter.parse(before).body)} if before else set()
    return [
        target
        for target in dict.fromkeys(link.target for link in source_links(frontmatter.parse(after).body))
        if target not in kept and not _among(target, evidence)
    ]


def check_report(
    report: Report, guard: UnitGuard, buckets: Sequence[str], evidence: Sequence[str]
) -> str | None:
    """Why the report does not match what was written, or None."""
    target = report.target_path.strip()
    subject = guard.subject
    if subject is None:
        return f"the report says {report.action} {target!r}, but no node was written"
    if target != subject.path:
        return f"the report names {target!r}, but the run changed {subject.path!r}"
    after = guard.last_written()
    if after is not None and not cites(after.content, evidence):
        return (
            f"{target!r} has no `derived_from::` source for this unit's evidence ({', '.join(evidence)}) "
            "in its ## Sources section; every change must cite what it comes from"
        )
    before = subject.before.content if subject.before else None
    foreign = added_sources(after.content, before, evidence) if after is not None else []
    if foreign:
        return (
            f"{target!r} cites {', '.join(foreign)} as `derived_from::` sources, but this unit's evidence is "
            f"{', '.join(evidence)}; cite only the evidence you were given"
        )
    if report.action == "CREATE":
        if subject.before is not None:
            return f"the report says CREATE, but {target!r} existed before and was updated"
        bucket, _ = node_parts(target, guard.digest_dir)
        if after is None or not guard.port.exists(target) or bucket not in buckets:
            return f"the report says CREATE, but {target!r} is not a node in a configured bucket"
        return None
    if subject.before is None:
        return f"the report says {report.action} {target!r}, but the run created it"
    if after is None or after.sha256 == subject.before.sha256:
        return f"the report says {report.action} {target!r}, but the node is unchanged"
    return None


async def put_back(port: DigestRun, guard: UnitGuard) -> str | None:
    """Undo the unit's change unless someone else changed the node since; a note when left alone."""
    subject, left = guard.subject, guard.last_written()
    if subject is None or left is None:
        return None
    current = await port.load(subject.path)
    if current is None or current.sha256 != left.sha256:
        return f"{subject.path} changed by someone else after the unit wrote it; left as it is"
    if subject.before is None:
        await port.delete(subject.path)
    else:
        await port.save(subject.path, subject.before.content, expected_sha256=current.sha256)
    return None


def _outcome(result: UnitResult, guard: UnitGuard, subject: Subject) -> None:
    after = guard.last_written()
    if subject.before is None:
        result.created = subject.path
        result.created_sha256 = after.sha256 if after is not None else None
    elif after is not None:
        before = subject.before
        result.modified = Modified(subject.path, before.sha256, before.content, after.sha256)


async def integrate(
    port: DigestRun,
    unit: Unit,
    *,
    buckets: Sequence[str],
    buckets_page: str,
    bounds: Bounds,
    recall_settings: Recall,
    on_event: OnEvent | None = None,
) -> UnitResult:
    """Run the agent for one unit; never raises for a unit failure (the result carries the error)."""
    handle = port.model("memory")
    digest = port.folder("digest")
    evidence = await pack(port, unit.evidence_paths, bounds)
    variables = {
        "run": f"integrate:{unit.name}",
        "unit_name": unit.name,
        "unit_summary": unit.summary,
        "unit_bucket": unit.bucket,
        "evidence_path": unit.evidence_paths[0],
        "evidence_paths": "\n".join(f"- {path}" for path in unit.evidence_paths),
        "buckets": buckets_page,
        "digest": digest,
    }
    candidates = await recall(port, unit, recall_settings)
    days = [day for day in map(path_day, unit.evidence_paths) if day is not None]
    guard = UnitGuard(port, digest, reference_day=max(days) if days else None)
    folders = tuple(f"{port.folder(role)}/" for role in ("daily", "resource", "session", "digest"))
    result = UnitResult(unit, {})
    try:
        run = await run_agent(
            model=handle.build(variables),
            settings=handle.settings,
            run_job=guard.run_job,
            instructions=render_prompt("auto_dream_integrate", variables),
            prompt=render_prompt("auto_dream_integrate_task", {**variables, "candidates": candidates})
            + f"\n\nEvidence:\n\n{evidence.text}",
            tools=port.agent_tools(TOOLS),
            policy=PathPolicy(read=folders, write=(f"{digest}/",)),
            output_type=Report,
            on_event=on_event,
        )
    except AgentFailed as failure:
        result.usage = failure.usage
        cause = failure.__cause__
        result.error = cause.message if isinstance(cause, UnitAborted) else f"AgentFailed: {failure.message}"
    else:
        result.usage = run.usage
        problem = check_report(run.output, guard, buckets, unit.evidence_paths)
        if problem:
            result.error = f"ReportMismatch: {problem}"
        else:
            report: Report = run.output
            result.action = {
                "unit": unit.name,
                "action": report.action,
                "target_path": report.target_path.strip(),
                "reason": " ".join(report.reason.split()),
            }
    result.violations, result.refusals = guard.violations, guard.refusals
    if result.error is not None:
        try:
            note = await put_back(port, guard)
        except ReMeError as exc:
            note = f"could not put {guard.subject.path if guard.subject else ''} back: {exc.message}"
        if note:
            result.error += f" ({note})"
    elif guard.subject is not None:
        _outcome(result, guard, guard.subject)
    return result

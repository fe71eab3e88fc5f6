"""digest_maintain (docs/spec.md §12.5): split overloaded nodes one at a time, each split all or nothing.

Candidates are the nodes past the overload bounds, most overloaded first; none → no model call. For
each of at most `max_splits`, an isolated agent run stages children and the parent's overview
through a `SplitGuard`; once it ends, the split is checked (report, links to each child, E-2 over
the union of the new parent's and the children's edges) and committed in one file transaction with
the run's journal record, so a kill leaves the old parent or the complete split. Runs under the
workspace's `dream` lock: a dream run and a maintain run never interleave. A node that cannot be read
is named in `skipped` and left as it is; one whose front matter cannot be read is not split (`declined`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

from reme.errors import Conflict, LLMUnavailable, ReMeError
from reme.llm.prompts import render_prompt
from reme.llm.runner import AgentFailed, run_agent
from reme.llm.tools import PathPolicy
from reme.pipelines.digest.maintain_guard import SplitGuard, SplitReport, check_split
from reme.pipelines.digest.nodes import Nodes, Overload, Skipped, load_nodes, skipped_lines
from reme.pipelines.dream.guard import UnitAborted
from reme.pipelines.journal.records import (
    FailedUnit,
    LostEdge,
    Modified,
    RunRecord,
    Violation,
    append_day_log,
    new_run_id,
    record_path,
    record_text,
)
from reme.pipelines.port import DigestRun, FileText, Notes
from reme.workspace import frontmatter
from reme.workspace.digest import is_node
from reme.workspace.textio import sha256_of
from reme.workspace.transaction import MAX_FILES, Change

TOOLS = ("read", "node_search", "digest_write", "digest_edit")
MAX_ANSWER_LINES = 100  # skipped files named in the answer (metadata.skipped has them all)


@dataclass(frozen=True)
class MaintainSettings:
    overload: Overload = Overload()
    max_children: int = 8
    max_nodes: int = 10_000
    max_parent_chars: int = 60_000  # a larger node is not split: the model would not see it whole


class Candidate(TypedDict):
    """An overloaded node: why, and its size (the most characters are split first)."""

    path: str
    reason: str
    chars: int


class SplitDone(TypedDict):
    parent: str
    children: list[str]
    reason: str


class Declined(TypedDict):
    parent: str
    reason: str


class SplitFailed(TypedDict):
    parent: str
    error: str


class ParentRefusal(TypedDict):
    parent: str
    refusal: str


class MaintainReport(TypedDict):
    """What a maintain run did (the job's metadata, also of a failed run)."""

    run_id: str
    candidates: list[Candidate]
    splits: list[SplitDone]
    declined: list[Declined]
    failed: list[SplitFailed]
    violations: list[Violation]
    refusals: list[ParentRefusal]
    skipped: list[Skipped]
    journal_path: str | None
    usage: dict[str, int]


@dataclass
class MaintainOutcome:
    answer: str
    metadata: MaintainReport


@dataclass
class _Journal:
    """The run's record as committed so far (its sha256, for the next compare-and-set)."""

    record: RunRecord
    path: str
    sha256: str | None = None


async def find_candidates(
    port: Notes, settings: MaintainSettings, path: str | None
) -> tuple[list[Candidate], list[Skipped]]:
    """Overloaded nodes `{path, reason, chars}`, most characters first (only `path` when given), and
    the nodes that could not be read."""
    if path is not None:
        if not is_node(path, port.folder("digest")):
            raise ReMeError(f"{path!r} is not a digest node ({port.folder('digest')}/<bucket>/<slug>.md)")
        node = await port.load(path)
        if node is None:
            raise ReMeError(f"no node {path!r}; see node_search or digest_audit")
        nodes = Nodes([node])
    else:
        nodes = await load_nodes(port, settings.max_nodes)
    found: list[Candidate] = []
    for node in nodes.loaded:
        reason = settings.overload.reason(node.content)
        if reason:
            found.append({"path": node.path, "reason": reason, "chars": len(node.content)})
    return sorted(found, key=lambda c: (-c["chars"], c["path"])), nodes.skipped


async def digest_maintain(
    port: DigestRun,
    settings: MaintainSettings,
    *,
    path: str | None,
    max_splits: int,
    add_usage: Callable[[dict[str, int]], None],
) -> MaintainOutcome:
    """One maintain run; failures of a split are recorded and make the run fail (`ReMeError`)."""
    if max_splits < 1:
        raise ReMeError("max_splits must be 1 or more")
    if not 1 <= settings.max_children <= MAX_FILES - 2:  # the children, the parent and the run record
        raise ReMeError(
            f"digest_maintain's max_children is {settings.max_children}: set it between 1 and "
            f"{MAX_FILES - 2} (one split commits its children, the parent and the run record together, "
            f"at most {MAX_FILES} files)"
        )
    for name, value in (("max_nodes", settings.max_nodes), ("max_parent_chars", settings.max_parent_chars)):
        if value < 1:
            raise ReMeError(f"digest_maintain's {name} is {value}: set it to 1 or more")
    started = datetime.now(port.tz)
    run_id = new_run_id(started)
    async with port.exclusive("dream", "maintain"):
        candidates, skipped = await find_candidates(port, settings, path)
        meta: MaintainReport = {
            "run_id": run_id,
            "candidates": candidates,
            "splits": [],
            "declined": [],
            "failed": [],
            "violations": [],
            "refusals": [],
            "skipped": skipped,
            "journal_path": None,
            "usage": {},
        }
        if not candidates:
            where = path or f"the digest ({port.folder('digest')}/)"
            lines = [f"maintain {run_id}: no overloaded node in {where}; nothing to split"]
            return MaintainOutcome("\n".join(lines + skipped_lines(skipped, MAX_ANSWER_LINES)), meta)
        try:
            port.model("memory")
        except LLMUnavailable as missing:
            raise ReMeError(
                f"{missing.message}; {len(candidates)} overloaded node(s) left as they are", dict(meta)
            ) from None
        journal = _Journal(
            RunRecord(run_id, "maintain", started.isoformat(timespec="seconds"), []),
            record_path(port, run_id),
        )
        usage: dict[str, int] = {}
        for candidate in candidates[:max_splits]:
            await _split(port, settings, candidate, journal, meta, usage)
        meta["usage"] = usage
        add_usage(usage)
        record = journal.record
        if record.actions or record.failed_units or record.violations or record.refusals:
            now = datetime.now(port.tz)
            record.finished_at = now.isoformat(timespec="seconds")
            await _save_record(port, journal, [])
            meta["journal_path"] = await append_day_log(
                port, record, now.date().isoformat(), now.strftime("%H:%M:%S")
            )
        answer = _summary(meta)
        if meta["failed"]:
            raise ReMeError(answer, dict(meta))
        return MaintainOutcome(answer, meta)


async def _save_record(port: Notes, journal: _Journal, changes: list[Change]) -> None:
    """Commit `changes` together with the record's current state (the record never says more than the files)."""
    text = record_text(journal.record)
    await port.commit([*changes, Change(journal.path, text, journal.sha256)])
    journal.sha256 = sha256_of(text)


async def _split(
    port: DigestRun,
    settings: MaintainSettings,
    candidate: Candidate,
    journal: _Journal,
    meta: MaintainReport,
    usage: dict[str, int],
) -> None:
    parent = await port.load(candidate["path"])
    if parent is None:
        return
    if len(parent.content) > settings.max_parent_chars:
        reason = f"{len(parent.content)} characters > max_parent_chars {settings.max_parent_chars}: split it by hand"
        meta["declined"].append({"parent": parent.path, "reason": reason})
        return
    problem = frontmatter.parse(parent.content).error
    if problem:  # when unsure, do not split: the children could not carry front matter that cannot be read
        meta["declined"].append({"parent": parent.path, "reason": f"{problem}; fix it, then split"})
        return
    guard = SplitGuard(port, port.folder("digest"), parent, settings.max_children)
    error, report = await _run_agent(port, guard, candidate, usage)
    lost: list[LostEdge] = []
    record = journal.record
    meta["refusals"].extend({"parent": parent.path, "refusal": text} for text in guard.refusals)
    record.refusals.extend({"unit": parent.path, "refusal": text} for text in guard.refusals)
    record.violations.extend(guard.violations)  # refused edits: recorded even when the retry fixed them
    meta["violations"].extend(guard.violations)
    if error is None and report is not None and not report.split:
        meta["declined"].append({"parent": parent.path, "reason": report.reason})
        return
    if error is None and report is not None:
        error, lost = check_split(guard, report)
    if error is None and report is not None:
        error = await _commit_split(port, guard, parent, report, journal)
        if error is None:
            meta["splits"].append(
                {"parent": parent.path, "children": sorted(guard.children), "reason": report.reason}
            )
            return
    failure: FailedUnit = {"unit": parent.path, "error": error or "", "paths": [parent.path]}
    meta["failed"].append({"parent": parent.path, "error": error or ""})
    record.failed_units.append(failure)
    if lost:
        violation: Violation = {"path": parent.path, "missing_edges": lost}
        record.violations.append(violation)
        meta["violations"].append(violation)


async def _run_agent(
    port: DigestRun, guard: SplitGuard, candidate: Candidate, usage: dict[str, int]
) -> tuple[str | None, SplitReport | None]:
    handle = port.model("memory")
    parent = guard.parent
    variables = {
        "run": f"split:{parent.path}",
        "parent_path": parent.path,
        "bucket_folder": f"{guard.digest}/{guard.bucket}",
        "digest": guard.digest,
        "max_children": guard.max_children,
        "overload": candidate["reason"],
    }
    folders = tuple(f"{port.folder(role)}/" for role in ("daily", "resource", "digest"))
    try:
        run = await run_agent(
            model=handle.build(variables),
            settings=handle.settings,
            run_job=guard.run_job,
            instructions=render_prompt("digest_maintain_split", variables),
            prompt=render_prompt("digest_maintain_split_task", variables) + f"\n\n{parent.content}",
            tools=port.agent_tools(TOOLS),
            policy=PathPolicy(read=folders, write=(f"{guard.digest}/{guard.bucket}/",)),
            output_type=SplitReport,
        )
    except AgentFailed as failure:
        _add(usage, failure.usage)
        cause = failure.__cause__
        return (cause.message if isinstance(cause, UnitAborted) else f"AgentFailed: {failure.message}"), None
    _add(usage, run.usage)
    return None, run.output


async def _commit_split(
    port: Notes, guard: SplitGuard, parent: FileText, report: SplitReport, journal: _Journal
) -> str | None:
    """Write the children, the overview and the journal record in one transaction; an error or None."""
    assert guard.parent_text is not None
    record = journal.record
    children = sorted(guard.children)
    record.actions.append(
        {
            "unit": parent.path,
            "action": "SPLIT",
            "target_path": parent.path,
            "reason": f"into {', '.join(children)}: {' '.join(report.reason.split())}",
        }
    )
    record.created.extend(children)
    record.created_sha256.update({child: sha256_of(guard.children[child]) for child in children})
    record.modified.append(Modified(parent.path, parent.sha256, parent.content, sha256_of(guard.parent_text)))
    changes = [Change(child, guard.children[child], None) for child in children]
    changes.append(Change(parent.path, guard.parent_text, parent.sha256))
    try:
        await _save_record(port, journal, changes)
    except (Conflict, ReMeError, OSError) as exc:  # the transaction rolled back what it had written
        detail = exc.message if isinstance(exc, ReMeError) else str(exc)
        record.actions.pop()
        del record.created[-len(children) :]
        for child in children:
            record.created_sha256.pop(child, None)
        record.modified.pop()
        return f"{type(exc).__name__}: {detail}; nothing was written"
    return None


def _add(total: dict[str, int], usage: Mapping[str, object]) -> None:
    for key, value in usage.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + int(value)


def _summary(meta: MaintainReport) -> str:
    splits, failed, declined = meta["splits"], meta["failed"], meta["declined"]
    lines = [
        f"maintain {meta['run_id']}: {len(meta['candidates'])} overloaded node(s); "
        f"{len(splits)} split, {len(declined)} left as they are, {len(failed)} failed"
    ]
    lines += [f"SPLIT {s['parent']} → {', '.join(s['children'])} — {s['reason']}" for s in splits]
    lines += [f"KEPT {d['parent']} — {d['reason']}" for d in declined]
    lines += [f"FAILED {f['parent']}: {f['error']} (the node is unchanged)" for f in failed]
    shown = len(splits) + len(failed) + len(declined)
    lines += [f"OVERLOADED {c['path']} — {c['reason']}" for c in meta["candidates"][shown:]]
    return "\n".join(lines + skipped_lines(meta["skipped"], MAX_ANSWER_LINES))

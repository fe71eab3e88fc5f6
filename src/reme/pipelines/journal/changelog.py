"""The `journal` job: a readable changelog of dream, maintain and revert runs (no writes).

Without `run_id`: the newest runs first (`limit`, optionally one `kind`), each with its actions and
failures. With `run_id`: that run in detail, with a unified diff per node it changed, pre-image
against the after-state. The journal keeps only the after-state's sha256: when the file still has
it, the file is the after-state; otherwise the diff is against the current file and says so.
Diffs are cut at `max_diff_lines` per node. Each diff also says what `dream_revert` (without force)
would do to the file now (`revert`, `revert_reason`), decided by the revert's own rule.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TypedDict

from reme.errors import ReMeError
from reme.pipelines.journal.records import (
    Action,
    FailedUnit,
    RunRecord,
    Violation,
    journal_folder,
    load_record,
    read_record,
)
from reme.pipelines.journal.revert import NOT_A_NODE, Decision, Target, annotated, decide, revertible, targets
from reme.pipelines.port import FileText, Notes

MAX_SCANNED = 2000  # run records read for one listing at most


@dataclass
class ChangelogOutcome:
    answer: str
    metadata: dict[str, object] = field(default_factory=dict)


class RunBrief(TypedDict):
    """A run as the listing shows it (the job's `runs` metadata)."""

    run_id: str
    kind: str
    started_at: str
    finished_at: str
    reverts: str | None
    actions: list[Action]
    failed_units: list[FailedUnit]
    violations: list[Violation]
    error: str | None


class Skipped(TypedDict):
    path: str
    reason: str


class FileDiff(TypedDict):
    path: str
    change: str  # created, deleted or modified
    diff: str
    truncated: bool
    note: str
    revert: str  # what dream_revert would do now: restore, delete, skip or unchanged
    revert_reason: str


def _brief(record: RunRecord) -> RunBrief:
    return {
        "run_id": record.run_id,
        "kind": record.kind,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "reverts": record.reverts,
        "actions": list(record.actions),
        "failed_units": list(record.failed_units),
        "violations": list(record.violations),
        "error": record.error,
    }


def _kind(record: RunRecord) -> str:
    """`dream` for auto_dream and dream_cron runs, else the record's kind (`maintain`, `revert`, `annotate`)."""
    return record.kind if record.kind in ("maintain", "revert", "annotate") else "dream"


def _lines(run: RunBrief) -> list[str]:
    about = f" (reverts {run['reverts']})" if run["reverts"] else ""
    lines = [f"{run['started_at']} {run['kind']} {run['run_id']}{about}"]
    if run["error"]:
        lines.append(f"  run failed: {run['error']}")
    lines += [f"  {a['action']} {a['target_path']} — {a['reason']}" for a in run["actions"]]
    lines += [f"  FAILED {f['unit']}: {f['error']}" for f in run["failed_units"]]
    return lines


async def changelog(port: Notes, *, limit: int, kind: str | None) -> ChangelogOutcome:
    entries = await port.list_files(f"{journal_folder(port)}/runs", extensions=(".json",))
    runs: list[RunBrief] = []
    skipped: list[Skipped] = []  # records that cannot be read: one line each, the rest listed
    for entry in reversed(entries[-MAX_SCANNED:]):  # run ids sort by start time
        record, problem = await read_record(port, entry.path)
        if record is None:
            skipped.append({"path": entry.path, "reason": problem})
            continue
        if kind is None or _kind(record) == kind:
            runs.append(_brief(record))
            if len(runs) >= limit:
                break
    which = f"{kind} " if kind else ""
    head = (
        f"{len(runs)} most recent {which}run(s), newest first"
        if runs
        else f"no {which}run in the journal yet"
    )
    notes = [f"skipped {s['path']}: {s['reason']}" for s in skipped]
    answer = "\n".join([head, *(line for run in runs for line in _lines(run)), *notes])
    return ChangelogOutcome(answer, {"runs": runs, "skipped_records": skipped})


async def run_detail(port: Notes, *, run_id: str, max_diff_lines: int) -> ChangelogOutcome:
    try:
        record = await load_record(port, run_id)
    except ValueError as exc:
        raise ReMeError(str(exc)) from None
    if record is None:
        raise ReMeError(f"no run {run_id!r} in the journal; `reme journal` lists the runs")
    run = _brief(record)
    any_note = await annotated(port, record)
    diffs = [await _diff(port, target, max_diff_lines, any_note) for target in targets(record)]
    lines = _lines(run)
    for diff in diffs:
        lines += [
            "",
            f"--- {diff['path']}: {diff['change']}" + (f" ({diff['note']})" if diff["note"] else ""),
        ]
        lines.append(diff["diff"] or "(no difference)")
    return ChangelogOutcome("\n".join(lines), {"run": run, "diffs": diffs})


async def _diff(port: Notes, target: Target, max_lines: int, any_note: bool) -> FileDiff:
    current = await port.load(target.path)
    before = target.content
    change = "created" if before is None else "deleted" if target.after is None else "modified"
    note = ""
    if not target.known:
        after = None
        note = "the run recorded no version of it"
    elif target.after is None:
        after = None
        if current is not None:
            note = "it exists again now"
    elif current is not None and current.sha256 == target.after:
        after = current.content
    else:
        after = current.content if current else None
        state = "the current file" if current else "nothing (the file is gone)"
        note = f"the run's after-state is no longer on disk; compared with {state}"
    lines = list(
        difflib.unified_diff(
            (before or "").splitlines(keepends=True),
            (after or "").splitlines(keepends=True),
            f"a/{target.path}" if before is not None else "/dev/null",
            f"b/{target.path}" if after is not None else "/dev/null",
        )
    )
    cut = len(lines) > max_lines
    text = "".join(lines[:max_lines]).rstrip("\n")
    if cut:
        text += f"\n… {len(lines) - max_lines} more diff line(s) not shown (max_diff_lines)"
    would = _would(port, target, current, any_note)
    return {
        "path": target.path,
        "change": change,
        "diff": text,
        "truncated": cut,
        "note": note,
        "revert": would.action,
        "revert_reason": would.reason,
    }


def _would(port: Notes, target: Target, current: FileText | None, any_note: bool) -> Decision:
    """What a revert without force would do to this file as it is now."""
    if not revertible(port, target.path, any_note):
        return NOT_A_NODE
    return decide(target, current, force=False)

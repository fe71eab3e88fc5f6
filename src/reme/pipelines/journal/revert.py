"""dream_revert (docs/spec.md §12.5): undo one dream, maintain, annotate or revert run from its journal record.

Each file the run touched goes back to its state before the run: a modified node gets its earliest
recorded pre-image, a created node is deleted, a node a revert deleted is recreated. Compare-and-set
against the run's after-state: a file changed since (by a person, a later run) is skipped and
reported unless `force`. A file already in its before-state is left alone, so a second revert
changes nothing. Every change, plus the revert's own record (kind `revert`, which can be reverted
in turn), is written in one file transaction under the `dream` lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

from reme.errors import ReMeError
from reme.pipelines.journal.records import (
    Modified,
    RunRecord,
    append_day_log,
    load_record,
    new_run_id,
    record_path,
    record_text,
)
from reme.pipelines.port import Notes, NotesRun, Places
from reme.workspace.digest import is_node
from reme.workspace.textio import sha256_of
from reme.workspace.transaction import Change


class SkippedPath(TypedDict):
    path: str
    reason: str


class DeadLink(TypedDict):
    """A link that still points at a file the revert deleted."""

    path: str
    source_path: str


class RevertReport(TypedDict):
    """What a revert did (the job's metadata)."""

    run_id: str
    restored: list[str]
    deleted: list[str]
    skipped: list[SkippedPath]
    unchanged: list[str]
    inbound: list[DeadLink]
    revert_run_id: str | None
    journal_path: str | None


@dataclass
class RevertOutcome:
    answer: str
    metadata: RevertReport


@dataclass
class Target:
    """What one path must go back to (`content` None: absent) and what the run left (`after` None: absent)."""

    path: str
    content: str | None
    after: str | None
    known: bool = True  # False: the run recorded no version of what it left


def targets(record: RunRecord) -> list[Target]:
    """Per path, the state before the run and the state it left, from the record's entries in order."""
    found: dict[str, Target] = {}
    for entry in record.deleted:
        found[entry["path"]] = Target(entry["path"], entry.get("content_before"), None)
    created_sha = record.created_sha256
    for path in record.created:
        found.setdefault(path, Target(path, None, created_sha.get(path), path in created_sha))
    for modified in record.modified:
        if modified.path in found:
            found[modified.path].after, found[modified.path].known = modified.sha256_after, True
        else:
            found[modified.path] = Target(modified.path, modified.content_before, modified.sha256_after)
    return list(found.values())


async def dream_revert(port: NotesRun, *, run_id: str, force: bool) -> RevertOutcome:
    try:
        record = await load_record(port, run_id)
    except ValueError as exc:
        raise ReMeError(str(exc)) from None
    if record is None:
        raise ReMeError(
            f"no run {run_id!r} in {port.folder('journal')}/dream/runs/; `reme journal` lists the runs"
        )
    started = datetime.now(port.tz)
    revert = RunRecord(
        new_run_id(started), "revert", started.isoformat(timespec="seconds"), [], reverts=run_id
    )
    meta: RevertReport = {
        "run_id": run_id,
        "restored": [],
        "deleted": [],
        "skipped": [],
        "unchanged": [],
        "inbound": [],
        "revert_run_id": None,
        "journal_path": None,
    }
    any_note = await _annotated(port, record)
    async with port.exclusive("dream", "revert"):
        changes = [
            change
            for target in targets(record)
            if (change := await _plan(port, target, force, revert, meta, any_note))
        ]
        if changes:
            revert.finished_at = datetime.now(port.tz).isoformat(timespec="seconds")
            done = await port.commit(
                [*changes, Change(record_path(port, revert.run_id), record_text(revert), None)]
            )
            meta["inbound"] = [
                {"path": entry.path, "source_path": source} for entry in done for source in entry.inbound
            ]
            meta["revert_run_id"] = revert.run_id
            now = datetime.now(port.tz)
            meta["journal_path"] = await append_day_log(
                port, revert, now.date().isoformat(), now.strftime("%H:%M:%S")
            )
    return RevertOutcome(_summary(meta, record.kind), meta)


async def _annotated(port: Notes, record: RunRecord) -> bool:
    """Whether the run is an `annotate_dates` run (or a revert of one): notes outside digest/ too."""
    if record.kind == "revert" and record.reverts is not None:
        try:
            undone = await load_record(port, record.reverts)
        except ValueError:
            return False
        return undone is not None and undone.kind == "annotate"
    return record.kind == "annotate"


def _revertible(port: Places, path: str, any_note: bool) -> bool:
    """Runs write digest nodes only; an annotate run, Markdown notes outside the recorded folders."""
    if is_node(path, port.folder("digest")):
        return True
    recorded = {port.folder(role) for role in ("session", "journal", "metadata")}
    return any_note and path.endswith(".md") and path.split("/", 1)[0] not in recorded


async def _plan(
    port: Notes, target: Target, force: bool, revert: RunRecord, meta: RevertReport, any_note: bool
) -> Change | None:
    """The change that puts this path back (recorded in `revert` and `meta`), or None."""
    if not _revertible(port, target.path, any_note):  # a record is a file: never trusted beyond this
        why = "not a digest node; a revert only puts digest nodes back"
        meta["skipped"].append({"path": target.path, "reason": why})
        return None
    current = await port.load(target.path)
    current_sha = current.sha256 if current else None
    wanted_sha = sha256_of(target.content) if target.content is not None else None
    if current_sha == wanted_sha:
        meta["unchanged"].append(target.path)
        return None
    as_left = target.known and current_sha == target.after
    if not as_left and not force:
        if not target.known:
            why = "the run recorded no version of it; force=true reverts it anyway"
        elif current is None:
            why = "deleted since the run; force=true recreates it"
        else:
            why = "changed since the run; force=true overwrites that change"
        meta["skipped"].append({"path": target.path, "reason": why})
        revert.actions.append({"unit": "", "action": "SKIP", "target_path": target.path, "reason": why})
        return None
    how = "as the run left it" if as_left else "changed since the run, reverted with force"
    if target.content is None:
        assert current is not None
        meta["deleted"].append(target.path)
        revert.deleted.append(
            {"path": target.path, "sha256_before": current.sha256, "content_before": current.content}
        )
        revert.actions.append({"unit": "", "action": "DELETE", "target_path": target.path, "reason": how})
        return Change(target.path, None, current.sha256)
    meta["restored"].append(target.path)
    if current is None:
        revert.created.append(target.path)
        revert.created_sha256[target.path] = wanted_sha or ""
    else:
        revert.modified.append(Modified(target.path, current.sha256, current.content, wanted_sha or ""))
    revert.actions.append({"unit": "", "action": "RESTORE", "target_path": target.path, "reason": how})
    return Change(target.path, target.content, current_sha)


def _summary(meta: RevertReport, kind: str) -> str:
    restored, deleted, skipped = meta["restored"], meta["deleted"], meta["skipped"]
    if not (restored or deleted):
        head = f"revert of {kind} run {meta['run_id']}: nothing changed"
        if not skipped:
            return f"{head}; every file is as it was before that run (already reverted)"
    else:
        head = (
            f"revert {meta['revert_run_id']} of {kind} run {meta['run_id']}: {len(restored)} restored, "
            f"{len(deleted)} deleted, {len(skipped)} skipped"
        )
    lines = [head]
    lines += [f"RESTORED {path}" for path in restored]
    lines += [f"DELETED {path}" for path in deleted]
    lines += [f"SKIPPED {s['path']} — {s['reason']}" for s in skipped]
    lines += [f"DEAD LINK {i['source_path']} still links the deleted {i['path']}" for i in meta["inbound"]]
    return "\n".join(lines)

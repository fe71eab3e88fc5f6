"""dream_revert (docs/spec.md §12.5): undo one dream, maintain, annotate or revert run from its journal record.

Each file the run touched goes back to its state before the run: a modified node gets its earliest
recorded pre-image, a created node is deleted, a node a revert deleted is recreated. Compare-and-set
against the run's after-state: a file changed since (by a person, a later run) is skipped and
reported unless `force`. A file already in its before-state is left alone, so a second revert
changes nothing. Every change, plus the revert's own record (kind `revert`, which can be reverted
in turn), is written in one file transaction under the `dream` lock.

A caller that showed a person what `force` will overwrite passes `confirmed` (path -> the sha256 it
showed, from `skipped_sha256`; null: the file was absent): force then overwrites only those
versions, and a file changed again since it was shown is skipped and named, never lost unseen.
`decide` is the one rule, so the `journal` job's preview says what a revert would really do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypedDict

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
from reme.pipelines.port import FileText, Notes, NotesRun, Places
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
    skipped_sha256: dict[str, str | None]  # each skipped file as it is now: what `confirmed` may name
    forced: list[str]  # restored or deleted over changes made since the run (force)
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


@dataclass(frozen=True)
class Decision:
    """What a revert does to one path, and why (`forced`: it overwrites a change made since the run)."""

    action: Literal["restore", "delete", "skip", "unchanged"]
    reason: str
    forced: bool = False


NOT_A_NODE = Decision("skip", "not a digest node; a revert only puts digest nodes back")


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


def decide(
    target: Target,
    current: FileText | None,
    *,
    force: bool,
    confirmed: Mapping[str, str | None] | None = None,
) -> Decision:
    """What reverting `target` does with the file as it is now (`current`, None: absent)."""
    current_sha = current.sha256 if current else None
    wanted_sha = sha256_of(target.content) if target.content is not None else None
    if current_sha == wanted_sha:
        return Decision("unchanged", "already as it was before the run")
    action: Literal["restore", "delete"] = "delete" if target.content is None else "restore"
    if target.known and current_sha == target.after:
        return Decision(action, "as the run left it")
    state, hint = _changed(target, current)
    if not force:
        return Decision("skip", f"{state}; {hint}")
    if confirmed is not None:
        if target.path not in confirmed:
            return Decision("skip", f"{state}, and not among the confirmed files; nothing overwritten")
        if confirmed[target.path] != current_sha:
            now = "deleted" if current is None else "changed"
            return Decision(
                "skip",
                f"{now} again after it was confirmed; nothing overwritten — revert again to see what it holds now",
            )
    return Decision(action, "changed since the run, reverted with force", forced=True)


def _changed(target: Target, current: FileText | None) -> tuple[str, str]:
    """How the file differs from what the run left, and what force does about it."""
    if not target.known:
        return "the run recorded no version of it", "force=true reverts it anyway"
    if current is None:
        return "deleted since the run", "force=true recreates it"
    if target.after is None:
        return "created again since the run deleted it", "force=true overwrites it"
    return "changed since the run", "force=true overwrites that change"


def check_confirmed(confirmed: object, force: bool) -> dict[str, str | None] | None:
    """`confirmed` as a mapping, or a `ReMeError` saying how to pass it."""
    if confirmed is None:
        return None
    if not force:
        raise ReMeError("confirmed names the files force=true may overwrite; pass force=true with it")
    if not isinstance(confirmed, Mapping) or not all(
        isinstance(path, str) and (sha is None or isinstance(sha, str)) for path, sha in confirmed.items()
    ):
        raise ReMeError(
            "confirmed must map each path to the sha256 it was shown with (null: absent), as the "
            "revert's skipped_sha256 gives it"
        )
    return dict(confirmed)


async def dream_revert(
    port: NotesRun, *, run_id: str, force: bool, confirmed: object = None
) -> RevertOutcome:
    expected = check_confirmed(confirmed, force)
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
        "skipped_sha256": {},
        "forced": [],
        "inbound": [],
        "revert_run_id": None,
        "journal_path": None,
    }
    any_note = await annotated(port, record)
    async with port.exclusive("dream", "revert"):  # decided and committed (compare-and-set) under the lock
        changes = []
        for target in targets(record):
            current, decision = None, NOT_A_NODE  # a record is a file: what it names is not trusted
            if revertible(port, target.path, any_note):
                current = await port.load(target.path)
                decision = decide(target, current, force=force, confirmed=expected)
            change = _plan(target, current, decision, revert, meta)
            if change is not None:
                changes.append(change)
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


async def annotated(port: Notes, record: RunRecord) -> bool:
    """Whether the run is an `annotate_dates` run (or a revert of one): notes outside digest/ too."""
    if record.kind == "revert" and record.reverts is not None:
        try:
            undone = await load_record(port, record.reverts)
        except ValueError:
            return False
        return undone is not None and undone.kind == "annotate"
    return record.kind == "annotate"


def revertible(port: Places, path: str, any_note: bool) -> bool:
    """Runs write digest nodes only; an annotate run, Markdown notes outside the recorded folders."""
    if is_node(path, port.folder("digest")):
        return True
    recorded = {port.folder(role) for role in ("session", "journal", "metadata")}
    return any_note and path.endswith(".md") and path.split("/", 1)[0] not in recorded


def _plan(
    target: Target, current: FileText | None, decision: Decision, revert: RunRecord, meta: RevertReport
) -> Change | None:
    """The change that carries out `decision` (recorded in `revert` and `meta`), or None."""
    path = target.path
    if decision.action == "unchanged":
        meta["unchanged"].append(path)
        return None
    if decision.action == "skip":
        meta["skipped"].append({"path": path, "reason": decision.reason})
        if decision is not NOT_A_NODE:
            meta["skipped_sha256"][path] = current.sha256 if current else None
            revert.actions.append(
                {"unit": "", "action": "SKIP", "target_path": path, "reason": decision.reason}
            )
        return None
    if decision.forced:
        meta["forced"].append(path)
    if decision.action == "delete":
        assert current is not None
        meta["deleted"].append(path)
        revert.deleted.append(
            {"path": path, "sha256_before": current.sha256, "content_before": current.content}
        )
        revert.actions.append(
            {"unit": "", "action": "DELETE", "target_path": path, "reason": decision.reason}
        )
        return Change(path, None, current.sha256)
    wanted_sha = sha256_of(target.content or "")
    meta["restored"].append(path)
    if current is None:
        revert.created.append(path)
        revert.created_sha256[path] = wanted_sha
    else:
        revert.modified.append(Modified(path, current.sha256, current.content, wanted_sha))
    revert.actions.append({"unit": "", "action": "RESTORE", "target_path": path, "reason": decision.reason})
    return Change(path, target.content, current.sha256 if current else None)


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
    lost = " (forced: its changes since the run are overwritten; the revert's record keeps them)"
    lines += [f"RESTORED {path}{lost if path in meta['forced'] else ''}" for path in restored]
    lines += [f"DELETED {path}{lost if path in meta['forced'] else ''}" for path in deleted]
    lines += [f"SKIPPED {s['path']} — {s['reason']}" for s in skipped]
    lines += [f"DEAD LINK {i['source_path']} still links the deleted {i['path']}" for i in meta["inbound"]]
    return "\n".join(lines)

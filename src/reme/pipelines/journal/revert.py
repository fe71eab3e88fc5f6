"""dream_revert (docs/spec.md §12.5): undo one dream, maintain, annotate or revert run from its journal record.

Each file the run touched goes back to its state before the run: a modified node gets its earliest
recorded pre-image, a created node is deleted, a node a revert deleted is recreated. Compare-and-set
against the run's after-state: a file changed since (by a person, a later run) is skipped and
reported unless `force`. A file already in its before-state is left alone, so a second revert
changes nothing. Every change, plus the revert's own record (kind `revert`, which can be reverted
in turn), is written in one file transaction under the `dream` lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reme.errors import ReMeError
from reme.pipelines.dream.integrate import Modified
from reme.pipelines.journal.records import (
    RunRecord,
    append_day_log,
    load_record,
    new_run_id,
    record_path,
    record_text,
)
from reme.pipelines.port import MemoryPort
from reme.workspace.digest import is_node
from reme.workspace.textio import sha256_of
from reme.workspace.transaction import Change


@dataclass
class RevertOutcome:
    answer: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Target:
    """What one path must go back to (`content` None: absent) and what the run left (`after` None: absent)."""

    path: str
    content: str | None
    after: str | None
    known: bool = True  # False: the run recorded no version of what it left


def targets(record: dict[str, Any]) -> list[_Target]:
    """Per path, the state before the run and the state it left, from the record's entries in order."""
    found: dict[str, _Target] = {}
    for entry in record.get("deleted") or []:
        found[entry["path"]] = _Target(entry["path"], entry.get("content_before"), None)
    created_sha = record.get("created_sha256") or {}
    for path in record.get("created") or []:
        found.setdefault(path, _Target(path, None, created_sha.get(path), path in created_sha))
    for entry in record.get("modified") or []:
        path = entry["path"]
        if path in found:
            found[path].after, found[path].known = entry["sha256_after"], True
        else:
            found[path] = _Target(path, entry.get("content_before"), entry["sha256_after"])
    return list(found.values())


async def dream_revert(port: MemoryPort, *, run_id: str, force: bool) -> RevertOutcome:
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
    meta: dict[str, Any] = {
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
    return RevertOutcome(_summary(meta, record.get("kind", "")), meta)


async def _annotated(port: MemoryPort, record: dict[str, Any]) -> bool:
    """Whether the run is an `annotate_dates` run (or a revert of one): notes outside digest/ too."""
    if record.get("kind") == "revert" and isinstance(record.get("reverts"), str):
        try:
            record = await load_record(port, record["reverts"]) or {}
        except ValueError:
            return False
    return record.get("kind") == "annotate"


def _revertible(port: MemoryPort, path: str, any_note: bool) -> bool:
    """Runs write digest nodes only; an annotate run, Markdown notes outside the recorded folders."""
    if is_node(path, port.folder("digest")):
        return True
    recorded = {port.folder(role) for role in ("session", "journal", "metadata")}
    return any_note and path.endswith(".md") and path.split("/", 1)[0] not in recorded


async def _plan(
    port: MemoryPort, target: _Target, force: bool, revert: RunRecord, meta: dict[str, Any], any_note: bool
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


def _summary(meta: dict[str, Any], kind: str) -> str:
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

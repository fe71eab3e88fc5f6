"""auto_dream (docs/spec.md §12): extract → integrate → finish, under the workspace's exclusive dream lock.

Only what was processed is checkpointed: files the model saw, minus the evidence of failed units
(the next run retries them); files left out by the size bounds wait for the next run too. Nothing
changed → no model is involved and nothing is written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NotRequired, TypedDict

from pydantic import JsonValue

from reme.errors import LLMUnavailable, ReMeError
from reme.pipelines.dream.extract import ExtractionFailed, extract
from reme.pipelines.dream.integrate import Recall, UnitResult, integrate
from reme.pipelines.dream.material import Bounds, pack
from reme.pipelines.dream.scan import Scan, checkpoint, scan
from reme.pipelines.journal.records import (
    Action,
    FailedUnit,
    Refusal,
    RunRecord,
    Violation,
    new_run_id,
    write_journal,
)
from reme.pipelines.port import MemoryPort, Notes
from reme.workspace.dates import parse_date

Progress = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class DreamSettings:
    buckets: Sequence[str]
    buckets_page: str
    bounds: Bounds = Bounds()
    recall: Recall = Recall()


class DreamUsage(TypedDict):
    """Model usage: totals, then per phase and per unit."""

    input_tokens: int
    output_tokens: int
    requests: int
    tool_calls: int
    extract: dict[str, int]
    integrate: dict[str, int]
    units: list[dict[str, str | int]]  # {unit, <usage key>: count}


class DreamReport(TypedDict):
    """What a dream run did (the job's metadata, also of a failed run)."""

    run_id: str
    window: list[str]
    scanned: list[str]
    changed: list[str]
    units: list[dict[str, JsonValue]]
    actions: list[Action]
    failed_units: list[FailedUnit]
    checkpointed: list[str]
    modified_paths: list[str]
    journal_path: str | None
    usage: DreamUsage
    notes: NotRequired[list[str]]
    violations: NotRequired[list[Violation]]
    refusals: NotRequired[list[Refusal]]


@dataclass
class DreamOutcome:
    """A run that succeeded (failures raise `ReMeError` carrying the same complete metadata)."""

    answer: str
    metadata: DreamReport


async def _quiet(_line: str) -> None:
    return None


async def auto_dream(
    port: MemoryPort,
    settings: DreamSettings,
    *,
    date_text: str | None,
    scan_days: int,
    max_units: int,
    hint: str,
    add_usage: Callable[[dict[str, int]], None],
    progress: Progress = _quiet,
    kind: str = "auto_dream",
) -> DreamOutcome:
    """One dream run; a second concurrent run raises `ReMeError` at once (the lock says who holds it)."""
    last = parse_date(date_text) if date_text else port.today()
    if scan_days < 1 or max_units < 1:
        raise ValueError("scan_days and max_units must be 1 or more")
    started = datetime.now(port.tz)
    run_id = new_run_id(started)
    async with port.exclusive("dream"):
        found = await scan(port, last, scan_days)
        meta: DreamReport = {
            "run_id": run_id,
            "window": list(found.window),
            "scanned": [entry.path for entry in found.files],
            "changed": [entry.path for entry in found.changed],
            "units": [],
            "actions": [],
            "failed_units": [],
            "checkpointed": [],
            "modified_paths": [],
            "journal_path": None,
            "usage": _usage({}, {}, []),
        }
        if not found.changed:
            return DreamOutcome(
                f"nothing changed in daily/ from {found.window[0]} to {found.window[1]}", meta
            )
        try:
            port.model("memory")  # a missing model fails here, before anything is read or written
        except LLMUnavailable as missing:
            raise ReMeError(
                f"{missing.message}; {len(found.changed)} changed file(s) left for the next run", dict(meta)
            ) from None
        record = RunRecord(run_id, kind, started.isoformat(timespec="seconds"), list(found.window))
        return await _dream(port, settings, found, record, meta, max_units, hint, add_usage, progress)


async def _dream(
    port: MemoryPort,
    settings: DreamSettings,
    found: Scan,
    record: RunRecord,
    meta: DreamReport,
    max_units: int,
    hint: str,
    add_usage: Callable[[dict[str, int]], None],
    progress: Progress,
) -> DreamOutcome:
    material = await pack(port, [entry.path for entry in found.changed], settings.bounds)
    await progress(f"extracting from {len(material.shown)} changed file(s)")
    try:
        extracted = await extract(
            port,
            material,
            buckets=settings.buckets,
            buckets_page=settings.buckets_page,
            max_units=max_units,
            hint=hint,
            add_usage=add_usage,
        )
    except ExtractionFailed as failure:
        meta["usage"] = _usage(failure.usage, {}, [])
        record.error = failure.message
        meta["journal_path"] = await _finish_journal(port, record)
        raise ReMeError(failure.message, dict(meta)) from None
    units = extracted.units
    meta["units"] = [unit.model_dump() for unit in units]
    meta["notes"] = extracted.notes + [
        f"{path}: left for the next run (size bounds)" for path in material.left_out
    ]
    results: list[UnitResult] = []
    for number, unit in enumerate(units, 1):
        await progress(f"unit {number}/{len(units)} {unit.name!r}: integrating")
        try:
            result = await integrate(
                port,
                unit,
                buckets=settings.buckets,
                buckets_page=settings.buckets_page,
                bounds=settings.bounds,
                recall_settings=settings.recall,
            )
        except Exception as exc:  # one unit's surprise must not lose the others' record
            result = UnitResult(
                unit, {}, error=f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}"
            )
        add_usage(result.usage)
        results.append(result)
        done = result.action
        line = f"{done['action']} {done['target_path']}" if done else f"FAILED {result.error}"
        await progress(f"unit {number}/{len(units)} {unit.name!r}: {line}")
    _collect(record, meta, results)
    meta["usage"] = _usage(extracted.usage, _sum(r.usage for r in results), results)
    if record.actions or record.failed_units:  # journal first: a revert must know what was written
        meta["journal_path"] = await _finish_journal(port, record)
    failed_paths = {path for result in results if result.error for path in result.unit.evidence_paths}
    meta["checkpointed"] = checkpoint(port, found, set(material.shown) - failed_paths)
    answer = summary(meta)
    if record.failed_units:
        raise ReMeError(answer, dict(meta))
    return DreamOutcome(answer, meta)


def _collect(record: RunRecord, meta: DreamReport, results: list[UnitResult]) -> None:
    record.units = list(meta["units"])
    for result in results:
        if result.action:
            record.actions.append(result.action)
        if result.error:
            failure: FailedUnit = {
                "unit": result.unit.name,
                "error": result.error,
                "paths": list(result.unit.evidence_paths),
            }
            record.failed_units.append(failure)
        if result.created:
            record.created.append(result.created)
            if result.created_sha256:
                record.created_sha256[result.created] = result.created_sha256
        if result.modified:
            record.modified.append(result.modified)
        record.violations.extend(result.violations)
        record.refusals.extend({"unit": result.unit.name, "refusal": text} for text in result.refusals)
    meta["actions"] = record.actions
    meta["failed_units"] = record.failed_units
    meta["modified_paths"] = sorted({*record.created, *(m.path for m in record.modified)})
    meta["violations"] = record.violations
    meta["refusals"] = record.refusals


async def _finish_journal(port: Notes, record: RunRecord) -> str:
    now = datetime.now(port.tz)
    record.finished_at = now.isoformat(timespec="seconds")
    return await write_journal(port, record, now.date().isoformat(), now.strftime("%H:%M:%S"))


def summary(meta: DreamReport) -> str:
    """Counts by action, one line per unit, then the failures."""
    actions, failures = meta["actions"], meta["failed_units"]
    counts = Counter(action["action"] for action in actions)
    head = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "no node changed"
    lines = [f"dream {meta['run_id']}: {len(meta['units'])} unit(s); {head}; {len(failures)} failed"]
    lines += [f"{a['action']} {a['target_path']} — {a['reason']}" for a in actions]
    lines += [
        f"FAILED {f['unit']}: {f['error']} (sources kept for the next run: {', '.join(f['paths'])})"
        for f in failures
    ]
    return "\n".join(lines)


def _sum(usages: Iterable[Mapping[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for usage in usages:
        for key, value in usage.items():
            total[key] = total.get(key, 0) + int(value)
    return total


def _usage(
    extract_usage: Mapping[str, int], integrate_usage: Mapping[str, int], results: list[UnitResult]
) -> DreamUsage:
    """Totals, then per phase and per unit."""
    totals = _sum([extract_usage, integrate_usage])
    return {
        "input_tokens": totals.get("input_tokens", 0),
        "output_tokens": totals.get("output_tokens", 0),
        "requests": totals.get("requests", 0),
        "tool_calls": totals.get("tool_calls", 0),
        "extract": dict(extract_usage),
        "integrate": dict(integrate_usage),
        "units": [{"unit": r.unit.name, **r.usage} for r in results],
    }

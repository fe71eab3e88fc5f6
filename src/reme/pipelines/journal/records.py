"""The dream journal (docs/spec.md §12.4): a readable day log and one machine-readable record per run.

`journal/dream/<day>.md` gets one section appended per run that changed something or failed;
`journal/dream/runs/<run_id>.json` keeps each modified node's content before the run (and each
created node's version), so a revert can put it back. Dream, maintain and revert runs share it
(`kind` tells them apart). Both go through compare-and-set saves (an append never loses another's
entry); a maintain or revert run writes its record inside its own file transaction instead.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from reme.errors import Conflict, ReMeError
from reme.pipelines.dream.integrate import Modified
from reme.pipelines.port import MemoryPort

SAVE_ATTEMPTS = 5
RUN_ID = re.compile(r"^\d{8}T\d{6}-\d{6}-[0-9a-f]{6}$")


def new_run_id(now: datetime) -> str:
    """Sortable by start time (to the microsecond), unique across processes by its random tail."""
    return f"{now:%Y%m%dT%H%M%S-%f}-{secrets.token_hex(3)}"


@dataclass
class RunRecord:
    run_id: str
    kind: str
    started_at: str
    window: list[str]
    finished_at: str = ""
    units: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    failed_units: list[dict[str, Any]] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    created_sha256: dict[str, str] = field(default_factory=dict)  # each created node as the run left it
    modified: list[Modified] = field(default_factory=list)
    deleted: list[dict[str, str]] = field(default_factory=list)  # {path, sha256_before, content_before}
    reverts: str | None = None  # a revert run: the run it undid
    violations: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[dict[str, str]] = field(default_factory=list)  # tool calls the guard refused
    error: str | None = None  # a failure of the run itself (extraction)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["modified"] = [asdict(m) for m in self.modified]
        return data


def day_entry(record: RunRecord, time_text: str) -> str:
    """The readable section of one run."""
    lines = [f"## {time_text} {record.kind} run {record.run_id}", ""]
    if record.window:
        lines.append(f"- window: {record.window[0]} to {record.window[1]}; units: {len(record.units)}")
    if record.reverts:
        lines.append(f"- reverts run {record.reverts}")
    if record.error:
        lines.append(f"- run failed: {record.error}")
    lines += [f"- {a['action']} [[{a['target_path']}]] — {a['reason']}{_unit(a)}" for a in record.actions]
    lines += [
        f"- FAILED unit {f['unit']!r}: {f['error']} (sources: {', '.join(f['paths'])})"
        for f in record.failed_units
    ]
    lines += [f"- refused in unit {r['unit']!r}: {r['refusal']}" for r in record.refusals]
    for violation in record.violations:
        lost = ", ".join(
            [_edge(edge) for edge in violation.get("missing_edges") or []]
            + [repr(line) for line in violation.get("dropped_statements") or []]
        )
        lines.append(f"- conservation violation on {violation['path']}: would drop {lost}")
    return "\n".join(lines) + "\n"


def _unit(action: dict[str, Any]) -> str:
    """` (unit: ...)` for a dream action; maintain and revert actions name their node already."""
    unit = action.get("unit")
    return f" (unit: {unit})" if unit and unit != action["target_path"] else ""


def _edge(edge: dict[str, Any]) -> str:
    link = f"`[[{edge['target']}]]`"
    return f"`{edge['predicate']}::` {link}" if edge.get("predicate") else link


def journal_folder(port: MemoryPort) -> str:
    return f"{port.folder('journal')}/dream"


def record_path(port: MemoryPort, run_id: str) -> str:
    return f"{journal_folder(port)}/runs/{run_id}.json"


def record_text(record: RunRecord) -> str:
    return json.dumps(record.to_dict(), ensure_ascii=False, indent=1) + "\n"


async def load_record(port: MemoryPort, run_id: str) -> dict[str, Any] | None:
    """A run's record, or None when no run has this id; ValueError for text that is no run id.

    A record that is there but cannot be used (over the size cap, not JSON, not the shape of a run
    record) is a `ReMeError` whose message names it and says what to do (not "no run")."""
    if not RUN_ID.match(run_id):
        raise ValueError(
            f"{run_id!r} is not a run id (like 20260620T230000-123456-a1b2c3); see `reme journal`"
        )
    path = record_path(port, run_id)
    if not port.exists(path):
        return None
    data, problem = await read_record(port, path)
    if problem is not None:
        raise ReMeError(
            f"run record {path} is unreadable: {problem}; nothing was changed — restore it from a "
            "backup or remove it",
            {"path": path},
        )
    return data


async def read_record(port: MemoryPort, path: str) -> tuple[dict[str, Any], str | None]:
    """A run record and None, or {} and why it cannot be used (a sentence fragment)."""
    try:
        found = await port.load(path)
    except (ReMeError, ValueError, OSError) as exc:
        return {}, _first_line(getattr(exc, "message", None) or str(exc))
    if found is None:
        return {}, "it is gone"
    try:
        data = json.loads(found.content)
    except ValueError as exc:
        return {}, f"it is not JSON ({exc})"
    except RecursionError:
        return {}, "its JSON nests too deeply to be a run record"
    problem = record_problem(data)
    return (data, None) if problem is None else ({}, problem)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else "it cannot be read"


_LISTS = {  # field -> keys each entry must have as text (None: the entry itself is text)
    "actions": ("action", "target_path", "reason"),
    "failed_units": ("unit", "error"),
    "created": None,
    "modified": ("path", "sha256_after"),
    "deleted": ("path",),
    "violations": ("path",),
    "refusals": ("unit", "refusal"),
}


def record_problem(data: Any) -> str | None:
    """What keeps `data` from being a run record the journal and a revert can use, or None."""
    if not isinstance(data, dict):
        return f"it holds a JSON {type(data).__name__}, not a run record object"
    for key in ("run_id", "kind", "started_at", "finished_at", "reverts", "error"):
        if data.get(key) is not None and not isinstance(data[key], str):
            return f"its `{key}` is not text"
    for key, needed in _LISTS.items():
        entries = data.get(key) or []
        if not isinstance(entries, list):
            return f"its `{key}` is not a list"
        for index, entry in enumerate(entries):
            if needed is None:
                if not isinstance(entry, str):
                    return f"`{key}[{index}]` is not a path"
                continue
            if not isinstance(entry, dict):
                return f"`{key}[{index}]` is not an object"
            missing = [k for k in needed if not isinstance(entry.get(k), str)]
            if missing:
                return f"`{key}[{index}]` has no text `{missing[0]}`"
            if key in ("modified", "deleted") and not isinstance(entry.get("content_before"), str | None):
                return f"`{key}[{index}].content_before` is not text"
    if not isinstance(data.get("created_sha256") or {}, dict):
        return "its `created_sha256` is not an object"
    for violation in data.get("violations") or []:
        if not isinstance(violation.get("missing_edges") or [], list) or not all(
            isinstance(edge, dict) and isinstance(edge.get("target"), str)
            for edge in violation.get("missing_edges") or []
        ):
            return "a violation's `missing_edges` are not links"
    return None


async def write_journal(port: MemoryPort, record: RunRecord, day: str, time_text: str) -> str:
    """Write the run's record and append it to the day log; the day log's path."""
    await port.save(record_path(port, record.run_id), record_text(record))
    return await append_day_log(port, record, day, time_text)


async def append_day_log(port: MemoryPort, record: RunRecord, day: str, time_text: str) -> str:
    """Append the run's readable section to `journal/dream/<day>.md`; its path."""
    path = f"{journal_folder(port)}/{day}.md"
    entry = day_entry(record, time_text)
    for attempt in range(SAVE_ATTEMPTS):
        current = await port.load(path)
        text = current.content if current else f"# Dream journal {day}\n"
        try:
            await port.save(
                path, f"{text.rstrip()}\n\n{entry}", expected_sha256=current.sha256 if current else None
            )
            return path
        except Conflict:
            if attempt == SAVE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")

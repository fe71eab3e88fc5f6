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
from typing import NotRequired

from pydantic import JsonValue, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails
from typing_extensions import TypedDict  # pydantic validates it (typing.TypedDict before 3.12 it cannot)

from reme.errors import Conflict, ReMeError
from reme.pipelines.port import Notes, Places

SAVE_ATTEMPTS = 5
RUN_ID = re.compile(r"^\d{8}T\d{6}-\d{6}-[0-9a-f]{6}$")


def new_run_id(now: datetime) -> str:
    """Sortable by start time (to the microsecond), unique across processes by its random tail."""
    return f"{now:%Y%m%dT%H%M%S-%f}-{secrets.token_hex(3)}"


class Action(TypedDict):
    """What a run did to one node: CREATE, CORROBORATE, REFINE, CORRECT, SPLIT, ANNOTATE, RESTORE, DELETE, SKIP."""

    action: str
    target_path: str
    reason: str
    unit: NotRequired[str]  # the dream unit, or the node a maintain split; "" for a revert


class FailedUnit(TypedDict):
    unit: str
    error: str
    paths: NotRequired[list[str]]  # its evidence, kept for the next run


class LostEdge(TypedDict):
    target: str
    predicate: NotRequired[str | None]


class Violation(TypedDict):
    """A refused change that would have dropped links (E-1/E-2) or superseded statements (docs/spec.md §17.2)."""

    path: str
    missing_edges: NotRequired[list[LostEdge]]
    dropped_statements: NotRequired[list[str]]


class Refusal(TypedDict):
    unit: str
    refusal: str


class Deleted(TypedDict):
    path: str
    sha256_before: NotRequired[str]
    content_before: NotRequired[str | None]


@dataclass
class Modified:
    """A node a run changed: its content before (the revert's pre-image) and the sha256 it left."""

    path: str
    sha256_before: str
    content_before: str | None
    sha256_after: str


@dataclass
class RunRecord:
    """One run's record (`journal/dream/runs/<run_id>.json`); `load_record` validates one read back."""

    run_id: str = ""
    kind: str = ""
    started_at: str = ""
    window: list[str] = field(default_factory=list)
    finished_at: str = ""
    units: list[dict[str, JsonValue]] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    failed_units: list[FailedUnit] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    created_sha256: dict[str, str] = field(default_factory=dict)  # each created node as the run left it
    modified: list[Modified] = field(default_factory=list)
    deleted: list[Deleted] = field(default_factory=list)
    reverts: str | None = None  # a revert run: the run it undid
    violations: list[Violation] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)  # tool calls the guard refused
    error: str | None = None  # a failure of the run itself (extraction)

    def to_dict(self) -> dict[str, JsonValue]:
        return asdict(self)


_RECORD = TypeAdapter(RunRecord)


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
        f"- FAILED unit {f['unit']!r}: {f['error']} (sources: {', '.join(f.get('paths', []))})"
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


def _unit(action: Action) -> str:
    """` (unit: ...)` for a dream action; maintain and revert actions name their node already."""
    unit = action.get("unit")
    return f" (unit: {unit})" if unit and unit != action["target_path"] else ""


def _edge(edge: LostEdge) -> str:
    link = f"`[[{edge['target']}]]`"
    return f"`{edge['predicate']}::` {link}" if edge.get("predicate") else link


def journal_folder(port: Places) -> str:
    return f"{port.folder('journal')}/dream"


def record_path(port: Places, run_id: str) -> str:
    return f"{journal_folder(port)}/runs/{run_id}.json"


def record_text(record: RunRecord) -> str:
    return json.dumps(record.to_dict(), ensure_ascii=False, indent=1) + "\n"


async def load_record(port: Notes, run_id: str) -> RunRecord | None:
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
    record, problem = await read_record(port, path)
    if record is None:
        raise ReMeError(
            f"run record {path} is unreadable: {problem}; nothing was changed — restore it from a "
            "backup or remove it",
            {"path": path},
        )
    return record


async def read_record(port: Notes, path: str) -> tuple[RunRecord | None, str]:
    """A run record (and ""), or None and why it cannot be used (a sentence fragment)."""
    try:
        found = await port.load(path)
    except (ReMeError, ValueError, OSError) as exc:
        return None, _first_line(getattr(exc, "message", None) or str(exc))
    if found is None:
        return None, "it is gone"
    try:
        data = json.loads(found.content)
    except ValueError as exc:
        return None, f"it is not JSON ({exc})"
    except RecursionError:
        return None, "its JSON nests too deeply to be a run record"
    return parse_record(data)


def parse_record(data: object) -> tuple[RunRecord | None, str]:
    """`data` validated into a `RunRecord` (and ""), or None and what keeps it from being one."""
    if not isinstance(data, dict):
        return None, f"it holds a JSON {type(data).__name__}, not a run record object"
    try:
        return _RECORD.validate_python(data), ""
    except ValidationError as invalid:
        return None, _problem(invalid.errors()[0])


_WHY = {
    "missing": "is missing",
    "string_type": "is not text",
    "list_type": "is not a list",
    "dict_type": "is not an object",
    "dataclass_type": "is not an object",
    "typed_dict_type": "is not an object",
}


def _problem(error: ErrorDetails) -> str:
    """One validation error as a fragment naming the field: "`modified[0].path` is missing"."""
    where = ""
    for part in error["loc"]:
        where += f"[{part}]" if isinstance(part, int) else f".{part}" if where else str(part)
    return f"its `{where}` {_WHY.get(error['type'], error['msg'].lower())}"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else "it cannot be read"


async def write_journal(port: Notes, record: RunRecord, day: str, time_text: str) -> str:
    """Write the run's record and append it to the day log; the day log's path."""
    await port.save(record_path(port, record.run_id), record_text(record))
    return await append_day_log(port, record, day, time_text)


async def append_day_log(port: Notes, record: RunRecord, day: str, time_text: str) -> str:
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

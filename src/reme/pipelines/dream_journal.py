"""The dream journal (SPEC 12.4): a readable day log and one machine-readable record per run.

`journal/dream/<day>.md` gets one section appended per run that changed something or failed;
`journal/dream/runs/<run_id>.json` keeps each modified node's content before the run, so a revert
can put it back. Both go through compare-and-set saves (an append never loses another's entry).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from reme.errors import Conflict
from reme.pipelines.dream_integrate import Modified
from reme.pipelines.port import MemoryPort

SAVE_ATTEMPTS = 5


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
    modified: list[Modified] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[dict[str, str]] = field(default_factory=list)  # tool calls the guard refused
    error: str | None = None  # a failure of the run itself (extraction)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["modified"] = [asdict(m) for m in self.modified]
        return data


def day_entry(record: RunRecord, time_text: str) -> str:
    """The readable section of one run."""
    lines = [
        f"## {time_text} run {record.run_id}",
        "",
        f"- window: {record.window[0]} to {record.window[1]}; units: {len(record.units)}",
    ]
    if record.error:
        lines.append(f"- run failed: {record.error}")
    lines += [
        f"- {a['action']} [[{a['target_path']}]] — {a['reason']} (unit: {a['unit']})" for a in record.actions
    ]
    lines += [
        f"- FAILED unit {f['unit']!r}: {f['error']} (sources: {', '.join(f['paths'])})"
        for f in record.failed_units
    ]
    lines += [f"- refused in unit {r['unit']!r}: {r['refusal']}" for r in record.refusals]
    for violation in record.violations:
        lost = ", ".join(_edge(edge) for edge in violation["missing_edges"])
        lines.append(f"- conservation violation on {violation['path']}: would drop {lost}")
    return "\n".join(lines) + "\n"


def _edge(edge: dict[str, Any]) -> str:
    link = f"`[[{edge['target']}]]`"
    return f"`{edge['predicate']}::` {link}" if edge.get("predicate") else link


async def write_journal(port: MemoryPort, record: RunRecord, day: str, time_text: str) -> str:
    """Append the run to the day log and write its record; the day log's path."""
    folder = f"{port.folder('journal')}/dream"
    await port.save(
        f"{folder}/runs/{record.run_id}.json",
        json.dumps(record.to_dict(), ensure_ascii=False, indent=1) + "\n",
    )
    path = f"{folder}/{day}.md"
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

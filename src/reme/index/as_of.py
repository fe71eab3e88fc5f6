"""`as_of` on search results (docs/spec.md §17.3): what was true on a day, marked and ranked, never hidden.

Applied after the search proper, so ranking and speed stay as they are for text without validity
fields (a substring test per hit). A passage whose statements with validity were all not valid on
the day (superseded, or not yet true) says `valid: false` with its `valid_range` and goes below the
valid ones; with an explicit `as_of`, a dated note (`daily/<date>/…`) written after the day is not
valid then either. Node summaries keep only the statements valid on the day and list the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from reme.index.search import Hit
from reme.workspace.dates import path_day
from reme.workspace.validity import Statement, statements

_MARKER = "valid_"


@dataclass
class Marked:
    """A hit and what `as_of` says about it (empty when its text has no validity to judge)."""

    hit: Hit
    validity: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return bool(self.validity.get("valid", True))

    def to_dict(self) -> dict[str, Any]:
        return {**self.hit.to_dict(), **self.validity}


def _judge(hit: Hit, day: date, explicit: bool) -> dict[str, Any]:
    if explicit:
        written = path_day(hit.path)
        if written is not None and written > day:
            return {"valid": False, "valid_range": f"{written.isoformat()}/", "reason": "written later"}
    if _MARKER not in hit.text:
        return {}
    found = statements(hit.text)
    if not found:
        return {}
    stale = [s for s in found if not s.valid_on(day)]
    lines = [hit.start_line + s.line - 1 for s in stale]
    if len(stale) < len(found):
        return {"valid": True, "not_valid_lines": lines} if stale else {"valid": True}
    ranges = list(dict.fromkeys(s.range for s in stale))
    reason = "superseded" if all(s.ended_by(day) for s in stale) else "not valid then"
    return {"valid": False, "valid_range": ", ".join(ranges), "reason": reason, "not_valid_lines": lines}


def mark(hits: Sequence[Hit], day: date, *, explicit: bool) -> list[Marked]:
    """Hits judged on `day`, valid (or unjudged) ones first, each group in its search order.

    `explicit`: the caller asked for this day (`as_of`), so notes written after it count as not
    valid then; without it the day is today and only statements' own validity counts.
    """
    marked = [Marked(hit, _judge(hit, day, explicit)) for hit in hits]
    return [m for m in marked if m.valid] + [m for m in marked if not m.valid]


def render_marks(marked: Sequence[Marked], day: date, explicit: bool) -> str:
    """Lines saying which results are not valid on the day ("" when every one is)."""
    stale = [
        (number, m) for number, m in enumerate(marked, 1) if not m.valid or m.validity.get("not_valid_lines")
    ]
    if not stale:
        return ""
    when = f"on {day.isoformat()}" if explicit else "now"
    lines = [f"validity ({when}):"]
    for number, m in stale:
        if m.valid:
            shown = ", ".join(str(line) for line in m.validity["not_valid_lines"])
            lines.append(f"[{number}] {m.hit.path}: line(s) {shown} not valid {when}")
        else:
            lines.append(
                f"[{number}] {m.hit.path}: not valid {when} ({m.validity['reason']}; valid {m.validity['valid_range']})"
            )
    return "\n".join(lines)


def _shown(statement: Statement) -> dict[str, Any]:
    return {"statement": statement.claim, "valid_range": statement.range, "line": statement.line}


def node_validity(body: str, day: date, *, explicit: bool) -> dict[str, Any]:
    """A node's statements on `day` ({} when it has none with validity).

    `statements` are those valid then. With an explicit `as_of` the others are left out (only
    counted, `left_out`); without it those whose `valid_to` has come are listed as `superseded`, so
    no old fact reads as current, and those not started yet are only counted (they are not old).
    """
    if _MARKER not in body:
        return {}
    found = statements(body)
    if not found:
        return {}
    summary: dict[str, Any] = {"statements": [_shown(s) for s in found if s.valid_on(day)]}
    stale = [s for s in found if not s.valid_on(day)]
    if explicit:
        summary["left_out"] = len(stale)
        return summary
    summary["superseded"] = [_shown(s) for s in stale if s.ended_by(day)]
    later = sum(not s.ended_by(day) for s in stale)
    if later:
        summary["left_out"] = later
    return summary


def render_node_validity(nodes: Sequence[dict[str, Any]]) -> str:
    """Per node with validity: what holds (and what no longer does, when shown)."""
    lines = []
    for node in nodes:
        if "statements" not in node:
            continue
        lines.append(f"{node['path']}:")
        lines += [f"  holds: {s['statement']} (valid {s['valid_range']})" for s in node["statements"]]
        lines += [
            f"  superseded: {s['statement']} (valid {s['valid_range']})" for s in node.get("superseded", [])
        ]
        if node.get("left_out"):
            lines.append(f"  ({node['left_out']} statement(s) not valid then, left out)")
    return "\n".join(lines)

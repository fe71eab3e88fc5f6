"""Statements with validity (docs/spec.md §17.2): `[valid_from:: 2026-03]` / `[valid_to:: 2026-11-20]` on a line.

A statement is one body line (outside fenced code) that carries at least one of the two Dataview
inline fields. Bounds take the precision of the evidence (a year, a month or a day) and are read as
the first day of that period; a statement is valid on day d when `from <= d < to` (the superseded
statement's `valid_to` is the day its replacement starts, so the two never overlap). This module is
the one owner of that reading: the digest edit check (a superseding update keeps the old statement),
`as_of` in search and recall, and the digest audit all use it.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date

from reme.errors import ReMeError
from reme.workspace.relative_dates import ANNOTATION, protected_spans

# Not after `\` or `[`; the value holds no bracket and is stripped in `_fields`, so a line of unclosed
# fields or of blanks costs linear time (three blank-eating quantifiers in a row backtracked cubically).
FIELD = re.compile(r"(?<![\\\[])\[(valid_from|valid_to)::([^\[\]\n]*)\]")
_BOUND = re.compile(r"(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)")
_HEADING = re.compile(r"^#{1,6}\s")
_LIST = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+")
_RESOLVED = re.compile(r"[ \t]*\(" + ANNOTATION + r"\)")


class StatementDropped(ReMeError):
    """A superseding update lost a statement; `metadata.dropped_statements` lists them."""


def bound(value: str) -> date:
    """The first day of a `YYYY`, `YYYY-MM` or `YYYY-MM-DD` bound; ValueError when it is none of them."""
    m = _BOUND.fullmatch(value.strip())
    if m is None:
        raise ValueError(f"{value!r} is not a date (YYYY, YYYY-MM or YYYY-MM-DD)")
    return date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))


@dataclass(frozen=True)
class Statement:
    line: int  # 1-based line of the body
    section: str  # the H2/H3 heading above it ("" before any)
    text: str  # the line as written
    claim: str  # the line without its validity fields and list marker
    valid_from: str | None
    valid_to: str | None
    conflict: str | None = None  # a field given twice with different values: which one holds is unknown

    @property
    def superseded(self) -> bool:
        return self.valid_to is not None

    @property
    def range(self) -> str:
        """`from/to` with an open end left empty: `2026-03/2026-11-20`, `2026-03/`, `/2024`."""
        return f"{self.valid_from or ''}/{self.valid_to or ''}"

    def error(self) -> str | None:
        """Why the bounds cannot hold (unreadable, given twice, or ending before they start), else None."""
        if self.conflict:
            return self.conflict
        try:
            start = bound(self.valid_from) if self.valid_from else None
            end = bound(self.valid_to) if self.valid_to else None
        except ValueError as exc:
            return str(exc)
        if start and end and end <= start:
            return f"valid_to {self.valid_to} is not after valid_from {self.valid_from}"
        return None

    def valid_on(self, day: date) -> bool:
        """Whether the statement held on `day`; one with unreadable bounds is taken as valid (shown)."""
        if self.error():
            return True
        if self.valid_from and day < bound(self.valid_from):
            return False
        return not (self.valid_to and day >= bound(self.valid_to))

    def ended_by(self, day: date) -> bool:
        """Whether its `valid_to` had come by `day`: superseded then, not merely not started yet."""
        if not self.valid_to or self.error():
            return False
        return day >= bound(self.valid_to)


def claim_of(line: str) -> str:
    """A line's words without validity fields, date resolutions, list marker or extra spaces (how
    statements are matched: annotating a relative date does not make it another statement)."""
    return " ".join(_LIST.sub("", _RESOLVED.sub("", FIELD.sub("", line))).split())


def _outside_code(body: str) -> Iterator[tuple[int, str]]:
    """(1-based number, line) of the body's lines outside fenced code and its fences (CommonMark: a
    fence closes on a line of the same character, at least as long, with nothing after it)."""
    fence: str | None = None
    for number, line in enumerate(body.split("\n"), 1):
        found = _FENCE.match(line)
        if fence is None and found:
            fence = found.group(1)
        elif fence is None:
            yield number, line
        elif found and not found.group(2).strip() and found.group(1)[0] == fence[0]:
            fence = None if len(found.group(1)) >= len(fence) else fence


def _fields(line: str) -> dict[str, list[str]]:
    """The validity fields a line gives, each name's values in order; one inside a code span, a link,
    a URL or an HTML comment is text about a field, not one."""
    found = list(FIELD.finditer(line))
    if found:
        spans = protected_spans(line)
        found = [m for m in found if not _protected(m, spans)]
    fields: dict[str, list[str]] = {}
    for m in found:
        fields.setdefault(m.group(1), []).append(m.group(2).strip(" \t"))
    return fields


def _protected(m: re.Match[str], spans: list[tuple[int, int]]) -> bool:
    """Whether a field meets one of `spans` (sorted, disjoint): a bisection, not a scan per field."""
    index = bisect_left(spans, (m.end(),)) - 1  # the last span starting before the field ends
    return index >= 0 and spans[index][1] > m.start()


def _conflict(fields: dict[str, list[str]]) -> str | None:
    for name, values in fields.items():
        if len(set(values)) > 1:
            return f"{name} given {len(values)} times with different values ({', '.join(values)})"
    return None


def statements(body: str) -> list[Statement]:
    """Every line of `body` that carries validity fields, in order."""
    out = []
    section = ""
    for number, line in _outside_code(body):
        if _HEADING.match(line):
            section = line.strip()
            continue
        fields = _fields(line)
        if fields:
            start, end = fields.get("valid_from", [None])[0], fields.get("valid_to", [None])[0]
            out.append(Statement(number, section, line, claim_of(line), start, end, _conflict(fields)))
    return out


def _lines(body: str) -> list[str]:
    """Claims of the body's prose and list lines (no headings, blanks, fences or the Sources section)."""
    out = []
    in_sources = False
    for _, line in _outside_code(body):
        if _HEADING.match(line):
            in_sources = line.strip().lower().lstrip("#").strip() == "sources"
            continue
        claim = claim_of(line)
        if claim and not in_sources and not claim.startswith(">"):
            out.append(claim)
    return out


def dropped_statements(old_body: str, new_body: str) -> list[str]:
    """What a superseding update lost: the claims it must keep, missing from `new_body`.

    Every statement of `old_body` that has validity must stay with the same `valid_from` and, if it
    had one, the same `valid_to` (a `valid_to` may be added: that is how it becomes superseded).
    When the update adds validity (a new `valid_from` or `valid_to`), it supersedes something, so
    every line of the old body outside `## Sources` must still be there, fields aside.
    """
    new = statements(new_body)
    by_claim: dict[str, list[Statement]] = {}
    for statement in new:
        by_claim.setdefault(statement.claim, []).append(statement)
    lost = []
    lost_claims = set()
    old = statements(old_body)
    for statement in old:
        kept = [
            s
            for s in by_claim.get(statement.claim, [])
            if s.valid_from == statement.valid_from and (statement.valid_to in (None, s.valid_to))
        ]
        if not kept:
            lost.append(statement.text.strip())
            lost_claims.add(statement.claim)
    old_fields = {(s.claim, s.valid_from, s.valid_to) for s in old}
    if any((s.claim, s.valid_from, s.valid_to) not in old_fields for s in new):
        present = set(_lines(new_body))
        lost += [claim for claim in _lines(old_body) if claim not in present and claim not in lost_claims]
    return list(dict.fromkeys(lost))


def check_kept(path: str, old_body: str, new_body: str) -> None:
    """Raise `StatementDropped` when a superseding update of `path` loses a statement."""
    lost = dropped_statements(old_body, new_body)
    if lost:
        shown = "; ".join(repr(line) for line in lost[:10])
        raise StatementDropped(
            f"the change to {path!r} supersedes a statement but drops {len(lost)} line(s): {shown}. A "
            "superseded statement stays in the body, marked with [valid_to:: <date>] (docs/spec.md §17.2), "
            "and the new one follows it with [valid_from:: <date>]; nothing was changed",
            {"path": path, "dropped_statements": lost},
        )


def problems(body: str) -> Iterable[tuple[str, str]]:
    """(kind, detail) for validity that cannot hold: `contradictory_validity`, `overlapping_validity`.

    Overlap is checked between a superseded statement and the next statement with validity in the
    same section (how a replacement is written): the replacement must not start before the old ends.
    """
    found = statements(body)
    for statement in found:
        reason = statement.error()
        if reason:
            yield "contradictory_validity", f"line {statement.line}: {reason}"
    for old, new in zip(found, found[1:], strict=False):
        if old.section != new.section or not old.valid_to or not new.valid_from:
            continue
        if old.error() or new.error():
            continue
        if bound(new.valid_from) < bound(old.valid_to):
            yield (
                "overlapping_validity",
                f"line {new.line} starts {new.valid_from}, before line {old.line} ends {old.valid_to}",
            )

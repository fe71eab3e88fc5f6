"""Absolute dates in a query also asked in ISO form, so "May 7 2023" finds `yesterday (2023-05-07)`.

Notes carry resolved dates as ISO 8601 (docs/spec.md §17.1), which the tokenizer reads as `2023 05 07`; a
query that names the day in words would only share the year with them. The query keeps its words
and gets the ISO form of each date it names appended. A query without a date is left as it is.
"""

from __future__ import annotations

import re
from datetime import date

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})"
_PATTERNS = (
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I), ("month", "day", "year")),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.I), ("day", "month", "year")),
    (re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I), ("month", "year")),
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"), ("year", "month", "day")),
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月(?!\s*\d)"), ("year", "month")),
)


def iso_dates(query: str) -> list[str]:
    """The ISO form of each calendar date (or month) the query names, in order, without repeats."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    for pattern, order in _PATTERNS:
        for m in pattern.finditer(query):
            if any(start < m.end() and m.start() < end for start, end in taken):
                continue  # "May 7 2023" is not also "May 2023"... of another match
            parts = dict(zip(order, m.groups(), strict=True))
            month = (
                MONTHS.get(parts["month"].lower().rstrip("."))
                if not parts["month"].isdigit()
                else int(parts["month"])
            )
            try:
                if "day" in parts:
                    value = date(int(parts["year"]), month or 0, int(parts["day"])).isoformat()
                else:
                    value = date(int(parts["year"]), month or 0, 1).isoformat()[:7]
            except ValueError:
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), value))
    return list(dict.fromkeys(value for _, value in sorted(found)))


def with_iso_dates(query: str) -> str:
    """`query`, plus the ISO form of the dates it names (unchanged when it names none)."""
    extra = [value for value in iso_dates(query) if value not in query]
    return f"{query} {' '.join(extra)}" if extra else query

"""Dates as reme writes and reads them: `YYYY-MM-DD`, real calendar days, the date segment of a path.

The one owner of date checks: job parameters, daily folders, resource folders and the index's date
filters all use these, so a date is accepted or refused the same way everywhere.
"""

from __future__ import annotations

import re
from datetime import date

DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


def is_date(text: object) -> bool:
    """Whether `text` is exactly a `YYYY-MM-DD` day that exists on the calendar."""
    if not isinstance(text, str) or not DATE_RE.fullmatch(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def parse_date(value: object, what: str = "date") -> date:
    """The day of a `YYYY-MM-DD` string; a ValueError naming `what` otherwise."""
    if not isinstance(value, str) or not DATE_RE.fullmatch(value):
        raise ValueError(f"{what} must be YYYY-MM-DD, got {value!r}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{what} {value!r} is not a calendar date (YYYY-MM-DD)") from None


def check_date(value: object, today: date) -> str:
    """A `YYYY-MM-DD` date that exists on the calendar; `None` or empty means today."""
    if value is None or value == "":
        return today.isoformat()
    return parse_date(value).isoformat()


def path_day(path: str) -> date | None:
    """The calendar date that starts a path's second segment (`daily/2026-06-01/x.md`), else None."""
    parts = path.split("/", 2)
    if len(parts) < 2 or not DATE_RE.match(parts[1]):
        return None
    head = parts[1][:10]
    return date.fromisoformat(head) if is_date(head) else None

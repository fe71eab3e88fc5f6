"""Relative day words pinned to absolute dates, so a card never says "yesterday" without a date.

The agent sees each message with its own timestamp and every relative day word annotated with the
date it means for that message (`yesterday (2026-05-31)`); the prompt asks it to write the date,
and any relative day word left in the written card is pinned against the card's date.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime, timedelta, tzinfo
from typing import Any

_OFFSETS = {
    "the day before yesterday": -2,
    "day before yesterday": -2,
    "the day after tomorrow": 2,
    "day after tomorrow": 2,
    "yesterday": -1,
    "last night": -1,
    "today": 0,
    "tonight": 0,
    "this morning": 0,
    "this afternoon": 0,
    "this evening": 0,
    "tomorrow": 1,
    "大前天": -3,
    "前天": -2,
    "昨天": -1,
    "昨晚": -1,
    "今天": 0,
    "今晚": 0,
    "明天": 1,
    "后天": 2,
    "大后天": 3,
}
_WORDS = sorted(_OFFSETS, key=len, reverse=True)
# Not when a date already follows ("tomorrow (2026-06-02)") nor inside a possessive ("today's").
_PATTERN = re.compile(
    "(?:"
    + "|".join(rf"\b{re.escape(w)}\b" if w.isascii() else re.escape(w) for w in _WORDS)
    + r")(?!['’]\w)(?!\s*\(\d{4}-\d{2}-\d{2}\))",
    re.IGNORECASE,
)


def annotate_relative_dates(text: str, day: date) -> str:
    """`text` with each relative day word followed by the absolute date it means on `day`."""

    def pin(match: re.Match[str]) -> str:
        offset = _OFFSETS[match.group(0).lower()]
        return f"{match.group(0)} ({(day + timedelta(days=offset)).isoformat()})"

    return _PATTERN.sub(pin, text)


def pin_body(text: str, day: date) -> str:
    """A Markdown document with relative day words of its body (not its front matter) pinned to `day`."""
    from reme.workspace.fmsplit import split

    parts = split(text)
    return parts.head(text) + annotate_relative_dates(parts.body(text), day)


def render_for_prompt(records: Sequence[dict[str, Any]], tz: tzinfo, fallback_day: date) -> str:
    """One line block per message: `[role (name) @ YYYY-MM-DD HH:MM Weekday] text`, dates pinned."""
    blocks = []
    for record in records:
        created = record.get("created_at")
        moment = datetime.fromisoformat(created).astimezone(tz) if created else None
        day = moment.date() if moment else fallback_day
        stamp = (
            moment.strftime("%Y-%m-%d %H:%M %A") if moment else f"{fallback_day.isoformat()} (time unknown)"
        )
        who = record["role"] + (f" ({record['name']})" if record.get("name") else "")
        blocks.append(f"[{who} @ {stamp}] {annotate_relative_dates(record['content'], day)}")
    return "\n\n".join(blocks)

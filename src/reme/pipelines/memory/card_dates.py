"""Relative dates pinned to absolute ones, so a card never says "yesterday" without a date.

The agent sees each message with its own timestamp and every relative day word annotated with the
date it means for that message (`yesterday (2026-05-31)`); the prompt asks it to write the date,
and any relative date left in the written card is resolved against the card's date by the one
annotator, `reme.workspace.relative_dates`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, tzinfo

from reme.pipelines.capture.messages import TranscriptRecord
from reme.workspace import relative_dates


def render_for_prompt(records: Sequence[TranscriptRecord], tz: tzinfo, fallback_day: date) -> str:
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
        blocks.append(f"[{who} @ {stamp}] {relative_dates.annotate(record['content'], day)}")
    return "\n\n".join(blocks)

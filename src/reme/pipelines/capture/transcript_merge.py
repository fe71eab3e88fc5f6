"""Merging messages into a session transcript: by message id, in time order, naive times read in the app zone.

The file format itself is `reme.workspace.transcript`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any

from reme.pipelines.capture.messages import content_text, message_time
from reme.workspace.transcript import parse_records


def _with_aware_time(record: dict[str, Any], tz: tzinfo) -> dict[str, Any]:
    """`record` with `created_at` as aware ISO text: naive times (and ReMe 0.4's `timestamp`) read in `tz`."""
    created = record.get("created_at")
    if isinstance(created, str):
        try:
            if datetime.fromisoformat(created).tzinfo:
                return record
        except ValueError:
            pass
    try:
        moment = message_time(record, tz)
    except ValueError:
        moment = None
    return {**record, "created_at": moment.isoformat() if moment else None}


def parse_transcript(text: str, tz: tzinfo) -> list[dict[str, Any]]:
    """Records of a saved transcript with string content and aware times (ReMe 0.4 blocks read as text)."""
    records = []
    for record in parse_records(text):
        if not isinstance(record.get("content"), str):
            record["content"] = content_text(record)
        records.append(_with_aware_time(record, tz))
    return records


def _sort_times(records: Sequence[dict[str, Any]]) -> list[datetime | None]:
    """Each record's time; records without one take the time of the record before them."""
    times: list[datetime | None] = []
    last: datetime | None = None
    for record in records:
        created = record.get("created_at")
        if created:
            last = datetime.fromisoformat(created)
        times.append(last)
    return times


def merge(
    existing: Sequence[dict[str, Any]], incoming: Sequence[dict[str, Any]], tz: tzinfo
) -> list[dict[str, Any]]:
    """Union by message id (an incoming record replaces a stored one), stably sorted by time."""
    by_id = {r["id"]: dict(r) for r in existing}
    order = [r["id"] for r in existing]
    for record in incoming:
        if record["id"] not in by_id:
            order.append(record["id"])
        by_id[record["id"]] = {**by_id.get(record["id"], {}), **record}
    records = [by_id[i] for i in order]
    times = _sort_times(records)
    floor = datetime.min.replace(tzinfo=tz)
    ranked = sorted(range(len(records)), key=lambda i: (times[i] or floor, i))
    return [records[i] for i in ranked]

"""Merging messages into a session transcript: by message id, in time order, naive times read in the app zone.

The file format itself is `reme.workspace.transcript`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, tzinfo
from typing import cast

from reme.pipelines.capture.messages import TranscriptRecord, message_text, message_time
from reme.workspace.transcript import parse_records


def _aware_time(record: Mapping[str, object], tz: tzinfo) -> str | None:
    """`created_at` as aware ISO text: naive times (and ReMe 0.4's `timestamp`) read in `tz`."""
    created = record.get("created_at")
    if isinstance(created, str):
        try:
            if datetime.fromisoformat(created).tzinfo:
                return created
        except ValueError:
            pass
    try:
        moment = message_time(record, tz)
    except ValueError:
        moment = None
    return moment.isoformat() if moment else None


def record_of(record: Mapping[str, object], tz: tzinfo, where: str = "transcript record") -> TranscriptRecord:
    """A saved record as a `TranscriptRecord` (string content, aware time); keys reme does not know are kept.

    A ValueError names what is wrong: an id that is not text or a number, a role that is not text."""
    record_id = record.get("id")
    if isinstance(record_id, bool) or not isinstance(record_id, str | int):
        raise ValueError(f"{where} has no usable id (text or a number), got {record_id!r}")
    role, name, metadata = record.get("role"), record.get("name"), record.get("metadata")
    if not isinstance(role, str):
        raise ValueError(f"{where} {record_id!r}: role must be text, got {role!r}")
    content = record.get("content")
    fields = {
        "id": str(record_id),
        "role": role,
        "name": name if isinstance(name, str) else None,
        "content": content if isinstance(content, str) else message_text(record),
        "created_at": _aware_time(record, tz),
    }
    merged = {**record, **fields}
    if "metadata" in merged and not isinstance(metadata, dict):
        del merged["metadata"]
    return cast(TranscriptRecord, merged)  # validated above; other keys ride along to be written back


def parse_transcript(text: str, tz: tzinfo) -> list[TranscriptRecord]:
    """Records of a saved transcript with string content and aware times (ReMe 0.4 blocks read as text)."""
    return [
        record_of(record, tz, f"transcript line {number}")
        for number, record in enumerate(parse_records(text), 1)
    ]


def _sort_times(records: Sequence[TranscriptRecord]) -> list[datetime | None]:
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
    existing: Sequence[TranscriptRecord], incoming: Sequence[TranscriptRecord], tz: tzinfo
) -> list[TranscriptRecord]:
    """Union by message id (an incoming record replaces a stored one), stably sorted by time."""
    by_id: dict[str, TranscriptRecord] = {r["id"]: r for r in existing}
    order = [r["id"] for r in existing]
    for record in incoming:
        stored = by_id.get(record["id"])
        if stored is None:
            order.append(record["id"])
            by_id[record["id"]] = record
        else:
            by_id[record["id"]] = cast(TranscriptRecord, {**stored, **record})
    records = [by_id[i] for i in order]
    times = _sort_times(records)
    floor = datetime.min.replace(tzinfo=tz)
    ranked = sorted(range(len(records)), key=lambda i: (times[i] or floor, i))
    return [records[i] for i in ranked]

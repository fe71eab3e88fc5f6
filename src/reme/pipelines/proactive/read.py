"""`proactive_read` (docs/spec.md §13.2): the day's topics for an agent — no model call, no writes.

`horizon_days` 1 reads `daily/<date>/interests.yaml` (version 1 or 2); a wider horizon reads the open
topics of `daily/_proactive.yaml` with evidence in the last `horizon_days` days. Topics below
`min_confidence` and resolved ones are left out, and so are their agenda entries; entries that
cannot be shown (no title, an id an earlier entry has) are left out and named in `left_out`. A
missing file is an empty, successful read (`Skipped: ...`); an unreadable one a failure (`Error: ...`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from reme.errors import ReMeError
from reme.jsontypes import JSONObject, JSONValue
from reme.pipelines.port import MemoryPort
from reme.pipelines.proactive.files import parse_interests, parse_truth
from reme.pipelines.proactive.store import truth_path
from reme.pipelines.proactive.topics import confidence_of, normalise_title, topic_id

_ID = re.compile(r"[0-9a-f]{12}")


@dataclass(frozen=True)
class ReadOutcome:
    """The read topics (`answer` an object), or a sentence: a skip (`success`) or an error."""

    success: bool
    answer: str | JSONObject
    metadata: JSONObject


@dataclass(frozen=True)
class _Read:
    """A topic as the file has it, with the `id` and `confidence` the read decides on."""

    id: str
    confidence: float
    raw: JSONObject

    def shown(self) -> JSONObject:
        return {**self.raw, "id": self.id, "confidence": self.confidence}


def _topic(raw: JSONObject) -> _Read | None:
    """The topic with an `id` and a `confidence`; None without a usable title."""
    title = raw.get("title")
    if not isinstance(title, str) or not normalise_title(title):
        return None
    given = raw.get("id")
    return _Read(
        given if isinstance(given, str) and _ID.fullmatch(given) else topic_id(title),
        confidence_of(raw.get("confidence")),
        raw,
    )


def _usable(raws: list[JSONObject]) -> tuple[list[_Read], list[JSONValue]]:
    """The file's topics that can be shown, and the entries left out with why (`{entry, id, title,
    reason}`, `entry` counting from 1): one without a usable title, or a second one with an id already
    read (a hand-edited copy; the first stands, so an id names one topic for `proactive_resolve`)."""
    topics: dict[str, _Read] = {}
    left_out: list[JSONValue] = []
    for entry, raw in enumerate(raws, start=1):
        topic = _topic(raw)
        title = raw.get("title")
        row: JSONObject = {"entry": entry, "id": topic.id if topic else None, "title": title}
        if topic is None:
            left_out.append({**row, "reason": "no title: an entry needs a non-empty `title` text"})
        elif topic.id in topics:
            first = topics[topic.id].raw.get("title")
            left_out.append({**row, "reason": f"duplicate id: an earlier entry ({first!r}) has it"})
        else:
            topics[topic.id] = topic
    return [*topics.values()], left_out


def _first_day(day: date, horizon_days: int) -> str:
    """The first day of a `horizon_days` window ending on `day` (never before the calendar's first)."""
    return date.fromordinal(max(1, day.toordinal() - horizon_days + 1)).isoformat()


async def _resolved_ids(port: MemoryPort) -> set[str]:
    """Ids resolved in the truth source; none when it is missing, unreadable (binary, over the size cap,
    a link out of the workspace) or unparsable: the day file still reads."""
    try:
        loaded = await port.load(truth_path(port))
        return set(parse_truth(loaded.content, truth_path(port)).resolved) if loaded else set()
    except (ReMeError, ValueError):
        return set()


async def read_proactive(
    port: MemoryPort, *, day: date, include_content: bool, horizon_days: int, min_confidence: float
) -> ReadOutcome:
    daily = port.folder("daily")
    wide = horizon_days > 1
    path = truth_path(port) if wide else f"{daily}/{day.isoformat()}/interests.yaml"
    base: JSONObject = {
        "date": day.isoformat(),
        "path": path,
        "topics": [],
        "skipped": False,
        "error": None,
        "left_out": [],
    }
    try:
        loaded = await port.load(path)
    except ReMeError as exc:
        return _failed(base, f"cannot read {path}: {exc.message}")
    if loaded is None:
        kind = "proactive truth source" if wide else "interests file"
        message = f"Skipped: {kind} not found at {path}"
        return ReadOutcome(True, message, {**base, "skipped": True, "summary": message})
    agenda: list[JSONObject] | None = None
    try:
        if wide:
            start = _first_day(day, horizon_days)
            truth = parse_truth(loaded.content, path)
            raws = [
                t.to_exposure()
                for t in truth.topics.values()
                if start <= t.last_evidence_at <= day.isoformat()
            ]
            resolved = set(truth.resolved)
        else:
            interests = parse_interests(loaded.content, path)
            raws, agenda = interests.topics, interests.agenda
            resolved = await _resolved_ids(port)
    except ValueError as exc:
        return _failed(base, str(exc))
    usable, left_out = _usable(raws)
    topics = [t for t in usable if t.confidence >= min_confidence and t.id not in resolved]
    kept = {t.id for t in topics}
    summary = f"Read {len(topics)} proactive topic(s) from {path}"
    shown: list[JSONValue] = [t.shown() for t in topics]
    answer: JSONObject = {"date": base["date"], "path": path, "summary": summary, "topics": shown}
    if agenda is not None:
        answer["agenda"] = _agenda(agenda, kept)
    if left_out:
        answer["left_out"] = left_out
    if include_content:
        answer["content"] = loaded.content
    return ReadOutcome(True, answer, {**base, **answer})


def _agenda(agenda: list[JSONObject], kept: set[str]) -> list[JSONValue]:
    """The agenda entries of the shown topics, the first one per topic (a hand-edited file may repeat one)."""
    seen: set[str] = set()
    entries: list[JSONValue] = []
    for item in agenda:
        topic = item.get("topic_id")
        if isinstance(topic, str) and topic in kept and topic not in seen:
            seen.add(topic)
            entries.append(item)
    return entries


def _failed(base: JSONObject, error: str) -> ReadOutcome:
    message = f"Error: {error}"
    return ReadOutcome(False, message, {**base, "error": error, "summary": message})

"""Capture of coding-agent sessions: `agent_session_append` (save, queue) and `agent_session_flush` (distil now).

Hooks call append on every turn with the whole transcript (or its tail), so append is idempotent by
message id and cheap: it saves what is new to `session/dialog/<id>.jsonl`, marks the session's card
of the day `pending: true` and records the session in the queue (`metadata/agent_sessions.json`).
No model is called. The pending cards are the durable queue: the queue file only says when a session
last grew, so `agent_session_distil` waits until it has been idle; a lost queue file loses no work,
since `auto_memory_pending` distils every pending card.

Before anything is written, text is cleaned: `<reme-context>` blocks (memory reme itself put into the
session) are cut out, so recalled memory is never memorised again, and secrets are redacted.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from reme.errors import LLMUnavailable, ReMeError
from reme.jsontypes import JSONObject, JSONValue
from reme.pipelines.capture.messages import (
    READ_CHARS,
    Occurrences,
    TranscriptRecord,
    local_date,
    normalise_messages,
)
from reme.pipelines.capture.redaction import redact, redact_record, stored_session_id
from reme.pipelines.capture.transcript_merge import parse_transcript
from reme.pipelines.capture.transcripts import read_source
from reme.pipelines.memory.auto_memory import (
    auto_memory,
    ensure_card,
    save_transcript,
    session_path,
)
from reme.pipelines.memory.distil import mark_pending
from reme.pipelines.outcome import AddUsage, Outcome
from reme.pipelines.port import MemoryPort
from reme.pipelines.recall import OPEN

QUEUE_STATE = "agent_sessions"
MAX_FAILURES = 3  # a session that failed this often waits until it grows again (or a flush)
CONTEXT_TAG = "reme-context"
_CONTEXT_OPEN = re.compile(rf"<{CONTEXT_TAG}\b[^<>]{{0,500}}>", re.I)
_CONTEXT_CLOSE = re.compile(rf"</{CONTEXT_TAG}\s*>", re.I)


def strip_context(text: str) -> str:
    """`text` without the `<reme-context>` blocks recall put into the session: every complete block,
    and an unclosed one (to the end) only when it opens with the exact tag recall writes — a user
    who merely mentions `<reme-context>` keeps the rest of the message."""
    if CONTEXT_TAG not in text.lower():
        return text
    kept: list[str] = []
    pos, closes = 0, True  # closes: a closing tag may still follow (once none does, none ever will)
    while opening := _CONTEXT_OPEN.search(text, pos):
        close = _CONTEXT_CLOSE.search(text, opening.end()) if closes else None
        if close is not None:
            kept.append(text[pos : opening.start()])
            pos = close.end()
            continue
        closes = False
        if text.startswith(OPEN, opening.start()):
            kept.append(text[pos : opening.start()])
            pos = len(text)
            break
        kept.append(text[pos : opening.end()])
        pos = opening.end()
    kept.append(text[pos:])
    return "".join(kept).strip()


def clean_records(records: Sequence[TranscriptRecord], max_chars: int) -> list[TranscriptRecord]:
    """Records with recalled context cut out, secrets redacted and text truncated; empty ones dropped."""
    cleaned = []
    for record in records:
        bare = record.copy()
        bare["content"] = strip_context(record["content"])
        out = redact_record(bare, max_chars)
        if out["content"]:
            cleaned.append(out)
    return cleaned


@dataclass
class Queued:
    """A session waiting in the queue (`metadata/agent_sessions.json`): when it last grew, from where,
    and how often its distillation failed since."""

    appended_at: str
    source: str
    failures: int = 0
    error: str | None = None

    @classmethod
    def load(cls, entry: JSONValue) -> Queued | None:
        """The entry as written, or None for one that is not (a damaged queue file loses no work)."""
        if not isinstance(entry, dict):
            return None
        appended_at, source, failures, error = (
            entry.get(k) for k in ("appended_at", "source", "failures", "error")
        )
        return cls(
            appended_at=str(appended_at or ""),
            source=str(source or ""),
            failures=failures if isinstance(failures, int) and not isinstance(failures, bool) else 0,
            error=error if isinstance(error, str) else None,
        )

    def to_json(self) -> JSONObject:
        data: JSONObject = {"appended_at": self.appended_at, "source": self.source}
        if self.failures:
            data["failures"] = self.failures
        if self.error is not None:
            data["error"] = self.error
        return data


def _queue(port: MemoryPort) -> dict[str, Queued]:
    queued = port.read_state(QUEUE_STATE).get("sessions")
    entries = (
        ((session_id, Queued.load(entry)) for session_id, entry in (queued or {}).items())
        if isinstance(queued, dict)
        else ()
    )
    return {session_id: entry for session_id, entry in entries if entry is not None}


def _write_queue(port: MemoryPort, sessions: dict[str, Queued]) -> None:
    port.write_state(QUEUE_STATE, {"sessions": {key: entry.to_json() for key, entry in sessions.items()}})


def _enqueue(port: MemoryPort, session_id: str, source: str) -> None:
    sessions = _queue(port)
    sessions[session_id] = Queued(appended_at=datetime.now(UTC).isoformat(timespec="seconds"), source=source)
    _write_queue(port, sessions)


def _failed(port: MemoryPort, session_id: str, error: str) -> None:
    sessions = _queue(port)
    entry = sessions.get(session_id)
    if entry is not None:
        entry.failures += 1
        entry.error = error
        _write_queue(port, sessions)


def _dequeue(port: MemoryPort, session_id: str, appended_at: str | None) -> None:
    """Drop a session from the queue unless it grew again meanwhile."""
    sessions = _queue(port)
    entry = sessions.get(session_id)
    if entry is not None and (appended_at is None or entry.appended_at == appended_at):
        del sessions[session_id]
        _write_queue(port, sessions)


async def agent_session_append(
    port: MemoryPort,
    *,
    session_id: str,
    messages: Sequence[object],
    source: str,
    max_message_chars: int,
    skipped: Mapping[str, int] | None = None,
    seen: Occurrences | None = None,
) -> Outcome:
    """Save the new turns of a session and queue it for distillation; the same turns twice change nothing.

    A record of a transcript that cannot be used (not an object, an unknown shape, a bad time) is
    left out and counted by reason, with the ones the caller left out before sending (`skipped`:
    lines that were not JSON or over the size bound); every other turn is kept. A caller saving
    one transcript in parts passes the same `seen` to each (`normalise_messages`).

    A session id holding a secret is stored (file names, card, queue) as `stored_session_id` maps it."""
    session_id = stored_session_id(session_id)
    reading = read_source(messages, source, session_id)
    for reason, count in (skipped or {}).items():
        reading.skipped[reason] = reading.skipped.get(reason, 0) + count
    reading.skipped = _redacted_counts(reading.skipped)
    lenient = reading.skip if source != "reme" else None  # reme's own format: a bad message is an error
    raw = normalise_messages(reading.messages, port.tz, READ_CHARS, skip=lenient, seen=seen)
    # redaction is the costly part of a large capture: off the event loop, other sessions go on
    incoming = await asyncio.to_thread(clean_records, raw, max_message_chars)
    async with port.keyed_lock(f"session:{session_id}"):
        saved = await port.load(session_path(port, session_id))
        known = {r["id"] for r in parse_transcript(saved.content if saved else "", port.tz)}
        records, changed = await save_transcript(port, session_id, incoming)
        added = [r for r in incoming if r["id"] not in known]
        note_paths: list[JSONValue] = []
        metadata: JSONObject = {
            "session_path": session_path(port, session_id),
            "added": len(added),
            "received": len(messages),
            "skipped": {**reading.skipped},
            "note_paths": note_paths,
            "queued": False,
        }
        note = skipped_note(reading.skipped)
        if not changed:
            return Outcome(
                f"nothing new: {session_path(port, session_id)} has these messages{note}", metadata
            )
        # turns a resumed session copied from another one are kept (the dialog reads whole) but are
        # not new to memory: the origin's own dialog holds them and is distilled there
        fresh = [r for r in added if r.get("metadata", {}).get("session_id") in (None, session_id)]
        metadata["carried_over"] = len(added) - len(fresh)
        if not fresh:
            return Outcome(
                f"{len(added)} message(s) carried over from an earlier session saved to "
                f"{session_path(port, session_id)}; nothing new to distil{note}",
                metadata,
            )
        days = sorted({d.isoformat() for r in fresh if (d := local_date(r.get("created_at"), port.tz))})
        for day in days or [port.today().isoformat()]:
            card, _front, _created = await ensure_card(port, session_id, day)
            await mark_pending(port, card)
            await port.refresh_day(day)
            note_paths.append(card)
        _enqueue(port, session_id, source)
        metadata["queued"] = True
    return Outcome(
        f"{len(added)} new message(s) saved to {session_path(port, session_id)}; "
        f"distillation queued ({', '.join(map(str, note_paths))} pending){note}",
        metadata,
    )


def _redacted_counts(counts: Mapping[str, int]) -> dict[str, int]:
    """Skip counts by reason with no secret in a reason: a reader names some by the record's own
    `type`, which the transcript decides, and the counts are kept beside the capture's marker."""
    out: dict[str, int] = {}
    for reason, count in counts.items():
        key = redact(reason)
        out[key] = out.get(key, 0) + count
    return out


# records that could not be used, as opposed to records that hold no turn (a summary, a sidechain,
# a snapshot: counted in `skipped` too, but routine)
DAMAGED = ("not_json", "not_an_object", "over_size", "over_depth", "unreadable", "no_message")


def skipped_note(skipped: Mapping[str, int]) -> str:
    """`; 3 record(s) skipped: 2 not_json, 1 not_an_object` for records that could not be used."""
    damaged = {reason: n for reason, n in skipped.items() if reason in DAMAGED and n}
    if not damaged:
        return ""
    listed = ", ".join(f"{n} {reason}" for reason, n in sorted(damaged.items()))
    return f"; {sum(damaged.values())} record(s) skipped: {listed}"


async def agent_session_flush(port: MemoryPort, *, session_id: str, add_usage: AddUsage) -> Outcome:
    """Distil the session's pending cards now (auto_memory's distiller), then take it off the queue."""
    session_id = stored_session_id(session_id)
    if not port.exists(session_path(port, session_id)):
        raise ValueError(
            f"no transcript for session {session_id!r} at {session_path(port, session_id)}: "
            "capture it first with agent_session_append"
        )
    entry = _queue(port).get(session_id)
    appended_at = entry.appended_at if entry is not None else None
    outcome = await auto_memory(
        port,
        session_id=session_id,
        messages=[],
        date_text=None,
        memory_hint="",
        max_message_chars=8000,
        add_usage=add_usage,
    )
    _dequeue(port, session_id, appended_at)
    return outcome


async def distil_queue(port: MemoryPort, *, idle_seconds: float, limit: int, add_usage: AddUsage) -> Outcome:
    """Flush the queued sessions idle for `idle_seconds`, oldest first; without a model nothing moves.

    A session whose distillation failed `MAX_FAILURES` times is left alone until it grows again, so
    a broken model is not called every minute; its card stays pending for `auto_memory_pending`.
    """
    sessions = _queue(port)
    try:
        port.model("memory")
    except LLMUnavailable as missing:
        return Outcome(f"{len(sessions)} session(s) wait, their cards pending: {missing}", {"distilled": []})
    cutoff = datetime.now(UTC) - timedelta(seconds=idle_seconds)
    due = sorted(
        (entry.appended_at, session_id)
        for session_id, entry in sessions.items()
        if _parse(entry.appended_at) <= cutoff and entry.failures < MAX_FAILURES
    )
    distilled: list[JSONValue] = []
    failed: list[JSONValue] = []
    for _when, session_id in due[:limit]:
        try:
            await agent_session_flush(port, session_id=session_id, add_usage=add_usage)
        except (ReMeError, ValueError) as exc:
            error = getattr(exc, "message", None) or str(exc)
            failed.append({"session_id": session_id, "error": error})
            _failed(port, session_id, error)
        else:
            distilled.append(session_id)
    answer = f"distilled {len(distilled)} queued session(s)" + (f", {len(failed)} failed" if failed else "")
    return Outcome(answer, {"distilled": distilled, "failed": failed})


def _parse(stamp: str) -> datetime:
    try:
        return datetime.fromisoformat(stamp)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)

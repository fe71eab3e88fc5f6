"""auto_memory (docs/spec.md §10): save a conversation, then distil it into the session's card of the day.

The transcript is saved before any model is involved, so nothing is lost when the model is
missing or fails: the card is then marked `pending: true` and distilled by the next call for the
session or by `auto_memory_pending`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import date, datetime

from reme.errors import Conflict, LLMUnavailable, ReMeError
from reme.jsontypes import JSONObject, JSONValue
from reme.llm.runner import AgentFailed
from reme.pipelines.capture.messages import READ_CHARS, TranscriptRecord, local_date, normalise_messages
from reme.pipelines.capture.redaction import redact, redact_record, stored_session_id
from reme.pipelines.capture.transcript_merge import merge, parse_transcript
from reme.pipelines.memory.card_dates import render_for_prompt
from reme.pipelines.memory.card_names import short_hash
from reme.pipelines.memory.cards import cards_of_day, daily_days, find_card
from reme.pipelines.memory.distil import distil_card, mark_pending
from reme.pipelines.outcome import AddUsage, Outcome
from reme.pipelines.port import MemoryPort
from reme.workspace import relative_dates
from reme.workspace.dates import parse_date
from reme.workspace.transcript import render_records, transcript_path

SAVE_ATTEMPTS = 3


def session_path(port: MemoryPort, session_id: str) -> str:
    return transcript_path(port.folder("session"), session_id)


async def save_transcript(
    port: MemoryPort, session_id: str, records: Sequence[TranscriptRecord]
) -> tuple[list[TranscriptRecord], bool]:
    """Merge `records` into the saved transcript; (all records, whether the file changed)."""
    path = session_path(port, session_id)
    for attempt in range(SAVE_ATTEMPTS):
        saved = await port.load(path)
        text = saved.content if saved else ""
        merged = merge(parse_transcript(text, port.tz), records, port.tz)
        rendered = render_records(merged)
        if rendered == text or not merged:
            return merged, False
        try:
            await port.save(path, rendered, expected_sha256=saved.sha256 if saved else None)
            return merged, True
        except Conflict:
            if attempt == SAVE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def choose_date(explicit: date | None, records: Sequence[TranscriptRecord], port: MemoryPort) -> date:
    """Explicit date, else the latest message time in the app timezone, else today."""
    if explicit:
        return explicit
    times = [datetime.fromisoformat(created) for r in records if (created := r.get("created_at"))]
    return max(times).astimezone(port.tz).date() if times else port.today()


def records_of_day(
    records: Sequence[TranscriptRecord], day: date, port: MemoryPort
) -> list[TranscriptRecord]:
    """The messages dated `day` plus undated ones; all messages when none is dated that day."""
    if not any(local_date(r.get("created_at"), port.tz) == day for r in records):
        return list(records)
    return [r for r in records if local_date(r.get("created_at"), port.tz) in (day, None)]


async def ensure_card(port: MemoryPort, session_id: str, day: str) -> tuple[str, JSONObject, bool]:
    """(path, front matter, created) of the session's card for `day`, creating it when missing.

    A note that already holds the card's name but not this session (a user's own `main.md`) is never
    taken over: the card gets a short stable suffix instead.
    """
    path = await find_card(port, day, "session_id", session_id)
    created = path is None
    if path is None:
        for name in (session_id, f"{session_id}-{short_hash(session_id)}"):
            candidate, made = await port.create_card(day, name, session_id=session_id)
            if made:
                path = candidate
                break
        else:
            raise ReMeError(f"no free card name for session {session_id!r} on {day}: other notes hold them")
    return path, await port.front_matter(path), created


async def distil_session(
    port: MemoryPort,
    session_id: str,
    day: str,
    card_path: str,
    records: Sequence[TranscriptRecord],
    memory_hint: str,
    add_usage: AddUsage,
) -> str:
    """Run the memory agent on the card; return the card's final path."""
    day_records = records_of_day(records, date.fromisoformat(day), port)
    variables = {
        "session_id": session_id,
        "session_path": session_path(port, session_id),
        "date": day,
        "memory_hint": f"Hint from the caller: {memory_hint}\n" if memory_hint else "",
        "transcript": render_for_prompt(day_records, port.tz, date.fromisoformat(day)),
    }
    distilled = await distil_card(
        port,
        card_path=card_path,
        prompt="auto_memory",
        variables=variables,
        front_matter={
            "session_id": session_id,
            "source_conversation": f"[[{session_path(port, session_id)}]]",
        },
        read_paths=(session_path(port, session_id),),
        add_usage=add_usage,
    )
    await pin_relative_dates(port, distilled.card_path, date.fromisoformat(day))
    return distilled.card_path


async def pin_relative_dates(port: MemoryPort, card_path: str, day: date) -> None:
    """Resolve relative day words the agent left in the card against the card's date."""
    card = await port.load(card_path)
    if card is None:
        return
    pinned = relative_dates.annotate(card.content, day)  # the body only: front matter is never annotated
    if pinned != card.content:
        await port.save(card_path, pinned, expected_sha256=card.sha256)


async def pending_cards_of_session(
    port: MemoryPort, session_id: str, records: Sequence[TranscriptRecord], skip: str
) -> list[tuple[str, str]]:
    """(day, card) of pending cards of this session on the days its messages span, except `skip`."""
    days = sorted(
        {d.isoformat() for r in records if (d := local_date(r.get("created_at"), port.tz))} - {skip}
    )
    found = []
    for day in days:
        for path, front in await cards_of_day(port, day):
            if front.get("session_id") == session_id and front.get("pending"):
                found.append((day, path))
    return found


async def auto_memory(
    port: MemoryPort,
    *,
    session_id: str,
    messages: Sequence[object],
    date_text: str | None,
    memory_hint: str,
    max_message_chars: int,
    add_usage: AddUsage,
) -> Outcome:
    # Validate everything before the first write.
    session_id = stored_session_id(session_id)
    explicit = parse_date(date_text) if date_text else None
    # redacted before the cut (a secret cut in half would survive) and before the first write
    incoming = [
        redact_record(r, max_message_chars) for r in normalise_messages(messages, port.tz, READ_CHARS)
    ]
    async with port.keyed_lock(f"session:{session_id}"):
        return await _remember(port, session_id, incoming, explicit, redact(memory_hint), add_usage)


async def _remember(
    port: MemoryPort,
    session_id: str,
    incoming: list[TranscriptRecord],
    explicit: date | None,
    memory_hint: str,
    add_usage: AddUsage,
) -> Outcome:
    records, changed = await save_transcript(port, session_id, incoming)
    if not records:
        raise ValueError("messages has no message with text content, and the session has no saved transcript")
    day = choose_date(explicit, incoming or records, port).isoformat()
    card_path, front, created = await ensure_card(port, session_id, day)
    metadata: JSONObject = {
        "session_path": session_path(port, session_id),
        "note_path": card_path,
        "date": day,
        "pending": True,
    }
    # Checked before the model: a repeat needs none, and must not mark a distilled card pending.
    if not (changed or created or front.get("pending") or memory_hint):
        metadata["pending"] = False
        return Outcome(
            f"nothing new: {session_path(port, session_id)} and {card_path} are up to date", metadata
        )
    try:
        port.model("memory")
    except LLMUnavailable as missing:
        await mark_pending(port, card_path)
        await port.refresh_day(day)
        raise ReMeError(
            f"conversation saved to {session_path(port, session_id)}; card {card_path} is pending: {missing}",
            metadata,
        ) from None
    done: list[str] = []
    for other_day, other_card in await pending_cards_of_session(port, session_id, records, skip=day):
        final = await _distil_or_fail(
            port, session_id, other_day, other_card, records, "", add_usage, metadata
        )
        await port.refresh_day(other_day)
        done.append(final)
    metadata["note_path"] = await _distil_or_fail(
        port, session_id, day, card_path, records, memory_hint, add_usage, metadata
    )
    metadata["pending"] = False
    await port.refresh_day(day)
    also = f" (also distilled pending {', '.join(done)})" if done else ""
    return Outcome(
        f"{len(incoming)} message(s) saved to {session_path(port, session_id)}; card {metadata['note_path']} updated{also}",
        metadata,
    )


async def _distil_or_fail(
    port: MemoryPort,
    session_id: str,
    day: str,
    card_path: str,
    records: Sequence[TranscriptRecord],
    memory_hint: str,
    add_usage: AddUsage,
    metadata: JSONObject,
) -> str:
    try:
        return await distil_session(port, session_id, day, card_path, records, memory_hint, add_usage)
    except AgentFailed as failure:
        await port.refresh_day(day)
        raise ReMeError(
            f"conversation saved to {session_path(port, session_id)}; card {card_path} left unchanged and pending: {failure.message}",
            metadata,
        ) from None


async def _pending_cards(port: MemoryPort) -> AsyncIterator[tuple[str, str, str]]:
    """(day, card, session_id) of every pending session card, oldest day first."""
    for day in await daily_days(port):
        for path, front in await cards_of_day(port, day):
            session_id = front.get("session_id")
            if front.get("pending") and isinstance(session_id, str):
                yield day, path, session_id


async def _distil_pending(
    port: MemoryPort, day: str, path: str, session_id: str, add_usage: AddUsage
) -> str | None:
    """Distil one listed card under the session lock; None when another run has distilled or moved it."""
    if not port.exists(path):
        return None
    front = await port.front_matter(path)
    if not front.get("pending") or front.get("session_id") != session_id:
        return None
    saved = await port.load(session_path(port, session_id))
    records = parse_transcript(saved.content if saved else "", port.tz)
    if not records:
        raise ValueError(f"{session_path(port, session_id)} is missing or empty")
    return await distil_session(port, session_id, day, path, records, "", add_usage)


async def auto_memory_pending(port: MemoryPort, *, limit: int, add_usage: AddUsage) -> Outcome:
    """Distil every pending session card (oldest day first), at most `limit` of them."""
    port.model("memory")
    distilled: list[str] = []
    failed: list[JSONValue] = []
    async for day, path, session_id in _pending_cards(port):
        if len(distilled) + len(failed) >= limit:
            break
        try:
            async with port.keyed_lock(f"session:{session_id}"):
                final = await _distil_pending(port, day, path, session_id, add_usage)
        except Exception as exc:  # one bad card must not stop the others
            failed.append({"path": path, "error": getattr(exc, "message", None) or str(exc)})
        else:
            if final is None:
                continue
            distilled.append(final)
        await port.refresh_day(day)
    answer = f"distilled {len(distilled)} pending card(s)" + (f", {len(failed)} failed" if failed else "")
    return Outcome(answer, {"distilled": [*distilled], "failed": failed})

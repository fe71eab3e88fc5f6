"""auto_memory (SPEC §10): save a conversation, then distil it into the session's card of the day.

The transcript is saved before any model is involved, so nothing is lost when the model is
missing or fails: the card is then marked `pending: true` and distilled by the next call for the
session or by `auto_memory_pending`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from reme.pipelines.calls import (
    DATE_RE,
    StepFailed,
    call,
    cards_of_day,
    daily_days,
    exists,
    find_card,
    folder,
    keyed_lock,
    load_text,
    save_text,
)
from reme.pipelines.dates import pin_body, render_for_prompt
from reme.pipelines.distil import LLMUnavailable, distil_card, mark_pending, memory_llm
from reme.pipelines.messages import local_date, normalise_messages
from reme.pipelines.names import short_hash
from reme.pipelines.transcript import merge, parse_transcript, render

if TYPE_CHECKING:
    from reme.app.application import Application

SESSION_ID_RE = re.compile(r"[\w][\w.-]{0,127}")
SAVE_ATTEMPTS = 3


class MemoryFailed(RuntimeError):
    """The job cannot finish; `metadata` still says what was saved."""

    def __init__(self, message: str, metadata: dict[str, Any]) -> None:
        super().__init__(message)
        self.message = message
        self.metadata = metadata


@dataclass
class MemoryOutcome:
    answer: str
    metadata: dict[str, Any] = field(default_factory=dict)


def session_path(app: Application, session_id: str) -> str:
    return f"{folder(app, 'session')}/dialog/{session_id}.jsonl"


def check_session_id(session_id: str) -> None:
    """A session id names files (`<id>.jsonl`, the first card): refuse anything unsafe as a file name."""
    from reme.workspace.paths import check_segment

    if not SESSION_ID_RE.fullmatch(session_id) or ".." in session_id:
        raise ValueError(
            f"session_id {session_id!r} must be 1-128 letters, digits, '_', '-' or '.', starting with a letter or digit"
        )
    try:
        check_segment(session_id, "session_id")
    except ValueError as exc:
        raise ValueError(f"session_id {session_id!r} cannot be a file name: {exc}") from None


def check_date(value: str) -> date:
    try:
        if not DATE_RE.fullmatch(value):
            raise ValueError
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"date {value!r} is not a valid YYYY-MM-DD date") from None


async def save_transcript(
    app: Application, session_id: str, records: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], bool]:
    """Merge `records` into the saved transcript; (all records, whether the file changed)."""
    path = session_path(app, session_id)
    for attempt in range(SAVE_ATTEMPTS):
        text, sha = await load_text(app, path)
        merged = merge(parse_transcript(text, app.tz), records, app.tz)
        rendered = render(merged)
        if rendered == text or not merged:
            return merged, False
        try:
            await save_text(app, path, rendered, sha)
            return merged, True
        except RuntimeError:
            if attempt == SAVE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def choose_date(explicit: date | None, records: Sequence[dict[str, Any]], app: Application) -> date:
    """Explicit date, else the latest message time in the app timezone, else today."""
    if explicit:
        return explicit
    times = [datetime.fromisoformat(r["created_at"]) for r in records if r.get("created_at")]
    return max(times).astimezone(app.tz).date() if times else app.today()


def records_of_day(records: Sequence[dict[str, Any]], day: date, app: Application) -> list[dict[str, Any]]:
    """The messages dated `day` plus undated ones; all messages when none is dated that day."""
    if not any(local_date(r.get("created_at"), app.tz) == day for r in records):
        return list(records)
    return [r for r in records if local_date(r.get("created_at"), app.tz) in (day, None)]


async def ensure_card(app: Application, session_id: str, day: str) -> tuple[str, dict[str, Any], bool]:
    """(path, front matter, created) of the session's card for `day`, creating it when missing.

    A note that already holds the card's name but not this session (a user's own `main.md`) is never
    taken over: the card gets a short stable suffix instead.
    """
    path = await find_card(app, day, "session_id", session_id)
    created = path is None
    if path is None:
        for name in (session_id, f"{session_id}-{short_hash(session_id)}"):
            response = await call(app, "daily_create", date=day, name=name, session_id=session_id)
            if response.metadata.get("created"):
                path = str(response.metadata["path"])
                break
        else:
            raise StepFailed(f"no free card name for session {session_id!r} on {day}: other notes hold them")
    front = await call(app, "frontmatter_read", path=path)
    return path, front.metadata.get("front_matter") or {}, created


async def distil_session(
    app: Application,
    session_id: str,
    day: str,
    card_path: str,
    records: Sequence[dict[str, Any]],
    memory_hint: str,
    add_usage: Callable[[dict[str, Any]], None],
) -> str:
    """Run the memory agent on the card; return the card's final path."""
    day_records = records_of_day(records, date.fromisoformat(day), app)
    variables = {
        "session_id": session_id,
        "session_path": session_path(app, session_id),
        "date": day,
        "memory_hint": f"Hint from the caller: {memory_hint}\n" if memory_hint else "",
        "transcript": render_for_prompt(day_records, app.tz, date.fromisoformat(day)),
    }
    distilled = await distil_card(
        app,
        card_path=card_path,
        prompt="auto_memory",
        variables=variables,
        front_matter={
            "session_id": session_id,
            "source_conversation": f"[[{session_path(app, session_id)}]]",
        },
        read_paths=(session_path(app, session_id),),
        add_usage=add_usage,
    )
    await pin_relative_dates(app, distilled.card_path, date.fromisoformat(day))
    return distilled.card_path


async def pin_relative_dates(app: Application, card_path: str, day: date) -> None:
    """Resolve relative day words the agent left in the card against the card's date."""
    text, sha = await load_text(app, card_path)
    pinned = pin_body(text, day)
    if pinned != text:
        await save_text(app, card_path, pinned, sha)


async def pending_cards_of_session(
    app: Application, session_id: str, records: Sequence[dict[str, Any]], skip: str
) -> list[tuple[str, str]]:
    """(day, card) of pending cards of this session on the days its messages span, except `skip`."""
    days = sorted({d.isoformat() for r in records if (d := local_date(r.get("created_at"), app.tz))} - {skip})
    found = []
    for day in days:
        for path, front in await cards_of_day(app, day):
            if front.get("session_id") == session_id and front.get("pending"):
                found.append((day, path))
    return found


async def auto_memory(
    app: Application,
    *,
    session_id: str,
    messages: Sequence[Any],
    date_text: str | None,
    memory_hint: str,
    max_message_chars: int,
    add_usage: Callable[[dict[str, Any]], None],
) -> MemoryOutcome:
    # Validate everything before the first write.
    check_session_id(session_id)
    explicit = check_date(date_text) if date_text else None
    incoming = normalise_messages(messages, app.tz, max_message_chars)
    async with keyed_lock(app, f"session:{session_id}"):
        return await _remember(app, session_id, incoming, explicit, memory_hint, add_usage)


async def _remember(
    app: Application,
    session_id: str,
    incoming: list[dict[str, Any]],
    explicit: date | None,
    memory_hint: str,
    add_usage: Callable[[dict[str, Any]], None],
) -> MemoryOutcome:
    records, changed = await save_transcript(app, session_id, incoming)
    if not records:
        raise ValueError("messages has no message with text content, and the session has no saved transcript")
    day = choose_date(explicit, incoming or records, app).isoformat()
    card_path, front, created = await ensure_card(app, session_id, day)
    metadata: dict[str, Any] = {
        "session_path": session_path(app, session_id),
        "note_path": card_path,
        "date": day,
        "pending": True,
    }
    # Checked before the model: a repeat needs none, and must not mark a distilled card pending.
    if not (changed or created or front.get("pending") or memory_hint):
        metadata["pending"] = False
        return MemoryOutcome(
            f"nothing new: {session_path(app, session_id)} and {card_path} are up to date", metadata
        )
    try:
        memory_llm(app)
    except LLMUnavailable as missing:
        await mark_pending(app, card_path)
        await call(app, "daily_reindex", date=day)
        raise MemoryFailed(
            f"conversation saved to {session_path(app, session_id)}; card {card_path} is pending: {missing}",
            metadata,
        ) from None
    done: list[str] = []
    for other_day, other_card in await pending_cards_of_session(app, session_id, records, skip=day):
        final = await _distil_or_fail(
            app, session_id, other_day, other_card, records, "", add_usage, metadata
        )
        await call(app, "daily_reindex", date=other_day)
        done.append(final)
    metadata["note_path"] = await _distil_or_fail(
        app, session_id, day, card_path, records, memory_hint, add_usage, metadata
    )
    metadata["pending"] = False
    await call(app, "daily_reindex", date=day)
    also = f" (also distilled pending {', '.join(done)})" if done else ""
    return MemoryOutcome(
        f"{len(incoming)} message(s) saved to {session_path(app, session_id)}; card {metadata['note_path']} updated{also}",
        metadata,
    )


async def _distil_or_fail(
    app: Application,
    session_id: str,
    day: str,
    card_path: str,
    records: Sequence[dict[str, Any]],
    memory_hint: str,
    add_usage: Callable[[dict[str, Any]], None],
    metadata: dict[str, Any],
) -> str:
    from reme.llm.runner import AgentFailed

    try:
        return await distil_session(app, session_id, day, card_path, records, memory_hint, add_usage)
    except AgentFailed as failure:
        await call(app, "daily_reindex", date=day)
        raise MemoryFailed(
            f"conversation saved to {session_path(app, session_id)}; card {card_path} left unchanged and pending: {failure.message}",
            metadata,
        ) from None


async def _pending_cards(app: Application) -> AsyncIterator[tuple[str, str, str]]:
    """(day, card, session_id) of every pending session card, oldest day first."""
    for day in await daily_days(app):
        for path, front in await cards_of_day(app, day):
            session_id = front.get("session_id")
            if front.get("pending") and isinstance(session_id, str):
                yield day, path, session_id


async def _distil_pending(
    app: Application, day: str, path: str, session_id: str, add_usage: Callable[[dict[str, Any]], None]
) -> str | None:
    """Distil one listed card under the session lock; None when another run has distilled or moved it."""
    if not exists(app, path):
        return None
    front = (await call(app, "frontmatter_read", path=path)).metadata.get("front_matter") or {}
    if not front.get("pending") or front.get("session_id") != session_id:
        return None
    text, _ = await load_text(app, session_path(app, session_id))
    records = parse_transcript(text, app.tz)
    if not records:
        raise ValueError(f"{session_path(app, session_id)} is missing or empty")
    return await distil_session(app, session_id, day, path, records, "", add_usage)


async def auto_memory_pending(
    app: Application, *, limit: int, add_usage: Callable[[dict[str, Any]], None]
) -> MemoryOutcome:
    """Distil every pending session card (oldest day first), at most `limit` of them."""
    memory_llm(app)
    distilled: list[str] = []
    failed: list[dict[str, str]] = []
    async for day, path, session_id in _pending_cards(app):
        if len(distilled) + len(failed) >= limit:
            break
        try:
            async with keyed_lock(app, f"session:{session_id}"):
                final = await _distil_pending(app, day, path, session_id, add_usage)
        except Exception as exc:  # one bad card must not stop the others
            failed.append({"path": path, "error": getattr(exc, "message", None) or str(exc)})
        else:
            if final is None:
                continue
            distilled.append(final)
        await call(app, "daily_reindex", date=day)
    answer = f"distilled {len(distilled)} pending card(s)" + (f", {len(failed)} failed" if failed else "")
    return MemoryOutcome(answer, {"distilled": distilled, "failed": failed})

"""Normalise chat messages from OpenAI / Anthropic / plain clients into transcript records.

A *message* is what a client sends, in any of those shapes; a *record* (`TranscriptRecord`) is `{id, role, name, content, created_at, metadata?}` with `content` a plain string:
text blocks are kept, tool calls become a short note, tool results and reasoning are dropped, images
and other binary blocks become a placeholder, base64 payloads never survive, oversize text is cut.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime, tzinfo
from typing import NotRequired, TypeAlias, TypedDict

from reme.jsontypes import JSONObject, JSONValue
from reme.pipelines.capture.redaction import redact_head, safe_id

TIME_KEYS = ("created_at", "timestamp", "time_created", "createdAt", "created_time")
DROPPED_ROLES = ("tool", "function", "ipython")
DROPPED_BLOCKS = ("tool_result", "function_call_output", "thinking", "redacted_thinking", "reasoning")
TEXT_BLOCKS = ("text", "input_text", "output_text")
_DATA_URI = re.compile(r"data:[\w.+-]+/[\w.+-]+(?:;[\w=.+-]+)*;base64,[A-Za-z0-9+/=]+")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{400,}={0,2}")
BASE64_NOTE = "[base64 data removed]"


class TranscriptRecord(TypedDict):
    """A message as reme saves it (`reme.workspace.transcript`, docs/spec.md §4); a saved one may hold more keys."""

    id: str
    role: str
    name: str | None
    content: str
    created_at: str | None  # aware ISO 8601 in the app timezone
    metadata: NotRequired[JSONObject]


def strip_base64(text: str) -> str:
    return _BASE64_RUN.sub(BASE64_NOTE, _DATA_URI.sub(BASE64_NOTE, text))


def _scrub(value: JSONValue) -> JSONValue:
    """Strip base64 from every string inside a metadata value."""
    if isinstance(value, str):
        return strip_base64(value)
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    return value


def _tool_note(name: object, args: object) -> str:
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False, default=str)
    args = strip_base64(args)
    head, kept = redact_head(args, 200)  # a secret across the cut leaves no prefix
    return f"[tool call {name}: {head}{'…' if kept < len(args) else ''}]"


def _block_text(block: object) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, Mapping):
        return ""
    kind = block.get("type", "text")
    if kind in DROPPED_BLOCKS:
        return ""
    if kind in TEXT_BLOCKS:
        return str(block.get("text") or "")
    if kind in ("tool_use", "function_call"):
        return _tool_note(block.get("name"), block.get("input", block.get("arguments", {})))
    if kind in ("image", "image_url", "input_image"):
        return "[image]"
    if kind in ("audio", "input_audio"):
        return "[audio]"
    return f"[{kind}]"


def message_text(message: Mapping[str, object]) -> str:
    """The readable text of a message's content plus notes for its OpenAI-style tool calls."""
    content = message.get("content")
    if content is None:
        parts: list[str] = []
    elif isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [_block_text(block) for block in content]
    else:
        raise ValueError(
            f"content must be a string or a list of content blocks, not {type(content).__name__}"
        )
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            function = {}
        parts.append(_tool_note(function.get("name"), function.get("arguments", "")))
    return strip_base64("\n".join(p for p in parts if p)).strip()


def parse_time(value: object, tz: tzinfo) -> datetime:
    """An aware datetime from ISO 8601 text or epoch seconds/milliseconds; naive times are in `tz`."""
    if isinstance(value, bool):
        raise ValueError(f"timestamp {value!r} is not a time")
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e11 else value
        return datetime.fromtimestamp(seconds, tz)
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d+(\.\d+)?", text):
            return parse_time(float(text), tz)
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"timestamp {value!r} is not ISO 8601 (e.g. 2026-06-01T09:30:00+08:00)"
            ) from None
        return moment if moment.tzinfo else moment.replace(tzinfo=tz)
    raise ValueError(f"timestamp {value!r} is not ISO 8601 text or epoch seconds")


def message_time(message: Mapping[str, object], tz: tzinfo) -> datetime | None:
    metadata = message.get("metadata")
    for source in (message, metadata if isinstance(metadata, Mapping) else {}):
        for key in TIME_KEYS:
            if source.get(key) not in (None, ""):
                return parse_time(source[key], tz)
    return None


def _stable_id(role: str, moment: datetime | None, content: str, occurrence: int) -> str:
    """Derived from the instant (in UTC), so a changed app timezone does not give old messages new ids."""
    instant = moment.astimezone(UTC).isoformat() if moment else ""
    digest = hashlib.sha256(f"{role}\x1f{instant}\x1f{content}\x1f{occurrence}".encode()).hexdigest()
    return f"m-{digest[:16]}"


READ_CHARS = 1_000_000  # a message is cleaned whole (a secret cut in half would survive), then truncated


def truncate(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n[truncated {len(text) - max_chars} characters]"


# how often each (role, time, text) of messages without an id was read: the occurrence in a derived id
Occurrences: TypeAlias = dict[tuple[str, str | None, str], int]


def normalise_messages(
    raw: Sequence[object],
    tz: tzinfo,
    max_chars: int = 8000,
    skip: Callable[[str], None] | None = None,
    seen: Occurrences | None = None,
) -> list[TranscriptRecord]:
    """Transcript records for `raw`; raise ValueError naming the first bad message, or, given
    `skip`, leave each bad message out and tell `skip` why (a transcript keeps its other turns).
    `seen` carries the counts of derived ids across the parts of one transcript: a turn repeated
    in a later part (Codex's older rollouts have no times) gets an id of its own, not the first's."""
    records: list[TranscriptRecord] = []
    seen = {} if seen is None else seen
    for index, message in enumerate(raw):
        where = f"messages[{index}]"
        try:
            if not isinstance(message, Mapping):
                raise ValueError(f"{where} must be an object with role and content")
            role = message.get("role")
            if not isinstance(role, str) or not role.strip():
                raise ValueError(f"{where}.role must be a non-empty string")
            try:
                moment = message_time(message, tz)
                text = message_text(message)
            except (ValueError, TypeError, OverflowError) as exc:
                raise ValueError(f"{where}: {exc}") from None
        except ValueError:
            if skip is None:
                raise
            skip("unreadable")
            continue
        if role in DROPPED_ROLES or not text:
            continue
        text = truncate(text, max_chars)
        created_at = moment.astimezone(tz).isoformat() if moment else None
        given_id = message.get("id")
        if given_id not in (None, ""):
            record_id = safe_id(str(given_id))  # an id names the record for good: no secret in it
        else:
            key = (role, created_at, text)
            seen[key] = seen.get(key, 0) + 1
            record_id = _stable_id(role, moment, text, seen[key])
        name = message.get("name")
        record = TranscriptRecord(
            id=record_id,
            role=role,
            name=name if isinstance(name, str) or name is None else str(name),
            content=text,
            created_at=created_at,
        )
        metadata = message.get("metadata")
        if isinstance(metadata, Mapping) and metadata:
            kept = {str(k): _scrub(v) for k, v in metadata.items() if k not in TIME_KEYS}
            if kept:
                record["metadata"] = kept
        records.append(record)
    return records


def local_date(created_at: str | None, tz: tzinfo) -> date | None:
    return datetime.fromisoformat(created_at).astimezone(tz).date() if created_at else None

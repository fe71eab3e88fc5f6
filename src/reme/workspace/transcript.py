"""The session transcript format (`session/dialog/<id>.jsonl`), owned in one place.

One JSON object per line with `id`, `role`, `name`, `content`, `created_at` and optional `metadata`;
reme writes `content` as a string, readers also accept ReMe 0.4's list of `{"type": "text"}` blocks.
The workspace, the index (which renders one message per line for search) and the pipelines (which
merge new messages in) all read and write it through these functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from reme.workspace.paths import check_segment

DIALOG = "dialog"
RECORD_KEYS = ("id", "role", "name", "content", "created_at", "metadata")
# The one session-id rule (jobs and hooks alike): a session id names files (`<id>.jsonl`, a card).
SESSION_ID = re.compile(r"\w[\w.-]{0,127}")


def is_session_id(session_id: object) -> bool:
    """Whether `session_id` is usable as a session's file name (see `check_session_id`)."""
    try:
        check_session_id(session_id)
    except ValueError:
        return False
    return True


def check_session_id(session_id: object) -> str:
    """The session id, or a ValueError saying why it cannot name a session's files."""
    if not isinstance(session_id, str) or not SESSION_ID.fullmatch(session_id) or ".." in session_id:
        raise ValueError(
            f"session_id {session_id!r} must be 1-128 letters, digits, '_', '-' or '.', starting with a letter or digit"
        )
    try:
        check_segment(session_id, "session_id")
    except ValueError as exc:
        raise ValueError(f"session_id {session_id!r} cannot be a file name: {exc}") from None
    return session_id


def transcript_path(session_folder: str, session_id: str) -> str:
    """Workspace path of a session's transcript under the configured session folder."""
    return f"{session_folder}/{DIALOG}/{session_id}.jsonl"


def is_transcript_path(path: str) -> bool:
    """Whether a path names a session transcript (`.../dialog/<id>.jsonl`)."""
    pure = PurePosixPath(path)
    return pure.suffix == ".jsonl" and pure.parent.name == DIALOG


def content_text(content: object) -> str:
    """Plain text of a stored message's content, whether a string or a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return " ".join(parts)
    return "" if content is None else str(content)


def _message(raw_line: str) -> dict[str, Any] | None:
    """The JSON object a transcript line holds, or None for a line that is not one."""
    try:
        message = json.loads(raw_line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def read_line(raw_line: str) -> tuple[str, str]:
    """One transcript line rendered as `[<speaker> @ <created_at>] <text>` on a single line, and who
    wrote it (its message's `role`: `user`, `assistant`, ...; '' when unknown), from one parse.

    A line that is not a JSON message is kept as it is, so nothing written is lost from search.
    """
    message = _message(raw_line)
    if message is None:
        return raw_line.strip(), ""
    role = message.get("role")
    speaker = message.get("name") or role or "unknown"
    text = " ".join(content_text(message.get("content")).split())
    created_at = message.get("created_at")
    rendered = f"[{speaker} @ {created_at}] {text}" if created_at else f"[{speaker}] {text}"
    return rendered, role if isinstance(role, str) else ""


def render_line(raw_line: str) -> str:
    """`read_line`'s rendering alone."""
    return read_line(raw_line)[0]


def parse_records(text: str) -> list[dict[str, Any]]:
    """The message records of a transcript, in file order; a ValueError names the first bad line."""
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"transcript line {number} is not JSON: {exc.msg}") from None
        if not isinstance(record, dict) or "id" not in record:
            raise ValueError(f"transcript line {number} is not a message record with an id")
        records.append(record)
    return records


def render_records(records: Sequence[Mapping[str, object]]) -> str:
    """Transcript text: one record per line, the known keys first in their order, then any others."""
    lines = []
    for record in records:
        ordered = {k: record.get(k) for k in RECORD_KEYS if k != "metadata" or record.get("metadata")}
        ordered.update({k: v for k, v in record.items() if k not in RECORD_KEYS})
        lines.append(json.dumps(ordered, ensure_ascii=False, default=str))
    return "\n".join(lines) + "\n" if lines else ""

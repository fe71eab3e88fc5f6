"""A ChatGPT data export (`conversations.json`) as session transcripts plus one note per conversation.

Each conversation is a tree of `mapping` nodes (`parent`, `children`, `message`); edits and
regenerations are branches. The conversation as the user last saw it is the path from
`current_node` up to the root, so only that branch is imported (a conversation without a usable
`current_node` follows the last child from the root). System messages, hidden context (custom
instructions), tool output and reasoning are left out; the assistant's code-interpreter calls become
tool-call notes. TranscriptRecord ids are the export's own, so a re-import merges instead of duplicating.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, tzinfo

from reme.jsontypes import JSONObject, JSONValue
from reme.pipelines.capture.messages import TranscriptRecord, normalise_messages
from reme.pipelines.capture.redaction import redact
from reme.pipelines.capture.session import clean_records
from reme.pipelines.imports.writing import (
    SAFE_ID,
    ImportBatch,
    ImportedNote,
    ImportedTranscript,
    check_items,
    note_text,
)
from reme.pipelines.memory.card_names import short_hash
from reme.workspace import relative_dates
from reme.workspace.dates import is_date
from reme.workspace.transcript import transcript_path

KIND = "chatgpt"
MAX_TITLE = 200
HIDDEN_TYPES = ("user_editable_context", "model_editable_context", "thoughts", "reasoning_recap")


def conversations_of(data: JSONValue) -> list[JSONValue]:
    """The conversation list of an export: the top-level array (or one conversation object)."""
    if isinstance(data, dict) and "mapping" in data:
        return [data]
    listed = data.get("conversations") if isinstance(data, dict) else None
    if isinstance(listed, list):
        return list(listed)
    if not isinstance(data, list):
        raise ValueError("a ChatGPT export's conversations.json is a JSON array of conversations")
    return data


def branch(conversation: Mapping[str, object]) -> list[Mapping[str, object]]:
    """The nodes from the root to `current_node` (or to the last leaf), root first."""
    mapping = conversation.get("mapping")
    if not isinstance(mapping, Mapping):
        raise ValueError("it has no `mapping` of message nodes")
    node_id = conversation.get("current_node")
    if node_id not in mapping:
        roots = [key for key, node in mapping.items() if isinstance(node, Mapping) and not node.get("parent")]
        node_id = roots[0] if roots else None
        seen: set[object] = set()
        while node_id in mapping and node_id not in seen:
            seen.add(node_id)
            given = mapping[node_id].get("children")
            children = [c for c in given if c in mapping] if isinstance(given, list) else []
            if not children:
                break
            node_id = children[-1]
    path: list[Mapping[str, object]] = []
    visited: set[object] = set()
    while node_id in mapping and node_id not in visited:
        visited.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, Mapping):
            raise ValueError(f"mapping node {node_id!r} is not an object")
        path.append(node)
        node_id = node.get("parent")
    return path[::-1]


def _part(part: object) -> str | JSONObject:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        kind = str(part.get("content_type") or "")
        text = part.get("text")
        if isinstance(text, str):
            return text
        if "image" in kind:
            return {"type": "image"}
        if "audio" in kind:
            return {"type": "audio"}
        return {"type": kind or "attachment"}
    return ""


def message_of(node: Mapping[str, object]) -> dict[str, object] | None:
    """A reme message for a node, or None for nodes a user never saw as conversation."""
    message = node.get("message")
    if not isinstance(message, Mapping):
        return None
    author = message.get("author")
    role = author.get("role") if isinstance(author, Mapping) else None
    metadata = message.get("metadata")
    content = message.get("content")
    if isinstance(content, str):
        content = {"content_type": "text", "parts": [content]}
    if not isinstance(content, Mapping):
        return None
    kind = content.get("content_type")
    if role not in ("user", "assistant") or kind in HIDDEN_TYPES:
        return None
    if isinstance(metadata, Mapping) and metadata.get("is_visually_hidden_from_conversation"):
        return None
    recipient = message.get("recipient")
    given = content.get("parts")
    parts: list[object] = given if isinstance(given, list) else []
    blocks: list[str | JSONObject]
    text = content.get("text")
    if kind == "code" or recipient not in (None, "all"):  # the assistant calling python, dalle, browser...
        call = text if isinstance(text, str) else "\n".join(p for p in parts if isinstance(p, str))
        name = str(recipient) if recipient not in (None, "all") else "code"
        blocks = [{"type": "tool_use", "name": name, "input": call}]
    elif parts:
        blocks = [_part(p) for p in parts]
    elif isinstance(text, str):
        blocks = [text]
    else:
        return None
    extra: Mapping[str, object] = metadata if isinstance(metadata, Mapping) else {}
    attachments = extra.get("attachments")
    files = (
        [a.get("name") for a in attachments if isinstance(a, Mapping)]
        if isinstance(attachments, list)
        else []
    )
    # uploads stay in the export
    blocks += [f"[attachment: {name}]" for name in files if isinstance(name, str)]
    result: dict[str, object] = {
        "id": message.get("id") or node.get("id"),
        "role": role,
        "content": blocks,
        "created_at": message.get("create_time"),
    }
    model = extra.get("model_slug")
    if isinstance(model, str):
        result["metadata"] = {"model": model}
    return result


def _left_branches(conversation: Mapping[str, object], seen: list[Mapping[str, object]]) -> frozenset[str]:
    """Ids of the messages off the branch the user last saw: an earlier import saved them while
    they were on it, and a re-import takes them out (the ids `message_of` gives records)."""
    mapping = conversation["mapping"]
    on_branch = {id(node) for node in seen}
    left: set[str] = set()
    for node in mapping.values() if isinstance(mapping, Mapping) else ():
        message = node.get("message") if isinstance(node, Mapping) else None
        if id(node) not in on_branch and isinstance(message, Mapping):
            given = message.get("id") or node.get("id")
            if given not in (None, ""):
                left.add(str(given))
    return frozenset(left)


def _conversation_id(conversation: Mapping[str, object]) -> str:
    given = str(conversation.get("conversation_id") or conversation.get("id") or "")
    if SAFE_ID.fullmatch(given):
        return given
    return short_hash(f"{conversation.get('title')}\x1f{conversation.get('create_time')}\x1f{given}", 16)


def chatgpt_batch(
    data: JSONValue, tz: tzinfo, *, folder: str, session_folder: str, max_items: int, max_message_chars: int
) -> ImportBatch:
    """Transcripts and conversation notes of every conversation; unusable ones are skipped with a reason."""
    conversations = conversations_of(data)
    check_items(
        conversations,
        limit=max_items,
        what="conversations",
        recognised=lambda c: isinstance(c, Mapping) and "mapping" in c,
        refusal="no item has a `mapping` of messages: this is not a ChatGPT conversations.json",
    )
    batch = ImportBatch()
    for shown, conversation in batch.objects(conversations, "conversations", "conversation"):
        # redacted whole, before the cut: the title names the note, heads it and is indexed
        title = (
            " ".join(redact(str(conversation.get("title") or "")).split())[:MAX_TITLE]
            or "Untitled conversation"
        )
        shown = f"{shown} {title!r}"
        try:
            seen = branch(conversation)
            raw = [m for node in seen if (m := message_of(node))]
            records = clean_records(normalise_messages(raw, tz, max_message_chars), max_message_chars)
        except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
            # one malformed conversation is reported; the others are imported
            batch.skip(shown, f"malformed: {exc}" if not isinstance(exc, ValueError) else str(exc))
            continue
        if not records:
            batch.skip(shown, "no visible user or assistant message")
            continue
        conversation_id = _conversation_id(conversation)
        session_id = f"{KIND}-{conversation_id}"
        superseded = _left_branches(conversation, seen) - {r["id"] for r in records}
        batch.transcripts.append(ImportedTranscript(session_id, records, superseded))
        batch.notes.append(
            _conversation_note(conversation_id, session_id, title, records, folder, session_folder)
        )
    return batch


def _conversation_note(
    conversation_id: str,
    session_id: str,
    title: str,
    records: list[TranscriptRecord],
    folder: str,
    session_folder: str,
) -> ImportedNote:
    transcript = transcript_path(session_folder, session_id)
    times = [created for r in records if (created := r.get("created_at"))]
    day = min(times)[:10] if times else None
    front: JSONObject = {
        "name": title,
        "description": f"ChatGPT conversation{f' of {day}' if day else ''}, {len(records)} message(s)",
        "session_id": session_id,
        "source_conversation": f"[[{transcript}]]",
    }
    if times:
        front.update({"started_at": min(times), "last_message_at": max(times)})
    first = next((r for r in records if r["role"] == "user"), None)
    opening = first["content"] if first else ""
    body = f"# {title}\n\nThe whole conversation: [[{transcript}]]\n"
    if opening:
        shown = opening if len(opening) <= 500 else opening[:500] + "…"
        said = (first["created_at"] or "")[:10] if first else ""
        if is_date(said):  # relative dates resolved against the day it was said (docs/spec.md §17.1)
            shown = relative_dates.annotate(shown, date.fromisoformat(said))
        body += "\nIt opened with:\n\n" + "".join(f"> {line}\n" for line in shown.splitlines()) + "\n"
    return ImportedNote(f"{folder}/{conversation_id}.md", note_text(front, body), conversation_id)

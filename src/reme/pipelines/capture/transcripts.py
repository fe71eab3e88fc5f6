"""Readers for coding agents' own session files: Claude Code's transcript JSONL and Codex CLI rollouts.

Each reader turns the parsed lines of a session file into plain messages (`{id?, role, name?,
content: str, created_at, metadata?}`) that `normalise_messages` accepts. What a user would want in
a memory of the session is kept: the text of both sides, a one-line note per tool call, the start of
each tool result; what is noise or a copy is left out: thinking, sub-agent (sidechain) turns,
meta entries, the recap Claude Code writes after a compaction (its turns were captured before it),
Codex's environment/instruction preambles. Images become `[image]`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from reme.jsontypes import JSONObject, JSONValue
from reme.pipelines.capture.messages import message_text, strip_base64
from reme.pipelines.capture.redaction import redact_head, safe_id

TOOL_RESULT_CHARS = 400
SOURCES = ("reme", "claude_code", "codex")
# A line of an agent's session file, as parsed: read with `isinstance` checks, never trusted.
Entry: TypeAlias = Mapping[str, object]
_CODEX_PREAMBLES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions",
)


@dataclass
class Reading:
    """The messages read from a session file and how many entries were left out, by reason."""

    messages: list[object] = field(default_factory=list)  # JSON objects; normalise_messages checks them
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def _trimmed(text: str, limit: int = TOOL_RESULT_CHARS) -> str:
    # the kept part and a margin redacted before the cut: a secret straddling it leaves no prefix
    # behind, and a huge output costs what its first characters cost
    text = " ".join(strip_base64(text).split())
    head, kept = redact_head(text, limit)
    return head if kept == len(text) else f"{head}… [{len(text) - kept} more characters]"


def tool_result_note(content: object, *, error: bool = False) -> str:
    """`[tool result …: <start of the output>]`: enough to know what came back, never the whole output."""
    if isinstance(content, list):
        text = message_text({"content": [b for b in content if isinstance(b, Mapping | str)]})
    else:
        text = "" if content is None else str(content)
    label = f"tool result{' (error)' if error else ''}"
    return f"[{label}: {_trimmed(text)}]" if text.strip() else f"[{label}]"


# Claude Code ---------------------------------------------------------------------------------


def _claude_user_text(content: object) -> tuple[str, bool]:
    """(text, only tool results) of a user entry's content."""
    if isinstance(content, str):
        return content, False
    if not isinstance(content, list):
        return "", False
    parts, results = [], 0
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            results += 1
            parts.append(tool_result_note(block.get("content"), error=bool(block.get("is_error"))))
        else:
            parts.append(message_text({"content": [block]}))
    return "\n".join(p for p in parts if p), results == len(content) and results > 0


def _claude_entry(entry: Entry, session_id: str | None, out: Reading) -> None:
    kind = entry.get("type")
    if entry.get("isSidechain"):
        out.skip("sidechain")
        return
    if kind == "system" and entry.get("subtype") == "compact_boundary":
        meta = entry.get("compactMetadata") if isinstance(entry.get("compactMetadata"), Mapping) else {}
        trigger = meta.get("trigger") if isinstance(meta, Mapping) else None
        text = f"[conversation compacted{f' ({trigger})' if trigger else ''}]"
        out.messages.append(_claude_message(entry, "system", text, session_id, {"kind": "compaction"}))
        return
    if kind not in ("user", "assistant"):
        out.skip(str(kind or "unknown"))
        return
    if entry.get("isMeta"):
        out.skip("meta")
        return
    if entry.get("isCompactSummary"):
        out.skip("compact_summary")
        return
    message = entry.get("message")
    if not isinstance(message, Mapping):
        out.skip("no_message")
        return
    if kind == "user":
        text, only_results = _claude_user_text(message.get("content"))
    else:
        text, only_results = message_text(message), False
    if not text.strip():
        out.skip("empty")
        return
    extra = {"kind": "tool_result"} if only_results else {}
    name = "tool" if only_results else None
    out.messages.append(_claude_message(entry, str(kind), text, session_id, extra, name=name))


def _claude_message(
    entry: Entry,
    role: str,
    text: str,
    session_id: str | None,
    extra: Mapping[str, JSONValue],
    name: str | None = None,
) -> JSONObject:
    metadata: JSONObject = {**extra}
    origin = entry.get("sessionId")
    # a resumed session carries the turns of the one it resumed, named as that one is stored
    if session_id and isinstance(origin, str) and origin != session_id and safe_id(origin) != session_id:
        metadata["session_id"] = safe_id(origin)
    message: JSONObject = {"role": role, "content": text, "created_at": _json(entry.get("timestamp"))}
    uuid = entry.get("uuid")
    if isinstance(uuid, str) and uuid:
        message["id"] = uuid
    if name:
        message["name"] = name
    if metadata:
        message["metadata"] = metadata
    return message


def read_claude_code(entries: Sequence[object], session_id: str | None = None) -> Reading:
    """Messages of a Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`), ids from
    `uuid`; `session_id` (raw or as stored, `safe_id`) tells this session's turns from resumed ones."""
    out = Reading()
    session_id = safe_id(session_id) if session_id else session_id
    for entry in entries:
        if not isinstance(entry, Mapping):
            out.skip("not_an_object")
            continue
        try:
            _claude_entry(entry, session_id, out)
        except (ValueError, TypeError, AttributeError, KeyError):  # a malformed record: the rest is kept
            out.skip("unreadable")
    return out


def claude_session_id(path: str, entries: Sequence[object]) -> str | None:
    """The session a Claude Code transcript records: its file name (`<session id>.jsonl`) when its
    entries agree or name none, else the id its last entry names (a resumed session's file also
    carries entries of the session it resumed, under their own id)."""
    stem = path.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".jsonl")
    named = [e.get("sessionId") for e in entries if isinstance(e, Mapping)]
    named = [n for n in named if isinstance(n, str)]
    if not named or stem in named:
        return stem or None
    return str(named[-1])


# Codex CLI -----------------------------------------------------------------------------------


def _codex_item(line: Entry) -> tuple[str | None, Entry]:
    """(kind, item) of a rollout line: the current `{timestamp, type, payload}` form or the older bare item."""
    payload = line.get("payload")
    if isinstance(payload, Mapping):
        kind = line.get("type")
        if kind == "response_item":
            return str(payload.get("type")), payload
        return str(kind), payload
    return (str(line["type"]) if "type" in line else None), line


def _arguments(item: Entry) -> object:
    if "arguments" in item:
        return item["arguments"]
    if "input" in item:
        return item["input"]
    action = item.get("action")
    return action.get("command") if isinstance(action, Mapping) else action


def _output_text(output: object) -> str:
    """A function call's output: Codex often wraps it as a JSON string `{"output": ..., "metadata": ...}`."""
    if isinstance(output, str):
        try:
            decoded = json.loads(output)
        except ValueError:
            return output
        if isinstance(decoded, Mapping) and "output" in decoded:
            return str(decoded["output"])
        return output
    if isinstance(output, Mapping) and "content" in output:
        return str(output["content"])
    return "" if output is None else json.dumps(output, ensure_ascii=False, default=str)


def _codex_line(line: Entry, out: Reading) -> None:
    kind, item = _codex_item(line)
    when = _json(line.get("timestamp") or item.get("timestamp"))
    if kind == "message":
        role = item.get("role")
        if role not in ("user", "assistant"):
            out.skip(f"{role}_message")
            return
        text = message_text(item)
        if role == "user" and text.lstrip().startswith(_CODEX_PREAMBLES):
            out.skip("preamble")
            return
        if text:
            out.messages.append({"role": role, "content": text, "created_at": when})
        else:
            out.skip("empty")
    elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
        name = item.get("name") or ("shell" if kind == "local_shell_call" else "tool")
        note = message_text({"content": [{"type": "tool_use", "name": name, "input": _arguments(item)}]})
        out.messages.append({"role": "assistant", "content": note, "created_at": when})
    elif kind in ("function_call_output", "custom_tool_call_output"):
        note = tool_result_note(_output_text(item.get("output")))
        out.messages.append(
            {
                "role": "user",
                "name": "tool",
                "content": note,
                "created_at": when,
                "metadata": {"kind": "tool_result"},
            }
        )
    elif kind == "compacted":
        out.messages.append(
            {
                "role": "system",
                "content": "[conversation compacted]",
                "created_at": when,
                "metadata": {"kind": "compaction"},
            }
        )
    else:
        out.skip(str(kind or "unknown"))


def read_codex(entries: Sequence[object]) -> Reading:
    """Messages of a Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`); ids derived from time and text."""
    out = Reading()
    for line in entries:
        if not isinstance(line, Mapping):
            out.skip("not_an_object")
            continue
        try:
            _codex_line(line, out)
        except (ValueError, TypeError, AttributeError, KeyError):  # a malformed record: the rest is kept
            out.skip("unreadable")
    return out


def codex_session_id(entries: Sequence[object]) -> str | None:
    """The session id a rollout names in its `session_meta` line (or the older first line)."""
    for line in entries[:5]:
        if not isinstance(line, Mapping):
            continue
        payload = line.get("payload") if line.get("type") == "session_meta" else line
        found = payload.get("id") if isinstance(payload, Mapping) else None
        if isinstance(found, str) and found:
            return found
    return None


def _json(value: object) -> JSONValue:
    """A value read from a session file as the JSON it was (a time is text or a number)."""
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def read_source(entries: Sequence[object], source: str, session_id: str | None = None) -> Reading:
    """Messages of `entries` in the format `source` names (`reme`: messages as auto_memory takes them)."""
    if source == "claude_code":
        return read_claude_code(entries, session_id)
    if source == "codex":
        return read_codex(entries)
    if source == "reme":
        return Reading(messages=list(entries))  # normalise_messages checks each
    raise ValueError(f"source {source!r} is not one of {', '.join(SOURCES)}")

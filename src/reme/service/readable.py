"""Readable renderings of answers that are objects or JSON text, for a person reading the CLI.

A job's answer is what an agent or client reads (`stat` answers JSON text, `proactive_read` an
object); the CLI prints text a person reads instead, built from the answer and the Response's
metadata, whether stdout is a terminal or a pipe; `--json` prints the whole Response. Answers that
are data to be saved (`export_digest`, `read_image`'s base64) stay as they are unless shown on a
terminal. Standard library only: the CLI imports it on every call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from reme.jsontypes import JSONObject, JSONValue

Renderer = Callable[[JSONValue, JSONObject], str | None]
DATA_JOBS = frozenset({"export_digest", "read_image"})  # their answer is the data itself when piped


def _value(value: JSONValue) -> str:
    """A scalar as itself, anything else as compact JSON (one line)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _fields(mapping: JSONObject, indent: str = "") -> list[str]:
    """`key: value` lines; nested objects indented under their key, lists of scalars on one line."""
    lines = []
    for key, value in mapping.items():
        if isinstance(value, dict) and value:
            lines += [f"{indent}{key}:", *_fields(value, indent + "  ")]
        elif isinstance(value, list) and value and len(_objects(value)) == len(value):
            lines.append(f"{indent}{key}:")
            for item in _objects(value):
                inner = _fields(item, indent + "    ")
                lines += [f"{indent}  - {inner[0].strip()}", *inner[1:]] if inner else [f"{indent}  - {{}}"]
        else:
            lines.append(f"{indent}{key}: {_value(value)}")
    return lines


def _objects(value: JSONValue) -> list[JSONObject]:
    """The objects of a list (an answer's agenda items, topics); nothing from a non-list."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _when(mtime: JSONValue) -> str:
    if not isinstance(mtime, (int, float)):
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(mtime))


def _stat(answer: JSONValue, meta: JSONObject) -> str | None:
    """`path — file, 56 bytes, modified ...; 1 outlink(s), 0 inlink(s)`, then the front matter."""
    if "type" not in meta:
        return None
    head = (
        f"{meta.get('path')} — {meta['type']}, {meta.get('size')} bytes, modified {_when(meta.get('mtime'))}; "
        f"{meta.get('outlink_count', 0)} outlink(s), {meta.get('inlink_count', 0)} inlink(s)"
    )
    front = meta.get("front_matter")
    return "\n".join(
        [head, *(["front matter:", *_fields(front, "  ")] if isinstance(front, dict) and front else [])]
    )


def _front_matter(answer: JSONValue, meta: JSONObject) -> str | None:
    front = meta.get("front_matter")
    if not isinstance(front, dict):
        return None
    return "\n".join(_fields(front)) if front else f"{meta.get('path')} has no front matter"


def _read_image(answer: JSONValue, meta: JSONObject) -> str:
    return (
        f"{meta.get('path')}: {meta.get('mime_type')}, {meta.get('size')} bytes (--json prints it as base64)"
    )


def _proactive_read(answer: JSONValue, meta: JSONObject) -> str | None:
    """The day's agenda first (what to raise, how, in order), then the topics it comes from."""
    if not isinstance(answer, dict):
        return None
    lines = [str(answer.get("summary", ""))]
    agenda = _objects(answer.get("agenda"))
    if agenda:
        lines += ["", "Agenda:"]
        for n, item in enumerate(agenda, 1):
            lines.append(
                f"{n}. {item.get('title', '')}  [{item.get('scenario_type', '')}, {item.get('topic_id', '')}]"
            )
            for label, key in (("say", "opener"), ("next", "next_action"), ("why now", "order_reason")):
                if item.get(key):
                    lines.append(f"   {label}: {item[key]}")
            for key in ("preconditions", "linked_memory"):
                listed = item.get(key)
                if listed:
                    values = listed if isinstance(listed, list) else [listed]
                    lines.append(f"   {key.replace('_', ' ')}: {', '.join(map(str, values))}")
    topics = _objects(answer.get("topics"))
    if topics:
        lines += ["", "Topics:"]
        for topic in topics:
            confidence = topic.get("confidence")
            score = f"{confidence:.2f}" if isinstance(confidence, (int, float)) else "?"
            kind = f"{topic['kind']}, " if topic.get("kind") else ""
            lines.append(f"- {topic.get('title', '')}  ({kind}{score}, {topic.get('id', '')})")
            if topic.get("reason"):
                lines.append(f"  {topic['reason']}")
            if topic.get("evidence"):
                lines.append(f"  evidence: {topic['evidence']}")
    return "\n".join(lines)


RENDERERS: dict[str, Renderer] = {
    "proactive_read": _proactive_read,
    "stat": _stat,
    "frontmatter_read": _front_matter,
    "read_image": _read_image,
}


def readable(job: str | None, response: JSONObject, terminal: bool) -> str | None:
    """The text a person reads for this successful Response, or None to print its answer as it is.

    Every object answer gets text: the job's own rendering, else its fields as `key: value` lines.
    """
    name = job or ""
    if name in DATA_JOBS and not terminal:
        return None
    answer, meta = response.get("answer"), response.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    renderer = RENDERERS.get(name)
    text = renderer(answer, meta) if renderer is not None else None
    if text is None and isinstance(answer, dict) and name != "export_digest":
        text = "\n".join(_fields(answer))
    return text

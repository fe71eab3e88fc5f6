"""Readable terminal renderings of structured answers, for jobs whose answer is an object.

Standard library only: the CLI imports it on every call. `--json` and piped output keep the object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _proactive_read(answer: dict[str, Any]) -> str:
    """The day's agenda first (what to raise, how, in order), then the topics it comes from."""
    lines = [str(answer.get("summary", ""))]
    agenda = answer.get("agenda") or []
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
                if item.get(key):
                    lines.append(f"   {key.replace('_', ' ')}: {', '.join(map(str, item[key]))}")
    topics = answer.get("topics") or []
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


RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {"proactive_read": _proactive_read}


def readable(job: str | None, answer: Any) -> str | None:
    """A terminal text for this job's structured answer, or None to print it as JSON."""
    renderer = RENDERERS.get(job or "")
    return renderer(answer) if renderer and isinstance(answer, dict) else None

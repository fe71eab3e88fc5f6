"""Shared pieces of the proactive tests: model replies, workspace snapshots."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

from reme.pipelines.proactive.topics import topic_id


def found(title: str, *paths: str, confidence: float = 0.9, kind: str = "follow_up", **extra: Any) -> dict:
    return {
        "title": title,
        "reason": f"the notes keep coming back to {title}",
        "kind": kind,
        "confidence": confidence,
        "evidence_paths": list(paths),
        **extra,
    }


def plan_for(title: str, **extra: Any) -> dict:
    return {
        "topic_id": topic_id(title),
        "scenario_type": "resume_task",
        "opener": f"Shall we pick up {title}?",
        "next_action": f"open the notes on {title}",
        "why_now": "recent evidence",
        **extra,
    }


def reply(
    topics: list[dict],
    *,
    resolved: list[dict] | None = None,
    plans: list[dict] | None = None,
    order: list[str] | None = None,
) -> dict:
    """One structured reply that serves every stage (each stage's schema reads its own keys).

    The scripted model replays its script from the first turn on every call, so one script answers
    extract (`topics`, `resolved`), plan (`plans`) and agenda (`order`) alike.
    """
    titles = [t["title"] for t in topics]
    return {
        "topics": topics,
        "resolved": resolved or [],
        "plans": plans if plans is not None else [plan_for(t) for t in titles],
        "order": [{"topic_id": i, "order_reason": f"reason for {i}"} for i in (order or [])],
    }


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under the workspace except the index's own files (metadata/ catalogs kept)."""
    files = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if (
            path.is_file()
            and not relative.startswith(("metadata/index", "metadata/locks"))
            and ".tmp" not in relative
        ):
            files[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return {k: v for k, v in files.items() if not k.startswith("metadata/") or k == "metadata/proactive.json"}


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def write_note(root: Path, relative: str, text: str) -> None:
    target = root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")

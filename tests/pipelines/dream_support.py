"""Helpers of the auto_dream tests: daily material on disk, scripted runs, and the workspace state."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reme.errors import ReMeError
from reme.pipelines.dream.run import DreamSettings, auto_dream
from reme.testing.memory_port import InMemoryPort
from reme.workspace.buckets import buckets_page

DAY = "2026-06-20"
CARD = f"daily/{DAY}/release.md"
NODE = "digest/wiki/weekly-releases.md"
CARD_TEXT = (
    "---\nname: release\ndescription: Release talk.\n---\n"
    "# Release\n\n- After the outage the team chose weekly releases.\n- Rollback needs one approver.\n"
)


def body(*sources: str, text: str = "The team releases weekly; a rollback needs one approver.") -> str:
    lines = "\n".join(f"- derived_from:: [[{s}]] — the release decision." for s in sources)
    return f"# Weekly releases\n\n{text}\n\n## Sources\n{lines}\n"


def put(ws: Path, path: str, text: str) -> Path:
    target = ws / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def unit(name: str = "Weekly releases", *evidence: str, bucket: str = "wiki") -> dict[str, Any]:
    return {
        "name": name,
        "summary": f"{name}: the abstraction.",
        "bucket": bucket,
        "evidence_paths": list(evidence or [CARD]),
    }


def extract_run(*units: dict[str, Any]) -> dict[str, Any]:
    return {"run": "extract", "turns": [{"output": {"units": list(units)}}]}


def integrate_run(turns: list[dict[str, Any]], name: str = "*") -> dict[str, Any]:
    return {"run": f"integrate:{name}", "turns": turns}


def report(action: str, target: str = NODE, reason: str = "new abstraction") -> dict[str, Any]:
    return {"output": {"action": action, "target_path": target, "reason": reason}}


def create_turns(path: str = NODE, content: str | None = None) -> list[dict[str, Any]]:
    return [
        {
            "tool": "digest_write",
            "args": {"path": path, "content": content or body(CARD), "description": "Release cadence."},
        },
        report("CREATE", path),
    ]


def catalog(ws: Path) -> dict[str, Any]:
    path = ws / "metadata/dream.json"
    return json.loads(path.read_text(encoding="utf-8")).get("files", {}) if path.exists() else {}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def journal_runs(ws: Path) -> list[dict[str, Any]]:
    folder = ws / "journal/dream/runs"
    return (
        [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
        if folder.is_dir()
        else []
    )


@dataclass
class Outcome:
    """A pipeline run as its job would answer: success, answer and metadata (a failure's too)."""

    success: bool
    answer: str
    metadata: dict[str, Any]


def port_of(ws: Path, script: list[dict[str, Any]] | None = None, **settings: Any) -> InMemoryPort:
    """An in-memory port over `ws` playing `script` (no application is started)."""
    return InMemoryPort(ws, script=script or [], **settings)


def dream_settings(port: InMemoryPort) -> DreamSettings:
    """The settings the auto_dream step gives by default, for the port's buckets."""
    return DreamSettings(
        buckets=[bucket.name for bucket in port.buckets],
        buckets_page=buckets_page(port.buckets, port.folder("digest")),
    )


async def dream(
    port: InMemoryPort, date: str | None = DAY, *, scan_days: int = 2, max_units: int = 5, hint: str = ""
) -> Outcome:
    """One auto_dream run on the port, with the step's defaults."""
    try:
        done = await auto_dream(
            port,
            dream_settings(port),
            date_text=date,
            scan_days=scan_days,
            max_units=max_units,
            hint=hint,
            add_usage=lambda _usage: None,
        )
    except ReMeError as exc:
        return Outcome(False, exc.message, exc.metadata)
    return Outcome(True, done.answer, done.metadata)

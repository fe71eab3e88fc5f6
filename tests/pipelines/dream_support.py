"""Helpers of the auto_dream tests: daily material on disk, scripted runs, and the workspace state."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reme.errors import ReMeError
from reme.pipelines.digest.audit import AuditSettings, digest_audit
from reme.pipelines.digest.maintain import MaintainSettings, digest_maintain
from reme.pipelines.dream.run import DreamSettings, auto_dream
from reme.pipelines.journal.changelog import changelog, run_detail
from reme.pipelines.journal.revert import dream_revert
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


def corroborate_turns(source: str, why: str = "again.", path: str = NODE) -> list[dict[str, Any]]:
    """Read the node, add `source` to its `## Sources` with `why`, report CORROBORATE."""
    edit = {
        "tool": "digest_edit",
        "args": {
            "path": path,
            "old": "## Sources\n",
            "new": f"## Sources\n- derived_from:: [[{source}]] — {why}\n",
        },
    }
    return [{"tool": "read", "args": {"path": path}}, edit, report("CORROBORATE", path)]


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
    """A pipeline run as its job answers it: success, answer and metadata (a failure's too)."""

    success: bool
    answer: str
    metadata: dict[str, Any]


async def _answered(run: Awaitable[Any]) -> Outcome:
    try:
        done = await run
    except ReMeError as exc:
        return Outcome(False, exc.message, exc.metadata)
    return Outcome(True, done.answer, dict(done.metadata))


class Pipes:
    """The dream, maintain, revert, audit and journal pipelines on an `InMemoryPort` (no application),
    with their jobs' default parameters and settings, answered as their jobs answer."""

    def __init__(self, root: Path, script: list[dict[str, Any]] | None = None, **port: Any) -> None:
        self.port = InMemoryPort(root, script=script or [], **port)
        self.workspace_dir = self.port.root

    @property
    def script(self) -> list[Any]:
        return self.port.script

    @script.setter
    def script(self, turns: list[dict[str, Any]]) -> None:
        self.port.script = list(turns)

    def dream_settings(self) -> DreamSettings:
        buckets = self.port.buckets
        return DreamSettings([b.name for b in buckets], buckets_page(buckets, self.port.folder("digest")))

    async def dream(
        self, date: str | None = DAY, *, scan_days: int = 2, max_units: int = 5, hint: str = ""
    ) -> Outcome:
        return await _answered(
            auto_dream(
                self.port,
                self.dream_settings(),
                date_text=date,
                scan_days=scan_days,
                max_units=max_units,
                hint=hint,
                add_usage=lambda _usage: None,
            )
        )

    async def maintain(
        self, path: str | None = None, *, max_splits: int = 1, settings: MaintainSettings = MaintainSettings()
    ) -> Outcome:
        return await _answered(
            digest_maintain(
                self.port, settings, path=path, max_splits=max_splits, add_usage=lambda _usage: None
            )
        )

    async def revert(self, run_id: str, *, force: bool = False) -> Outcome:
        return await _answered(dream_revert(self.port, run_id=run_id, force=force))

    async def audit(self, settings: AuditSettings = AuditSettings()) -> Outcome:
        return await _answered(digest_audit(self.port, settings))

    async def journal(
        self,
        run_id: str | None = None,
        *,
        limit: int = 10,
        kind: str | None = None,
        max_diff_lines: int = 400,
    ) -> Outcome:
        if run_id:
            return await _answered(run_detail(self.port, run_id=run_id, max_diff_lines=max_diff_lines))
        return await _answered(changelog(self.port, limit=limit, kind=kind))

    async def write_node(self, path: str, content: str, description: str) -> None:
        """A node written as `digest_write` writes it (the digest rules apply)."""
        await self.port.write_node(path, content, description=description)

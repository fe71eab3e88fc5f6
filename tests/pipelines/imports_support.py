"""Shared pieces of the import tests: the hand-written fixtures folder and small readers of what landed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.pipelines.port_jobs import PortApp

from reme import ReMe
from reme.workspace import frontmatter

DATA = Path(__file__).with_name("imports_data")


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def front(path: Path) -> dict[str, Any]:
    return frontmatter.parse(path.read_text(encoding="utf-8")).metadata


def transcript(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def dialog(workspace: Path, session_id: str) -> list[str]:
    """The text of each saved turn of a session, in order; [] when none is saved."""
    path = workspace / "session" / "dialog" / f"{session_id}.jsonl"
    return [record["content"] for record in transcript(path)] if path.exists() else []


async def run_ok(app: ReMe | PortApp, job: str, **params: Any) -> dict[str, Any]:
    response = await app.run(job, **params)
    assert response.success, response.answer
    return response.metadata

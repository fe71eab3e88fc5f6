"""Fixtures of the sync tests: a bare repository on this machine as the remote, machines syncing with it."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from reme import ReMe

Machine = Callable[..., Awaitable[ReMe]]


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """An empty bare repository: the hosted remote of these tests."""
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


@pytest.fixture
async def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Machine]:
    """`await machine(name, **overrides)`: a started app over `tmp_path/<name>` (no cron, no LLM from the env)."""
    for name in (
        "LLM_API_KEY",
        "LLM_BASE_URL",
        "LLM_MODEL",
        "REME_SYNC_REMOTE",
        "REME_SYNC_AUTHOR",
        "REME_SYNC_HOST",
    ):
        monkeypatch.delenv(name, raising=False)
    started: list[ReMe] = []

    async def make(name: str, **overrides: Any) -> ReMe:
        app = ReMe(workspace_dir=tmp_path / name, timezone="UTC", **{"scheduler.cron": False, **overrides})
        await app.start()
        started.append(app)
        return app

    yield make
    for app in reversed(started):
        await app.close()


def tree(root: Path) -> dict[str, bytes]:
    """Every file of a workspace outside .git and metadata/, by relative path."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.relative_to(root).parts[0] not in (".git", "metadata")
    }


def git(root: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=check).stdout

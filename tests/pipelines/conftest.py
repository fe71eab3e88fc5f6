"""Fixtures of the pipeline tests: pipelines on an in-memory port, or started applications, over a temporary workspace."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.pipelines.dream_support import Pipes

from reme import ReMe
from reme.llm.testing.fake_openai import FakeOpenAI

LLM_ENV = (
    "LLM_API_KEY",
    "LLM_BASE_URL",
    "LLM_MODEL",
    "LLM_BACKEND",
    "LLM_TIMEOUT",
    "LLM_MEMORY_MODEL",
    "LLM_MEMORY_BASE_URL",
    "LLM_MEMORY_API_KEY",
)

MakeApp = Callable[..., Awaitable[ReMe]]
MakePipes = Callable[..., Pipes]


@pytest.fixture
async def make_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[MakeApp]:
    """`await make_app(tz, **overrides)`: a started app on `tmp_path/ws`, no LLM settings from the environment."""
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    started: list[ReMe] = []

    async def make(tz: str = "UTC", **overrides: Any) -> ReMe:
        app = ReMe(workspace_dir=tmp_path / "ws", timezone=tz, **overrides)
        await app.start()
        started.append(app)
        return app

    yield make
    for app in reversed(started):
        await app.close()


@pytest.fixture
def make_pipes(tmp_path: Path) -> MakePipes:
    """`make_pipes(script)`: the dream/maintain/revert/audit/journal pipelines on an in-memory port over
    `tmp_path/ws` (no application: for pipeline logic; tests of jobs, HTTP and kills use `make_app`)."""

    def make(script: list[dict[str, Any]] | None = None, **port: Any) -> Pipes:
        return Pipes(tmp_path / "ws", script, **port)

    return make


def scripted(script: list[dict[str, Any]]) -> dict[str, Any]:
    """Overrides selecting the scripted LLM backend with this script."""
    return {"components.llm.backend": "scripted", "components.llm.script": script}


def served_by(server: FakeOpenAI, **settings: Any) -> dict[str, Any]:
    """Overrides pointing the openai backend at the fake server."""
    values = {
        "model": "fake-model",
        "base_url": server.base_url,
        "api_key": "test-key",
        "timeout": 5,
        **settings,
    }
    return {f"components.llm.{k}": v for k, v in values.items()}

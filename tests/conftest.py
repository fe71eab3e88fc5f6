"""Fixtures shared by every test area."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from tests.support import TEST_PLUGINS

from reme import ReMe
from reme.llm import output_modes
from reme.llm.testing.fake_openai import FakeOpenAI

# The scripted LLM backend is a test double, never an installed entry point: the suite opts in
# (docs/testing.md); `reme_env()` passes the same opt-in to the `reme` processes tests start.
os.environ["REME_PLUGINS"] = TEST_PLUGINS

# Property tests explore the same examples on every run: a failure is reproducible, never luck.
settings.register_profile("reme", derandomize=True, deadline=None)
settings.load_profile("reme")


@pytest.fixture(autouse=True)
def fresh_output_modes() -> Iterator[None]:
    """Fake servers reuse ports: an output-mode fallback remembered in one test must not leak into another."""
    output_modes.forget()
    yield


@pytest.fixture
def workspace_dir(tmp_path: Path) -> Path:
    """A fresh workspace folder (not yet created: the application creates its layout)."""
    return tmp_path / "workspace"


@pytest.fixture
async def app(workspace_dir: Path) -> AsyncIterator[ReMe]:
    """A started application on the default config over a temporary workspace, in UTC."""
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC") as started:
        yield started


@pytest.fixture
def fake_server() -> Iterator[FakeOpenAI]:
    """A real local OpenAI-compatible server replaying scripted replies (and injected faults)."""
    server = FakeOpenAI()
    try:
        yield server
    finally:
        server.close()

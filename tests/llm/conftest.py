"""Fixtures of the LLM layer: a real fake OpenAI-compatible server on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reme.llm.testing.fake_openai import FakeOpenAI


@pytest.fixture
def fake_server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    try:
        yield server
    finally:
        server.close()

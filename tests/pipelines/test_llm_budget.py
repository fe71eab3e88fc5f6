"""A server that accepts connections and never answers: no job run outlives its LLM time budget."""

from __future__ import annotations

import time

import pytest
from tests.pipelines.conftest import MakeApp
from tests.pipelines.test_server_profiles import SCENARIOS

from reme.llm.providers import build_model
from reme.llm.settings import resolve_settings
from reme.llm.testing.fake_openai import SilentServer

BUDGET = 4.0
TIMEOUT = 1.0
SLACK = 2.5  # the job's own file work around its model calls, on a busy machine


@pytest.fixture(autouse=True)
def warm_imports() -> None:
    """The first model built in a process imports pydantic-ai (seconds on a busy machine), which is
    wall-clock time of the job run that pays it; the runs timed here should not."""
    import pydantic_ai.messages
    import pydantic_ai.usage
    from pydantic_ai import Agent

    model = build_model(resolve_settings({"model": "m", "base_url": "http://127.0.0.1:9/v1"}))
    Agent(model, instructions="warm")
    assert pydantic_ai.messages and pydantic_ai.usage


@pytest.mark.parametrize("pipeline", list(SCENARIOS))
async def test_no_run_outlives_its_budget_against_a_server_that_never_answers(
    make_app: MakeApp, pipeline: str
) -> None:
    server = SilentServer()
    try:
        settings = {
            "model": "m",
            "base_url": server.base_url,
            "api_key": "k",
            "timeout": TIMEOUT,
            "max_retries": 5,  # retries would take 6 x 1 s per call; the budget stops them
            "run_budget": BUDGET,
        }
        app = await make_app(**{f"components.llm.{k}": v for k, v in settings.items()})
        started = time.monotonic()
        response = await SCENARIOS[pipeline].run(app)
        took = time.monotonic() - started
    finally:
        server.close()
    assert not response.success
    assert took < BUDGET + SLACK, (pipeline, took, response.answer)
    assert server.connections >= 1  # it really asked the silent server
    assert "budget" in response.answer or "no answer within" in response.answer, response.answer
    assert len(response.answer) < 700, response.answer


async def test_a_pipeline_may_lower_the_timeout_but_never_raise_it(make_app: MakeApp) -> None:
    """proactive_refresh's own `llm_timeout_seconds: 300` gives way to a configured 0.5 s."""
    server = SilentServer()
    try:
        settings = {"model": "m", "base_url": server.base_url, "timeout": 0.5, "max_retries": 0}
        app = await make_app(**{f"components.llm.{k}": v for k, v in settings.items()})
        started = time.monotonic()
        response = await SCENARIOS["proactive_refresh"].run(app)
        took = time.monotonic() - started
    finally:
        server.close()
    assert not response.success and "no answer within 0.5 s (1 request sent)" in response.answer
    assert took < 0.5 + SLACK, took

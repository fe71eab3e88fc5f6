"""Misbehaving local model servers (llama.cpp, Ollama, vLLM, LM Studio as they fail in the wild),
played by the fake server: every run ends within its configured bounds (`timeout`, `max_retries`,
`run_budget`) with a short failure that says what went wrong and what to do, memory stays bounded,
the workspace is left as it was, and bad vectors never reach the index."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from tests.pipelines.conftest import MakeApp, served_by
from tests.pipelines.test_auto_memory import TRIP, front_matter
from tests.support import packaged_tools

from reme import ReMe
from reme.errors import ReMeError
from reme.llm.providers import build_model
from reme.llm.runner import AgentFailed, AgentResult, run_agent
from reme.llm.settings import ModelSettings
from reme.llm.testing.fake_openai import FakeOpenAI, hashed_words
from reme.llm.tools import PathPolicy

TOOLS = packaged_tools()
CARD = "daily/2026-06-01/trip-1.md"
SUMMARY = {"output": {"name": "n", "description": "d"}}
SHORT = 700  # characters of a failure answer at most


class Summary(BaseModel):
    name: str
    description: str


class Jobs:
    """Answers every tool call like a job that did nothing; records the jobs reached."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def __call__(self, job: str, **params: Any) -> Any:
        from reme.app.jobs import Response

        self.calls.append(job)
        return Response(True, f"{job} done", {})


def settings_for(server: FakeOpenAI, **changes: Any) -> ModelSettings:
    base: dict[str, Any] = {
        "backend": "openai",
        "model": "fake-model",
        "base_url": server.base_url,
        "api_key": "k",
        "timeout": 2.0,
        "max_retries": 1,
        "output_retries": 1,
        "run_budget": 8.0,
    }
    return ModelSettings(**{**base, **changes})


async def run(
    server: FakeOpenAI | None, settings: ModelSettings, jobs: Jobs | None = None
) -> AgentResult[Any]:
    return await run_agent(
        model=build_model(settings),
        settings=settings,
        run_job=jobs or Jobs(),
        instructions="You write notes.",
        prompt="Summarise.",
        tools=[TOOLS["read"], TOOLS["write"]],
        policy=PathPolicy(read=("notes/a.md",), write=("notes/a.md",)),
        output_type=Summary,
    )


async def fails(server: FakeOpenAI, settings: ModelSettings, within: float, jobs: Jobs | None = None) -> str:
    """The failure answer of a run that must fail within `within` seconds; it is short."""
    started = time.monotonic()
    with pytest.raises(AgentFailed) as failed:
        await run(server, settings, jobs)
    took = time.monotonic() - started
    assert took < within, (took, failed.value.message)
    assert len(failed.value.message) < SHORT, failed.value.message
    return failed.value.message


def completion(message: Any, finish: str = "stop") -> str:
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return json.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [choice]})


VALID = completion({"role": "assistant", "content": "hello"})
NO_COMPLETION = {
    "html": ("<html><body>502 Bad Gateway</body></html>", "502 Bad Gateway"),
    "truncated_json": (VALID[: len(VALID) // 2], '"choices": [{"index": 0,'),
    "no_choices": (json.dumps({"id": "x", "object": "chat.completion"}), '"object": "chat.completion"'),
    "empty_choices": (json.dumps({"id": "x", "choices": []}), '"choices": []'),
    "null_message": (completion(None), '"message": null'),
    "error_in_200": (json.dumps({"error": {"message": "model not loaded"}}), "model not loaded"),
}


@pytest.mark.parametrize("name", list(NO_COMPLETION))
async def test_a_200_that_is_no_completion_fails_at_once_quoting_the_server(
    fake_server: FakeOpenAI, name: str
) -> None:
    """Was: `IndexError: list index out of range`, or a pydantic validation dump claiming output retries."""
    body, quoted = NO_COMPLETION[name]
    fake_server.set_script([{"fault": "raw", "body": body}])
    message = await fails(fake_server, settings_for(fake_server), within=5)
    assert message.startswith(
        "LLM request failed (1 request sent): the server answered HTTP 200 with no chat"
    )
    assert quoted in message and "LLM_BASE_URL" in message, message
    assert len(fake_server.requests) == 1  # the same garbage would come again: not retried


@pytest.mark.parametrize(
    ("entry", "hint"),
    [
        (
            {"fault": "raw", "body": completion({"role": "assistant", "content": None})},
            "output_mode=prompted",
        ),
        ({"text": '{"name": "Kyo', "finish_reason": "length"}, "raise components.llm.max_tokens"),
    ],
    ids=["null_content", "length_mid_json"],
)
async def test_an_empty_or_cut_off_reply_is_asked_again_then_named(
    fake_server: FakeOpenAI, entry: dict[str, Any], hint: str
) -> None:
    """Was: `Exceeded maximum output retries (1)` and nothing more."""
    fake_server.set_script([entry])
    message = await fails(fake_server, settings_for(fake_server), within=5)
    assert "stayed invalid (2 requests sent, 1 output retries)" in message and hint in message, message


async def test_a_connection_closed_mid_body_is_retried_then_reported(fake_server: FakeOpenAI) -> None:
    fake_server.set_script([{"fault": "raw", "body": VALID, "cut": True}])
    message = await fails(fake_server, settings_for(fake_server), within=5)
    assert message.startswith("LLM request failed (2 requests sent)") and "LLM_BASE_URL" in message
    assert len(fake_server.requests) == 2


# -- tool calls ------------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", ["not json", "[1, 2]", '"notes/a.md"', "null", "{" * 5000])
async def test_tool_arguments_that_are_no_object_are_asked_again_and_run_no_job(
    fake_server: FakeOpenAI, arguments: str
) -> None:
    """Was: `LLM run failed: TypeError: call() argument after ** must be a mapping` (or AssertionError)."""
    fake_server.set_script([{"tools": [{"tool": "write", "arguments": arguments}]}])
    jobs = Jobs()
    message = await fails(fake_server, settings_for(fake_server), within=5, jobs=jobs)
    assert "stayed invalid (2 requests sent, 1 output retries)" in message, message
    assert jobs.calls == []


async def test_an_unknown_tool_runs_nothing(fake_server: FakeOpenAI) -> None:
    fake_server.set_script([{"tools": [{"tool": "delete_everything", "args": {"path": "notes/a.md"}}]}])
    jobs = Jobs()
    message = await fails(fake_server, settings_for(fake_server), within=5, jobs=jobs)
    assert "stayed invalid (2 requests sent" in message and jobs.calls == []


@pytest.mark.parametrize(
    "entry",
    [
        {"tool": "read", "args": {"path": "notes/a.md"}},  # the same call forever
        {"tools": [{"tool": "write", "arguments": '{"path": 7}'}]},  # refused forever
    ],
    ids=["same_call", "schema_invalid"],
)
async def test_a_looping_model_stops_at_the_step_limit(
    fake_server: FakeOpenAI, entry: dict[str, Any]
) -> None:
    fake_server.set_script([entry])
    message = await fails(fake_server, settings_for(fake_server, max_steps=5), within=5)
    assert "step limit (5 model requests)" in message and "components.llm.max_steps" in message
    assert len(fake_server.requests) == 5


async def test_hundreds_of_tool_calls_in_one_reply_run_none(fake_server: FakeOpenAI) -> None:
    """Was: all 500 ran (500 writes of one card), bounded only by the time budget."""
    calls = [{"tool": "write", "args": {"path": "notes/a.md", "content": f"v{i}"}} for i in range(500)]
    fake_server.set_script([{"tools": calls}, SUMMARY])
    jobs = Jobs()
    message = await fails(fake_server, settings_for(fake_server), within=5, jobs=jobs)
    assert "more than 100 tool calls" in message and "components.llm.max_steps" in message, message
    assert jobs.calls == [] and len(fake_server.requests) == 1


# -- transport -------------------------------------------------------------------------------------


async def test_a_trickling_reply_times_out_like_a_silent_one(fake_server: FakeOpenAI) -> None:
    """A byte every 50 ms never trips httpx's per-read timeout; was: a 0.5 s request took 15 s."""
    fake_server.set_script([{"fault": "trickle", "seconds": 0.05, "then": SUMMARY}])
    settings = settings_for(fake_server, timeout=0.5, max_retries=1, run_budget=30)
    message = await fails(fake_server, settings, within=3)
    assert "no answer within 0.5 s (2 requests sent)" in message, message


async def test_a_server_that_hangs_after_its_headers_times_out(fake_server: FakeOpenAI) -> None:
    fake_server.set_script([{"fault": "hang"}])
    message = await fails(fake_server, settings_for(fake_server, timeout=0.5), within=3)
    assert "no answer within 0.5 s (2 requests sent)" in message, message


@pytest.mark.parametrize(
    ("retry_after", "sent", "said"),
    [("100000", 1, "HTTP 429"), ("soon", 3, "HTTP 429"), ("100", 1, "budget (2 s) ran out")],
)
async def test_retry_after_never_outlasts_the_budget(
    fake_server: FakeOpenAI, retry_after: str, sent: int, said: str
) -> None:
    fake_server.set_script([{"fault": "http", "status": 429, "retry_after": retry_after}])
    settings = settings_for(fake_server, max_retries=2, run_budget=2)
    message = await fails(fake_server, settings, within=4.5)
    assert said in message and f"({sent} request" in message, message


async def test_5xx_forever_costs_max_retries_plus_one(fake_server: FakeOpenAI) -> None:
    fake_server.set_script([{"fault": "http", "status": 503, "retry_after": "0.01"}])
    message = await fails(fake_server, settings_for(fake_server, max_retries=3), within=6)
    assert "HTTP 503 (4 requests sent)" in message and len(fake_server.requests) == 4


async def test_an_enormous_reply_is_cut_off_without_holding_it(fake_server: FakeOpenAI) -> None:
    """Was: a 100 MB body read whole (200 MB at the peak) before failing to parse."""
    fake_server.set_script([{"fault": "huge", "bytes": 100_000_000}])
    tracemalloc.start()
    try:
        message = await fails(fake_server, settings_for(fake_server, timeout=10), within=10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "reply passed 10,000,000 bytes" in message and len(fake_server.requests) == 1, message
    assert peak < 40_000_000, peak


# -- whole pipelines: the workspace is left as it was ----------------------------------------------


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("attack", "said"),
    [
        ({"fault": "raw", "body": NO_COMPLETION["empty_choices"][0]}, "no chat completion"),
        ({"tools": [{"tool": "write", "arguments": "[1, 2]"}]}, "stayed invalid"),
        ({"fault": "trickle", "seconds": 0.05, "then": SUMMARY}, "no answer within 0.5 s"),
        ({"fault": "huge", "bytes": 30_000_000}, "reply passed"),
    ],
    ids=["empty_choices", "args_list", "trickle", "huge"],
)
async def test_auto_memory_keeps_the_conversation_and_writes_no_half_card(
    make_app: MakeApp, fake_server: FakeOpenAI, attack: dict[str, Any], said: str
) -> None:
    app = await make_app(**served_by(fake_server, timeout=0.5, max_retries=1, output_retries=1, run_budget=5))
    fake_server.set_script([{"tool": "write", "args": {"path": CARD, "content": "HALF WRITTEN"}}, attack])
    started = time.monotonic()
    response = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
    assert time.monotonic() - started < 7
    assert not response.success and said in response.answer, response.answer
    assert "left unchanged and pending" in response.answer and len(response.answer) < SHORT
    card = app.workspace_dir / CARD
    assert "HALF WRITTEN" not in card.read_text(encoding="utf-8") and front_matter(card)["pending"] is True
    assert (app.workspace_dir / "session/dialog/trip-1.jsonl").read_text(encoding="utf-8").count("\n") == 2


@pytest.mark.parametrize(
    ("attack", "said"),
    [
        ({"fault": "raw", "body": NO_COMPLETION["html"][0]}, "no event stream for a streamed request"),
        ({"fault": "raw", "body": VALID}, "no event stream for a streamed request"),
        ({"fault": "hang", "content_type": "text/event-stream"}, "no answer within 0.5 s"),
        ({"fault": "huge", "bytes": 30_000_000, "content_type": "text/event-stream"}, "reply passed"),
        ({"fault": "trickle", "seconds": 0.05, "then": {"text": "x" * 400}}, "budget (2 s) ran out"),
    ],
    ids=["html", "json_not_sse", "hang", "huge", "trickle"],
)
async def test_chat_against_a_broken_stream_fails_within_bounds_and_touches_nothing(
    make_app: MakeApp, fake_server: FakeOpenAI, attack: dict[str, Any], said: str
) -> None:
    """A stream may trickle (a slow CPU streams legitimately), so only the run budget ends it."""
    app = await make_app(**served_by(fake_server, timeout=0.5, max_retries=1, run_budget=2))
    assert (await app.run("write", path="daily/2026-06-01/kyoto.md", content="- window seats\n")).success
    before = files(app.workspace_dir / "daily")
    fake_server.set_script([attack])
    started = time.monotonic()
    response = await app.run("chat", query="Which seats do I like?")
    assert time.monotonic() - started < 4
    assert not response.success and said in response.answer and len(response.answer) < SHORT, response.answer
    assert files(app.workspace_dir / "daily") == before


# -- embeddings --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ({"fault": "nan"}, "NaN or infinite"),
        ({"fault": "dimension", "dimension": 4}, "dimension 4"),
        # every request answers one vector short: the batch of 3 is split to find a poisoned text,
        # the control text fails too (an outage, nothing marked failed), and the last request is quoted
        ({"fault": "fewer"}, "0 vector(s) for 1 text(s)"),
        ({"fault": "raw", "body": "<html>oops</html>"}, "with no JSON"),
        ({"fault": "raw", "body": '{"data": [{"index": 0, "embedding": [1, 2'}, "with no JSON"),
        ({"fault": "raw", "body": '{"data": [{"index": 0, "embedding": "1,2"}]}'}, "no data[].embedding"),
    ],
    ids=["nan", "dimension", "fewer", "html", "truncated", "string_vector"],
)
async def test_bad_vectors_never_reach_the_index(
    fake_server: FakeOpenAI, tmp_path: Path, fault: dict[str, Any], said: str
) -> None:
    """Was (NaN): five NaN vectors stored, every search score NaN, and cached for good."""
    pytest.importorskip("numpy")
    import numpy as np

    from reme.index.search import SearchFilters

    root = tmp_path / "ws"
    (root / "digest").mkdir(parents=True)
    for number in range(3):
        (root / f"digest/n{number}.md").write_text(f"# N{number}\n\nnote {number} about topic{number}.\n")
    overrides = {
        "components.embedding.enabled": True,
        "components.embedding.backend": "openai_embedding",
        "components.embedding.base_url": fake_server.base_url,
        "components.embedding.model": "fake-embed",
        "components.embedding.dimension": 8,
        "components.embedding.max_retries": 0,
        "components.embedding.batch_size": 3,
    }
    async with ReMe(workspace_dir=root, timezone="UTC", **overrides) as app:
        index = app.component("index").service
        index.ensure_ready()
        fake_server.embedding_faults = [fault] * 50
        with pytest.raises(ReMeError) as failed:
            index.embed_pending()
        assert said in str(failed.value), failed.value
        assert index.vector_figures()["vectors"] == 0
        fake_server.embedding_faults = []  # the endpoint recovers: every chunk is embedded afresh
        assert index.embed_pending() == index.store.counts()["chunks"]
        hits = index.vectors.search("note topic1", 3, SearchFilters())
        assert hits and all(np.isfinite(score) for _, score in hits)


@pytest.mark.parametrize("fault", ["reversed", "same_index"])
def test_each_vector_stays_with_its_text(fake_server: FakeOpenAI, fault: str) -> None:
    """Listed out of order: by `index`; every `index` 0 (as some servers send): in list order."""
    np = pytest.importorskip("numpy")
    from reme.llm.embed_openai import OpenAIEmbedder

    embedder = OpenAIEmbedder(base_url=fake_server.base_url, model="e", dimension=8, max_retries=0)
    fake_server.embedding_faults = [{"fault": fault}]
    texts = ["alpha beta", "gamma", "delta epsilon zeta"]
    try:
        vectors = embedder.embed_passages(texts)
    finally:
        embedder.close()
    for text, vector in zip(texts, vectors, strict=True):
        expected = np.asarray(hashed_words(text, 8), dtype=np.float32)
        assert np.allclose(vector, expected / np.linalg.norm(expected)), text


@pytest.mark.parametrize("status", [200, 400])
async def test_a_gzip_compressed_reply_is_read_once_and_quoted(fake_server: FakeOpenAI, status: int) -> None:
    """A refusal's body was read (decoded) and handed on still marked gzip: the client failed to decode it twice."""
    body = json.dumps({"error": {"message": "the prompt is 9000 tokens, over n_ctx 8192"}})
    fake_server.set_script([{"fault": "raw", "body": body, "status": status, "gzip": True}])
    message = await fails(fake_server, settings_for(fake_server), within=5)
    assert "over n_ctx 8192" in message, message
    assert len(fake_server.requests) <= 2, message  # not retried (a 400 gets its one output-mode fallback)


def test_an_embeddings_reply_past_the_cap_is_refused_without_holding_it(
    fake_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reme.llm import embed_openai

    monkeypatch.setattr(embed_openai, "MAX_REPLY_BYTES", 1000)
    embedder = embed_openai.OpenAIEmbedder(
        base_url=fake_server.base_url, model="e", dimension=8, max_retries=0
    )
    assert len(embedder.embed_passages(["one short text"])) == 1  # ~140 bytes: under the cap
    with pytest.raises(ReMeError, match="sent a reply of more than 1,000 bytes"):
        embedder.embed_passages([f"text {i}" for i in range(20)])

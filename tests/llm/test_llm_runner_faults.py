"""The agent runner against a real HTTP fake server: retries are bounded, failures are clear."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import BaseModel
from tests.support import packaged_tools

from reme.llm.providers import build_model
from reme.llm.runner import AgentFailed, run_agent
from reme.llm.settings import ModelSettings
from reme.llm.testing.fake_openai import COMPLETION_TOKENS, PROMPT_TOKENS, FakeOpenAI
from reme.llm.tools import PathPolicy

TOOLS = packaged_tools()


class Summary(BaseModel):
    name: str
    description: str


class JobLog:
    """Records which jobs the agent reached; answers like a job that does nothing."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, job: str, **params: Any) -> Any:
        from reme.app.jobs import Response

        self.calls.append((job, params))
        return Response(True, f"{job} done", {"path": params.get("path")})


def settings_for(server: FakeOpenAI, **changes: Any) -> ModelSettings:
    base = {
        "backend": "openai",
        "model": "fake-model",
        "base_url": server.base_url,
        "api_key": "k",
        "timeout": 5.0,
    }
    return ModelSettings(**{**base, **changes})


async def run(server: FakeOpenAI, settings: ModelSettings, jobs: JobLog | None = None, **kwargs: Any) -> Any:
    kwargs["tools"] = [TOOLS[name] for name in kwargs.get("tools", ("read", "write"))]
    kwargs.setdefault("policy", PathPolicy(read=("notes/a.md",), write=("notes/a.md",)))
    kwargs.setdefault("output_type", Summary)
    return await run_agent(
        model=build_model(settings),
        settings=settings,
        run_job=jobs or JobLog(),
        instructions="You write notes.",
        prompt="Summarise.",
        **kwargs,
    )


async def test_tool_call_then_structured_output_sums_usage(fake_server: FakeOpenAI) -> None:
    fake_server.set_script(
        [
            {"tool": "write", "args": {"path": "notes/a.md", "content": "# A"}},
            {"output": {"name": "A note", "description": "About A."}},
        ]
    )
    jobs = JobLog()
    result = await run(fake_server, settings_for(fake_server), jobs)
    assert result.output == Summary(name="A note", description="About A.")
    assert jobs.calls == [("write", {"path": "notes/a.md", "content": "# A"})]
    assert result.usage == {
        "input_tokens": 2 * PROMPT_TOKENS,
        "output_tokens": 2 * COMPLETION_TOKENS,
        "requests": 2,
        "tool_calls": 1,
    }
    # The job result went back to the model as the tool's reply.
    tool_reply = fake_server.requests[1]["messages"][-1]
    assert tool_reply["role"] == "tool" and '"success": true' in tool_reply["content"]
    assert fake_server.requests[0]["model"] == "fake-model"


async def test_paths_outside_the_allow_list_are_refused(fake_server: FakeOpenAI) -> None:
    fake_server.set_script(
        [
            {
                "tools": [
                    {"tool": "write", "args": {"path": "notes/other.md", "content": "x"}},
                    {"tool": "write", "args": {"path": "notes/../notes/a.md", "content": "x"}},
                    {"tool": "read", "args": {"path": "/etc/passwd"}},
                    {
                        "tool": "write",
                        "args": {"path": "notes/a.md", "content": "x", "metadata": {"pending": False}},
                    },
                ]
            },
            {"output": {"name": "n", "description": "d"}},
        ]
    )
    jobs = JobLog()
    result = await run(fake_server, settings_for(fake_server), jobs)
    assert jobs.calls == []
    assert [c.refused for c in result.tool_calls] == [True, True, True, True]
    replies = [m["content"] for m in fake_server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(replies) == 4 and all("refused" in r for r in replies[:3])
    assert "Additional properties are not allowed" in replies[3]


# A 500 whose body is no validation error is a passing fault: retried, and no output-mode fallback.
@pytest.mark.parametrize(("status", "sent"), [(429, 3), (500, 3)])
async def test_http_errors_are_retried_then_reported(fake_server: FakeOpenAI, status: int, sent: int) -> None:
    fake_server.set_script([{"fault": "http", "status": status}])
    match = f"LLM request failed: the server answered HTTP {status} \\({sent} requests sent\\): injected"
    with pytest.raises(AgentFailed, match=match) as failed:
        await run(fake_server, settings_for(fake_server, max_retries=2))
    assert len(fake_server.requests) == sent
    assert failed.value.usage["requests"] == sent  # every attempt is counted, though none succeeded


async def test_recovers_when_a_retry_succeeds(fake_server: FakeOpenAI) -> None:
    fake_server.set_script([{"fault": "http", "status": 500}, {"output": {"name": "n", "description": "d"}}])
    result = await run(fake_server, settings_for(fake_server, max_retries=2))
    assert result.output.name == "n" and len(fake_server.requests) == 2


async def test_slow_replies_time_out_and_are_retried(fake_server: FakeOpenAI) -> None:
    fake_server.set_script([{"fault": "slow", "seconds": 1.0}])
    started = time.monotonic()
    with pytest.raises(AgentFailed, match=r"no answer within 0.25 s \(2 requests sent\)"):
        await run(fake_server, settings_for(fake_server, timeout=0.25, max_retries=1))
    assert len(fake_server.requests) == 2
    assert time.monotonic() - started < 5


async def test_malformed_tool_json_is_retried_then_reported(fake_server: FakeOpenAI) -> None:
    fake_server.set_script([{"fault": "bad_tool_json", "tool": "write"}])
    jobs = JobLog()
    with pytest.raises(AgentFailed, match=r"stayed invalid \(3 requests sent, 2 output retries\)") as failure:
        await run(fake_server, settings_for(fake_server, output_retries=2), jobs)
    assert len(fake_server.requests) == 3 and jobs.calls == []
    assert failure.value.usage["requests"] == 3
    assert failure.value.usage["input_tokens"] == 3 * PROMPT_TOKENS


@pytest.mark.parametrize("entry", [{"fault": "ignore_schema"}, {"text": "Here is my summary, no tool."}])
async def test_replies_ignoring_the_schema_are_retried_then_reported(
    fake_server: FakeOpenAI, entry: dict
) -> None:
    fake_server.set_script([entry])
    with pytest.raises(AgentFailed, match=r"stayed invalid \(2 requests sent, 1 output retries\)"):
        await run(fake_server, settings_for(fake_server, output_retries=1))
    assert len(fake_server.requests) == 2


async def test_step_limit_stops_a_looping_agent(fake_server: FakeOpenAI) -> None:
    fake_server.set_script([{"tool": "read", "args": {"path": "notes/a.md"}}])
    jobs = JobLog()
    with pytest.raises(AgentFailed, match=r"step limit \(3 model requests\)"):
        await run(fake_server, settings_for(fake_server, max_steps=3), jobs)
    assert len(fake_server.requests) == 3 and len(jobs.calls) == 3


async def test_streamed_text_and_tool_events(fake_server: FakeOpenAI) -> None:
    answer = "Solar panels were installed on 2026-05-31, see [[daily/2026-05-31/solar.md]]."
    fake_server.set_script([{"tool": "read", "args": {"path": "notes/a.md"}}, {"text": answer}])
    events: list[dict[str, Any]] = []

    async def collect(event: dict[str, Any]) -> None:
        events.append(event)

    result = await run(fake_server, settings_for(fake_server), output_type=str, on_event=collect)
    assert result.output == answer
    assert all(r.get("stream") for r in fake_server.requests)
    assert events[0] == {"type": "tool_call", "tool": "read", "args": {"path": "notes/a.md"}}
    assert events[1]["type"] == "tool_result" and events[1]["success"]
    texts = [e["text"] for e in events if e["type"] == "text"]
    assert len(texts) > 1 and "".join(texts) == answer


SUMMARY = {"output": {"name": "n", "description": "d"}}


async def test_a_server_refusing_tool_choice_required_gets_prompted_output_once(caplog) -> None:
    """llama-cpp-python asserts `tool_choice == "auto"`; the run falls back to JSON in the prompt."""
    server = FakeOpenAI([SUMMARY], refuse_tool_choice=True)
    try:
        settings = settings_for(server, max_retries=0)
        result = await run(server, settings)
        assert result.output == Summary(name="n", description="d") and result.output_mode == "prompted"
        assert [r.get("tool_choice") for r in server.requests] == ["required", "auto"]
        assert result.usage["requests"] == 2
        assert "refused output mode 'tool'" in caplog.text
        again = await run(server, settings)  # remembered for this endpoint: no refused request first
        assert again.output_mode == "prompted" and server.requests[-1].get("tool_choice") == "auto"
        assert len(server.requests) == 3
    finally:
        server.close()


@pytest.mark.parametrize(
    ("mode", "refuse", "sent"), [("native", "refuse_json_schema", 2), ("prompted", None, 1)]
)
async def test_output_mode_setting(mode: str, refuse: str | None, sent: int) -> None:
    server = FakeOpenAI([SUMMARY], **({refuse: True} if refuse else {}))
    try:
        result = await run(server, settings_for(server, output_mode=mode, max_retries=0))
        assert result.output == Summary(name="n", description="d")
        assert result.output_mode == "prompted" and len(server.requests) == sent
        if mode == "native":
            assert server.requests[0]["response_format"]["type"] == "json_schema"
        assert all(r.get("tool_choice") in (None, "auto") for r in server.requests)
    finally:
        server.close()


async def test_text_runs_never_fall_back(fake_server: FakeOpenAI) -> None:
    fake_server.set_script([{"fault": "http", "status": 500}])
    with pytest.raises(AgentFailed) as failed:
        await run(fake_server, settings_for(fake_server, max_retries=1), output_type=str)
    assert len(fake_server.requests) == 2 and failed.value.usage["requests"] == 2


async def test_a_mode_the_server_took_is_remembered_even_when_the_run_fails_later() -> None:
    """The measured case: the prompted run outgrew the server's context (HTTP 400) after answers."""
    from reme.llm import output_modes

    script = [{"tool": "read", "args": {"path": "notes/a.md"}}, {"fault": "http", "status": 400}]
    server = FakeOpenAI(script, refuse_tool_choice=True)
    try:
        settings = settings_for(server, max_retries=2)
        with pytest.raises(AgentFailed, match=r"HTTP 400 \(3 requests sent\)"):
            await run(server, settings)
        assert server.statuses == [500, 200, 400]  # neither the refusal nor the 400 is retried
        assert output_modes.mode_for(settings) == "prompted"
    finally:
        server.close()

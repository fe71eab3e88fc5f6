"""Every LLM pipeline against each server profile of the fake server, with a model that calls tools.

The profiles answer as the real servers do, request for request (`reme.llm.testing.server_profiles`):
llama-cpp-python 0.3.36 with `chatml-function-calling` and with the model's own template, strict
OpenAI, Ollama. A pipeline completes where the server allows it; where it cannot (a template with
no tools), it fails cleanly: a short answer, nothing half-written. Either way every request carries
an output limit and no assistant message with a null `content`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from tests.pipelines.conftest import MakeApp, served_by
from tests.pipelines.dream_support import CARD, CARD_TEXT, DAY, NODE, body, put, report, unit
from tests.pipelines.maintain_support import CHILDREN, setup_digest, split_turns
from tests.pipelines.proactive_helpers import found, reply, write_note
from tests.pipelines.test_agent_session import S1, entries
from tests.pipelines.test_auto_memory import TRIP, front_matter

from reme import ReMe
from reme.llm.testing.fake_openai import FakeOpenAI
from reme.pipelines.proactive.topics import topic_id

PROFILES = ("llama-cpp-chatml", "llama-cpp-template", "strict-openai", "ollama")
MEMORY_CARD = "daily/2026-06-01/trip-1.md"
RESOURCE = "resource/2026-06-01/report.md"
RESOURCE_CARD = "daily/2026-06-01/report.md"
FLUSH_CARD = f"daily/2026-06-01/{S1}.md"
NOTE = "daily/2026-06-20/work.md"
ANSWER = "You prefer window seats, see [[daily/2026-06-01/kyoto.md]]."


@dataclass
class Scenario:
    """A pipeline's scripted model, how to run it, and what its success leaves on disk."""

    script: list[dict[str, Any]]
    run: Callable[[ReMe], Awaitable[Any]]
    done: Callable[[ReMe, Any], None]
    stream: bool = False


def card_turns(path: str, content: str, name: str) -> list[dict[str, Any]]:
    return [
        {"tool": "write", "args": {"path": path, "content": content}},
        {"output": {"name": name, "description": "What was said."}},
    ]


async def run_memory(app: ReMe) -> Any:
    return await app.run("auto_memory", session_id="trip-1", messages=TRIP)


def memory_done(app: ReMe, response: Any) -> None:
    card = app.workspace_dir / response.metadata["note_path"]
    assert "prefers window seats" in card.read_text(encoding="utf-8")
    assert front_matter(card)["name"] == "Kyoto trip" and "pending" not in front_matter(card)


async def run_resource(app: ReMe) -> Any:
    put(app.workspace_dir, RESOURCE, "Revenue 3.2M.\n")
    return await app.run("auto_resource", paths=[RESOURCE])


def resource_done(app: ReMe, response: Any) -> None:
    card = app.workspace_dir / RESOURCE_CARD
    assert "Revenue 3.2M" in card.read_text(encoding="utf-8") and front_matter(card)["name"] == "Revenue"


async def run_dream(app: ReMe) -> Any:
    put(app.workspace_dir, CARD, CARD_TEXT)
    return await app.run("auto_dream", date=DAY)


def dream_done(app: ReMe, response: Any) -> None:
    assert (app.workspace_dir / NODE).is_file() and response.metadata["failed_units"] == []


async def run_maintain(app: ReMe) -> Any:
    setup_digest(app.workspace_dir)
    return await app.run("digest_maintain")


def maintain_done(app: ReMe, response: Any) -> None:
    assert all((app.workspace_dir / child).is_file() for child in CHILDREN)


async def run_proactive(app: ReMe) -> Any:
    write_note(app.workspace_dir, NOTE, "Kyoto and the tax return.\n")
    return await app.run("proactive_refresh", date="2026-06-20")


def proactive_done(app: ReMe, response: Any) -> None:
    assert response.metadata["llm_calls"] == 3
    assert (app.workspace_dir / "daily/2026-06-20/interests.yaml").is_file()


async def run_chat(app: ReMe) -> Any:
    wrote = await app.run("write", path="daily/2026-06-01/kyoto.md", content="- prefers window seats\n")
    assert wrote.success, wrote.answer
    return await app.run("chat", query="Which seats do I like?")


def chat_done(app: ReMe, response: Any) -> None:
    assert response.answer == ANSWER


async def run_flush(app: ReMe) -> Any:
    appended = await app.run(
        "agent_session_append", session_id=S1, messages=entries("claude_session.jsonl"), source="claude_code"
    )
    assert appended.success, appended.answer
    return await app.run("agent_session_flush", session_id=S1)


def flush_done(app: ReMe, response: Any) -> None:
    card = app.workspace_dir / response.metadata["note_path"]
    assert "tenacity, 5 attempts" in card.read_text(encoding="utf-8")
    assert not front_matter(card).get("pending")


TITLES = ["Kyoto trip", "Tax return"]
PROACTIVE_REPLY = reply([found(t, NOTE) for t in TITLES], order=[topic_id(TITLES[1])])
SCENARIOS = {
    "auto_memory": Scenario(
        card_turns(MEMORY_CARD, "- prefers window seats\n", "Kyoto trip"), run_memory, memory_done
    ),
    "auto_resource": Scenario(
        card_turns(RESOURCE_CARD, "- Revenue 3.2M\n", "Revenue"), run_resource, resource_done
    ),
    "auto_dream": Scenario(
        [
            {"output": {"units": [unit()]}},
            {
                "tool": "digest_write",
                "args": {"path": NODE, "content": body(CARD), "description": "Cadence."},
            },
            report("CREATE"),
        ],
        run_dream,
        dream_done,
    ),
    "digest_maintain": Scenario(split_turns(), run_maintain, maintain_done),
    "proactive_refresh": Scenario([{"output": PROACTIVE_REPLY}] * 3, run_proactive, proactive_done),
    "chat": Scenario(
        [{"tool": "search", "args": {"query": "window seats"}}, {"text": ANSWER}],
        run_chat,
        chat_done,
        stream=True,
    ),
    "agent_session_flush": Scenario(
        [
            {"tool": "read", "args": {"path": FLUSH_CARD}},
            *card_turns(FLUSH_CARD, "# Solar retries\n\n- tenacity, 5 attempts\n", "solar-retries"),
        ],
        run_flush,
        flush_done,
    ),
}


def completes(profile: str, scenario: Scenario) -> bool:
    """Whether the server lets this pipeline finish: a template without tools returns only text,
    which a run whose output is structured (in the default `tool` mode) cannot use; chat's is text."""
    return profile != "llama-cpp-template" or scenario.stream


def assert_wire(server: FakeOpenAI) -> None:
    """What every request looked like on the wire, whatever the profile."""
    assert server.requests, "the pipeline asked no model"
    for request in server.requests:
        # the limit this server applies: llama-cpp-python reads only `max_tokens` (else it writes until n_ctx)
        assert server.profile.max_tokens(request) in (2048, 4096), request.keys()
        for message in request["messages"]:
            assert message.get("content") is not None, message  # "" for a tool-call message, never null
            assert None not in message.values(), message


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("pipeline", list(SCENARIOS))
async def test_pipeline_on_server_profile(make_app: MakeApp, profile: str, pipeline: str) -> None:
    scenario = SCENARIOS[pipeline]
    server = FakeOpenAI(scenario.script, profile=profile)
    try:
        app = await make_app(**served_by(server, max_retries=2))
        response = await scenario.run(app)
    finally:
        server.close()
    assert_wire(server)
    if completes(profile, scenario):
        assert response.success, (profile, response.answer, server.statuses)
        if profile != "llama-cpp-template":  # there the model could only write its tool call as text
            scenario.done(app, response)
    else:
        assert not response.success
        assert len(response.answer) < 700, response.answer  # a short answer; the server's body is in the log
        assert "stayed invalid" in response.answer or "unusable" in response.answer, response.answer
    if profile == "llama-cpp-chatml" and pipeline != "chat":
        # the forced tool choice is refused once (not retried), then every request is answered
        assert server.statuses.count(500) == 1 and server.statuses[0] == 500
        assert all(status == 200 for status in server.statuses[1:]), server.statuses
        modes = json.loads((app.workspace_dir / "metadata/llm_output_modes.json").read_text())
        remembered = modes[f"openai {server.base_url}"]
        assert (remembered["mode"], remembered["model"], remembered["configured"]) == (
            "prompted",
            "fake-model",
            "tool",
        )
    elif profile != "llama-cpp-template":
        assert set(server.statuses) == {200}, server.statuses
    usage = response.metadata.get("usage") or {}
    if profile.startswith("llama-cpp") and pipeline == "chat":  # its streams carry no usage
        assert usage["input_tokens"] == usage["output_tokens"] == "not reported"
    if isinstance(usage.get("requests"), int) and pipeline not in ("auto_dream",):
        assert usage["requests"] == len(server.requests), (usage, server.statuses)


def test_profiles_cover_the_measured_refusals() -> None:
    """The llama-cpp profile answers what was measured: a validation error as a 500, naming the field."""
    server = FakeOpenAI([{"text": "ok"}], profile="llama-cpp-chatml")
    try:
        import httpx

        messages = [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": "done"},
        ]
        answer = httpx.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": messages})
        schema = httpx.post(
            f"{server.base_url}/chat/completions",
            json={"model": "m", "messages": messages[:1], "response_format": {"type": "json_schema"}},
        )
    finally:
        server.close()
    assert answer.status_code == 500 and len(answer.text) > 1500  # one error per member of the union
    message = answer.json()["error"]["message"]
    assert "('body', 'messages', 1, 'ChatCompletionRequestAssistantMessage', 'content')" in message
    assert message.index("Input should be a valid string") > 300  # past where the old answer cut it
    assert schema.status_code == 500 and "Input should be 'text' or 'json_object'" in schema.text


async def test_a_template_without_tools_still_answers_in_json_in_prompted_mode(make_app: MakeApp) -> None:
    """What `reme doctor` then suggests: a pipeline that needs no tool completes there in `prompted`."""
    scenario = SCENARIOS["proactive_refresh"]
    server = FakeOpenAI(scenario.script, profile="llama-cpp-template")
    try:
        app = await make_app(**served_by(server, output_mode="prompted"))
        response = await scenario.run(app)
    finally:
        server.close()
    assert response.success, response.answer
    scenario.done(app, response)
    assert server.statuses == [200, 200, 200] and all("tool_choice" not in r for r in server.requests)

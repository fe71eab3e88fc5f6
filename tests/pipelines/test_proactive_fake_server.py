"""Proactive refresh over the real HTTP client path, against the local fake OpenAI-compatible server."""

from __future__ import annotations

from tests.pipelines.conftest import MakeApp, served_by
from tests.pipelines.proactive_helpers import found, load_yaml, reply, snapshot, write_note

from reme.llm.testing.fake_openai import FakeOpenAI
from reme.pipelines.proactive.topics import topic_id

NOTE = "daily/2026-06-20/work.md"
TITLES = ["Kyoto trip", "Tax return"]


async def test_an_unusable_reply_then_three_stages_is_the_four_call_bound(
    make_app: MakeApp, fake_server: FakeOpenAI
) -> None:
    both = reply([found(t, NOTE) for t in TITLES], order=[topic_id(TITLES[1])])
    fake_server.set_script([{"fault": "ignore_schema"}, {"output": both}, {"output": both}, {"output": both}])
    app = await make_app(**served_by(fake_server))
    write_note(app.workspace_dir, NOTE, "Kyoto and the tax return.\n")
    response = await app.run("proactive_refresh", date="2026-06-20")
    assert response.success, response.answer
    assert response.metadata["llm_calls"] == 4 == len(fake_server.requests)
    assert response.metadata["usage"]["requests"] == 4
    # extract, extract again, plan, agenda: each request carries its own stage's schema
    tools = [r["tools"][0]["function"]["parameters"]["properties"] for r in fake_server.requests]
    assert ["topics" in t for t in tools] == [True, True, False, False]
    assert "plans" in tools[2] and "order" in tools[3]
    assert "Kyoto and the tax return." in fake_server.requests[1]["messages"][-1]["content"]
    interests = load_yaml(app.workspace_dir / "daily/2026-06-20/interests.yaml")
    assert [a["topic_id"] for a in interests["agenda"]] == [topic_id(TITLES[1]), topic_id(TITLES[0])]


async def test_two_unusable_replies_fail_cleanly_without_a_third_request(
    make_app: MakeApp, fake_server: FakeOpenAI
) -> None:
    fake_server.set_script([{"text": "Kyoto, I think."}])
    app = await make_app(**served_by(fake_server))
    write_note(app.workspace_dir, NOTE, "Kyoto.\n")
    before = snapshot(app.workspace_dir)
    response = await app.run("proactive_refresh", date="2026-06-20")
    assert not response.success and "unusable reply (asked 2 time(s))" in response.answer
    assert response.metadata["llm_calls"] == 2 == len(fake_server.requests)
    assert snapshot(app.workspace_dir) == before


async def test_an_http_error_is_not_an_unusable_reply(make_app: MakeApp, fake_server: FakeOpenAI) -> None:
    fake_server.set_script([{"fault": "http", "status": 500}])
    app = await make_app(**served_by(fake_server, max_retries=1))
    write_note(app.workspace_dir, NOTE, "Kyoto.\n")
    before = snapshot(app.workspace_dir)
    response = await app.run("proactive_refresh", date="2026-06-20")
    assert not response.success and "a failed call" in response.answer
    assert response.metadata["llm_calls"] == 1
    # One call: the request and its one transport retry (a 500 with no validation error is a passing
    # fault, so no output-mode fallback).
    assert len(fake_server.requests) == 2
    assert snapshot(app.workspace_dir) == before


async def test_a_failing_agenda_call_writes_nothing(make_app: MakeApp, fake_server: FakeOpenAI) -> None:
    both = reply([found(t, NOTE) for t in TITLES])
    fake_server.set_script([{"output": both}, {"output": both}, {"text": "no order today"}])
    app = await make_app(**served_by(fake_server))
    write_note(app.workspace_dir, NOTE, "Kyoto and the tax return.\n")
    before = snapshot(app.workspace_dir)
    response = await app.run("proactive_refresh", date="2026-06-20")
    assert not response.success and response.answer.startswith("proactive agenda failed")
    assert response.metadata["llm_calls"] == 3
    assert snapshot(app.workspace_dir) == before

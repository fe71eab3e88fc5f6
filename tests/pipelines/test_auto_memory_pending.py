"""auto_memory without a usable model, and with a failing one: input kept, card pending, nothing half-written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.pipelines.conftest import MakeApp, scripted, served_by
from tests.pipelines.port_jobs import MakePortApp, port_app_fixture  # noqa: F401  (the fixture)
from tests.pipelines.test_auto_memory import TRIP, card_script, front_matter

from reme.llm.testing.fake_openai import FakeOpenAI


async def test_without_credentials_the_transcript_is_saved_and_the_card_pending(make_app: MakeApp) -> None:
    app = await make_app()
    response = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
    assert not response.success
    assert "LLM_MODEL" in response.answer and "session/dialog/trip-1.jsonl" in response.answer
    meta = response.metadata
    assert meta["pending"] is True and meta["date"] == "2026-06-01"
    assert meta["session_path"] == "session/dialog/trip-1.jsonl" and meta["usage"] == {}
    saved = (app.workspace_dir / meta["session_path"]).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in saved] == ["u1", "a1"]
    card = front_matter(app.workspace_dir / meta["note_path"])
    assert card["pending"] is True and card["session_id"] == "trip-1"


async def test_pending_cards_are_distilled_by_auto_memory_pending(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted([]))
    first = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
    assert not first.success and "components.llm.script" in first.answer
    other = [{"role": "user", "content": "Dentist on Friday.", "created_at": "2026-06-03T08:00:00Z"}]
    assert not (await app.run("auto_memory", session_id="health", messages=other)).success
    app.component("llm").script = card_script("- distilled later\n", "Distilled $session_id")  # type: ignore[attr-defined]
    first_only = await app.run("auto_memory_pending", limit=1)
    assert first_only.success and first_only.metadata["distilled"] == ["daily/2026-06-01/distilled-trip-1.md"]
    response = await app.run("auto_memory_pending")
    assert response.success, response.answer
    assert response.metadata["distilled"] == ["daily/2026-06-03/distilled-health.md"]
    assert response.metadata["failed"] == [] and response.metadata["usage"]["requests"] == 3
    card = front_matter(app.workspace_dir / "daily/2026-06-01/distilled-trip-1.md")
    assert "pending" not in card and card["name"] == "Distilled trip-1"
    again = await app.run("auto_memory_pending")
    assert again.success and again.metadata["distilled"] == []


async def test_next_call_for_the_session_distils_its_pending_card(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted([]))
    assert not (await app.run("auto_memory", session_id="trip-1", messages=TRIP)).success
    app.component("llm").script = card_script("- both days\n", "Trip $date")  # type: ignore[attr-defined]
    later = [{"role": "user", "content": "Landed.", "created_at": "2026-06-09T12:00:00Z"}]
    response = await app.run("auto_memory", session_id="trip-1", messages=later)
    assert response.success, response.answer
    assert response.metadata["note_path"] == "daily/2026-06-09/trip-2026-06-09.md"
    assert "daily/2026-06-01/trip-2026-06-01.md" in response.answer
    assert "pending" not in front_matter(app.workspace_dir / "daily/2026-06-01/trip-2026-06-01.md")
    # Two cards distilled in one job: the usage of both agent runs is summed (3 requests, 2 tool calls each).
    usage = response.metadata["usage"]
    assert usage["requests"] == 6 and usage["tool_calls"] == 4, usage


FAULTS: list[dict[str, Any]] = [
    {"fault": "http", "status": 429},
    {"fault": "http", "status": 500},
    {"fault": "slow", "seconds": 3.0},
    {"fault": "bad_tool_json", "tool": "write"},
    {"fault": "ignore_schema"},
]


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f"{f['fault']}{f.get('status', '')}")
async def test_each_fault_ends_in_bounded_retries_and_a_clear_failure(
    make_app: MakeApp, fake_server: FakeOpenAI, fault: dict[str, Any]
) -> None:
    # Only the slow fault needs a short timeout; the healthy first turn must never hit it on a busy machine.
    timeout = 1.0 if fault["fault"] == "slow" else 10.0
    app = await make_app(**served_by(fake_server, timeout=timeout, max_retries=1, output_retries=1))
    fake_server.set_script(
        [
            {"tool": "write", "args": {"path": "daily/2026-06-01/trip-1.md", "content": "HALF WRITTEN"}},
            fault,
        ]
    )
    response = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
    assert not response.success
    assert "conversation saved to session/dialog/trip-1.jsonl" in response.answer
    assert "left unchanged and pending" in response.answer
    expected = (
        "LLM request failed"
        if fault["fault"] in ("http", "slow")
        else "LLM reply stayed invalid (3 requests sent, 1 output retries)"
    )
    assert expected in response.answer
    assert len(fake_server.requests) == 3  # the write turn, then the fault and one retry
    assert response.metadata["pending"] is True and response.metadata["usage"]["requests"] >= 1
    card_path = app.workspace_dir / "daily/2026-06-01/trip-1.md"
    assert "HALF WRITTEN" not in card_path.read_text(encoding="utf-8")
    assert front_matter(card_path)["pending"] is True
    assert (app.workspace_dir / "session/dialog/trip-1.jsonl").read_text(encoding="utf-8").count("\n") == 2


async def test_failure_restores_an_existing_card_exactly(make_app: MakeApp, fake_server: FakeOpenAI) -> None:
    app = await make_app(**served_by(fake_server, max_retries=0))
    fake_server.set_script(
        [
            {"tool": "write", "args": {"path": "daily/2026-06-01/trip-1.md", "content": "- window seats\n"}},
            {"output": {"name": "Trip one", "description": "Seats."}},
        ]
    )
    assert (await app.run("auto_memory", session_id="trip-1", messages=TRIP)).success
    card = app.workspace_dir / "daily/2026-06-01/trip-one.md"
    before = card.read_text(encoding="utf-8")
    fake_server.set_script(
        [
            {"tool": "write", "args": {"path": "daily/2026-06-01/trip-one.md", "content": "garbage"}},
            {"fault": "http", "status": 500},
        ]
    )
    more = [
        {"role": "user", "content": "Also: aisle for long flights.", "created_at": "2026-06-01T11:00:00Z"}
    ]
    response = await app.run("auto_memory", session_id="trip-1", messages=more)
    assert not response.success
    after = card.read_text(encoding="utf-8")
    assert after.replace("pending: true\n", "") == before
    assert front_matter(card)["pending"] is True


async def test_the_model_sees_message_times_and_pinned_relative_dates(
    make_app: MakeApp, fake_server: FakeOpenAI
) -> None:
    app = await make_app("Asia/Shanghai", **served_by(fake_server, memory={"model": "small-memory-model"}))
    fake_server.set_script([{"output": {"name": "Plans", "description": "Plans."}}])
    messages = [
        {
            "role": "user",
            "content": "Yesterday I met Li; tomorrow I call the bank. 昨天下雨。",
            "created_at": "2026-06-01T23:30:00Z",
        }
    ]
    response = await app.run(
        "auto_memory", session_id="p", messages=messages, memory_hint="focus on appointments"
    )
    assert response.success, response.answer
    request = fake_server.requests[0]
    assert request["model"] == "small-memory-model"
    prompt = "\n".join(str(m.get("content")) for m in request["messages"])
    assert "[user @ 2026-06-02 07:30 Tuesday]" in prompt
    assert (
        "Yesterday (2026-06-01) I met Li; tomorrow (2026-06-03) I call the bank. 昨天 (2026-06-01)下雨。"
        in prompt
    )
    assert "focus on appointments" in prompt and "daily/2026-06-02/p.md" in prompt
    assert response.metadata["usage"] == {
        "input_tokens": 11,
        "output_tokens": 7,
        "requests": 1,
        "tool_calls": 0,
    }


async def test_a_days_card_is_written_from_that_days_messages(
    make_app: MakeApp, fake_server: FakeOpenAI
) -> None:
    app = await make_app(**served_by(fake_server))
    fake_server.set_script([{"output": {"name": "Day", "description": "Day."}}])
    day_one = [{"role": "user", "content": "MONDAY-FACT", "created_at": "2026-06-01T09:00:00Z"}]
    day_two = [{"role": "user", "content": "TUESDAY-FACT", "created_at": "2026-06-02T09:00:00Z"}]
    assert (await app.run("auto_memory", session_id="week", messages=day_one)).success
    second = await app.run("auto_memory", session_id="week", messages=day_two)
    assert second.success and second.metadata["date"] == "2026-06-02"
    prompt = str(fake_server.requests[-1]["messages"])
    assert "TUESDAY-FACT" in prompt and "MONDAY-FACT" not in prompt
    assert sorted(p.name for p in (app.workspace_dir / "daily").iterdir() if p.is_dir()) == [
        "2026-06-01",
        "2026-06-02",
    ]


async def test_ollama_and_anthropic_backends_run_the_same_agent(
    make_app: MakeApp, fake_server: FakeOpenAI
) -> None:
    root = fake_server.base_url.removesuffix("/v1")
    for backend, base_url in (("ollama", fake_server.base_url), ("anthropic", root)):
        card = f"daily/2026-06-01/trip-{backend}.md"
        fake_server.set_script(
            [
                {"tool": "write", "args": {"path": card, "content": f"- window seats via {backend}\n"}},
                {"output": {"name": f"Seats {backend}", "description": "Seat preference."}},
            ]
        )
        app = await make_app(
            **served_by(fake_server, base_url=base_url), **{"components.llm.backend": backend}
        )
        response = await app.run("auto_memory", session_id=f"trip-{backend}", messages=TRIP)
        assert response.success, (backend, response.answer)
        assert response.metadata["usage"] == {
            "input_tokens": 22,
            "output_tokens": 14,
            "requests": 2,
            "tool_calls": 1,
        }
        written = (app.workspace_dir / f"daily/2026-06-01/seats-{backend}.md").read_text(encoding="utf-8")
        assert written.endswith(f"- window seats via {backend}\n")
        await app.close()
    assert (
        "max_tokens" in fake_server.requests[-1] and "system" in fake_server.requests[-1]
    )  # the Anthropic shape


async def test_a_repeated_call_without_a_model_leaves_a_distilled_card_alone(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app(**scripted(card_script("- window seats\n", "Trip one")))
    assert (await app.run("auto_memory", session_id="trip-1", messages=TRIP)).success
    card = app.workspace_dir / "daily/2026-06-01/trip-one.md"
    before = card.read_text(encoding="utf-8")
    app.component("llm").script = []  # type: ignore[attr-defined]
    again = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
    assert again.success and again.metadata["pending"] is False, again.answer
    assert card.read_text(encoding="utf-8") == before


async def test_an_invalid_setting_is_named_and_the_card_left_pending(
    make_app: MakeApp, fake_server: FakeOpenAI
) -> None:
    app = await make_app(**served_by(fake_server, timeout="soon"))
    response = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
    assert not response.success and "components.llm.timeout" in response.answer, response.answer
    assert front_matter(app.workspace_dir / response.metadata["note_path"])["pending"] is True
    assert fake_server.requests == []
    health = await app.run("health_check")
    assert "components.llm.timeout" in str(health.metadata["components"]["llm"])
    chunks = [chunk async for chunk in app.stream("chat", query="hello")]
    assert "components.llm.timeout" in str(chunks[:-1]) and chunks[-1]["success"] is False


async def test_a_card_distilled_while_the_pending_run_waited_is_left_alone(make_app: MakeApp) -> None:
    import asyncio

    from reme.app.port import AppPort

    app = await make_app(**scripted([]))
    assert not (await app.run("auto_memory", session_id="trip-1", messages=TRIP)).success
    app.component("llm").script = card_script("- distilled\n", "Trip one")  # type: ignore[attr-defined]
    lock = AppPort(app).keyed_lock("session:trip-1")
    async with lock:  # an auto_memory run of the session is busy with the card
        pending = asyncio.create_task(app.run("auto_memory_pending"))
        for _ in range(3000):
            if lock._waiters or pending.done():  # the pending run listed the card and now waits
                break
            await asyncio.sleep(0.01)
        moved = await app.run("move", src="daily/2026-06-01/trip-1.md", dst="daily/2026-06-01/trip-one.md")
        assert moved.success, moved.answer
        cleared = await app.run("frontmatter_delete", path="daily/2026-06-01/trip-one.md", keys=["pending"])
        assert cleared.success, cleared.answer
    response = await pending
    assert response.success and response.metadata["distilled"] == [], response.metadata
    assert sorted(p.name for p in (app.workspace_dir / "daily/2026-06-01").iterdir()) == ["trip-one.md"]

"""Proactive refresh end to end on a real workspace with the scripted model (docs/spec.md §13.1)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
from tests.pipelines.conftest import MakeApp, scripted
from tests.pipelines.port_jobs import MakePortApp, PortApp, port_app_fixture  # noqa: F401  (the fixture)
from tests.pipelines.proactive_helpers import found, load_yaml, plan_for, reply, snapshot, write_note

from reme.pipelines.proactive.topics import topic_id

KYOTO = "daily/2026-06-20/trip.md"


def set_script(app: PortApp, *turns: dict[str, Any]) -> None:
    app.set_script(*turns)


async def refresh(app: PortApp, day: str) -> Any:
    return await app.run("proactive_refresh", date=day)


async def test_no_changed_notes_means_no_model_call_and_no_file(make_port_app: MakePortApp) -> None:
    app = make_port_app()  # no model configured at all
    before = snapshot(app.workspace_dir)
    response = await refresh(app, "2026-06-20")
    assert response.success, response.answer
    assert response.metadata["llm_calls"] == 0 and response.metadata["path"] is None
    assert snapshot(app.workspace_dir) == before


async def test_a_refresh_writes_the_exposure_and_the_truth_source_and_leaves_the_day_page(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO)])}]))
    write_note(app.workspace_dir, KYOTO, "# Trip\nBooking Kyoto for June 29, window seat.\n")
    await app.port.refresh_day("2026-06-20")  # what daily_reindex does
    page_before = (app.workspace_dir / "daily/2026-06-20.md").read_bytes()
    response = await refresh(app, "2026-06-20")
    assert response.success, response.answer
    meta = response.metadata
    kyoto = topic_id("Kyoto trip")
    assert meta["llm_calls"] == 2 == meta["usage"]["requests"]  # one candidate: extract + plan, no agenda
    assert meta["pushed"] == [kyoto] and meta["changed"] == ["daily/2026-06-20.md", KYOTO]
    interests = load_yaml(app.workspace_dir / "daily/2026-06-20/interests.yaml")
    assert list(interests) == ["version", "date", "generated_at", "push", "topics", "agenda", "suppressed"]
    assert interests["version"] == 2 and interests["date"] == date(2026, 6, 20) and interests["push"] is True
    assert interests["topics"] == [
        {
            "id": kyoto,
            "title": "Kyoto trip",
            "reason": "the notes keep coming back to Kyoto trip",
            "kind": "follow_up",
            "confidence": 0.9,
            "first_seen": date(2026, 6, 20),
            "last_evidence_at": date(2026, 6, 20),
            "evidence": KYOTO,
            "paths": [KYOTO],
        }
    ]
    assert interests["agenda"] == [
        {
            "topic_id": kyoto,
            "title": "Kyoto trip",
            "scenario_type": "resume_task",
            "opener": "Shall we pick up Kyoto trip?",
            "next_action": "open the notes on Kyoto trip",
            "preconditions": [],
            "delivery": "in_conversation",
            "linked_memory": [],
            "order_reason": "recent evidence",
        }
    ]
    truth = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
    assert [t["id"] for t in truth["topics"]] == [kyoto] and truth["resolved"] == []
    # docs/spec.md §8: the day page's block lists cards only; a refresh never rewrites it (nor makes a dream rescan it)
    page = (app.workspace_dir / "daily/2026-06-20.md").read_bytes()
    assert page == page_before and b"interests.yaml" not in page
    # a second run finds nothing new
    before = snapshot(app.workspace_dir)
    again = await refresh(app, "2026-06-20")
    assert again.success and again.metadata["llm_calls"] == 0
    assert snapshot(app.workspace_dir) == before


async def test_ids_are_stable_across_runs_and_title_variants(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO)])}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto booking.\n")
    assert (await refresh(app, "2026-06-20")).success
    later = "daily/2026-06-21/call.md"
    write_note(app.workspace_dir, later, "Kyoto again: the ryokan.\n")
    set_script(app, {"output": reply([found("kyoto  TRIP!", later, confidence=0.7)], plans=[])})
    response = await refresh(app, "2026-06-21")
    assert response.success, response.answer
    kyoto = topic_id("Kyoto trip")
    assert topic_id("kyoto  TRIP!") == kyoto
    assert response.metadata["pushed"] == [kyoto]
    (topic,) = load_yaml(app.workspace_dir / "daily/_proactive.yaml")["topics"]
    assert topic["id"] == kyoto and topic["title"] == "Kyoto trip"  # the known title stays
    assert topic["first_seen"] == date(2026, 6, 20) and topic["last_evidence_at"] == date(2026, 6, 21)
    assert topic["paths"] == [later, KYOTO] and topic["evidence"] == later
    assert topic["confidence"] == 0.7


async def test_a_similar_title_or_the_known_id_continues_the_topic(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted([{"output": reply([found("记忆检索链路的质量回归", KYOTO)])}]))
    write_note(app.workspace_dir, KYOTO, "检索回归。\n")
    assert (await refresh(app, "2026-06-20")).success
    later = "daily/2026-06-21/s.md"
    write_note(app.workspace_dir, later, "还在查检索回归。\n")
    variants = [found("记忆检索链路质量回归", later), found("Something else", later, known_id="b2120f3573cb")]
    set_script(app, {"output": reply(variants, plans=[])})
    response = await refresh(app, "2026-06-21")
    assert response.success, response.answer
    assert response.metadata["pushed"] == ["b2120f3573cb"]  # ReMe's id of this title
    truth = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
    assert [t["title"] for t in truth["topics"]] == ["记忆检索链路的质量回归"]


async def test_a_topic_is_carried_forward_then_dropped_after_the_window(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", "daily/2026-06-01/a.md")])}]))
    write_note(app.workspace_dir, "daily/2026-06-01/a.md", "Kyoto.\n")
    assert (await refresh(app, "2026-06-01")).success
    kyoto = topic_id("Kyoto trip")
    for day, carried in (("2026-06-14", True), ("2026-06-15", False)):  # last evidence 13, then 14 days ago
        write_note(app.workspace_dir, f"daily/{day}/b.md", "Nothing much.\n")
        set_script(app, {"output": reply([])})
        response = await refresh(app, day)
        assert response.success, response.answer
        assert (kyoto in response.metadata["pushed"]) is carried
        truth = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
        assert ([t["id"] for t in truth["topics"]] == [kyoto]) is carried
    assert response.metadata["expired"] == [kyoto]
    interests = load_yaml(app.workspace_dir / "daily/2026-06-15/interests.yaml")
    assert interests["push"] is False and interests["topics"] == [] and interests["agenda"] == []


async def test_a_resolved_topic_is_not_pushed_again_until_new_evidence(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted([{"text": "replaced below"}]))
    today = app.today()
    days = [(today + timedelta(days=n)).isoformat() for n in (-1, 0, 1)]
    old, same_day, new = (f"daily/{d}/n.md" for d in days)
    set_script(app, {"output": reply([found("Kyoto trip", old)])})
    write_note(app.workspace_dir, old, "Kyoto.\n")
    assert (await refresh(app, days[0])).success
    kyoto = topic_id("Kyoto trip")
    resolved = await app.run("proactive_resolve", topic_id=kyoto, reason="booked")
    assert resolved.success and resolved.metadata == {"topic_id": kyoto, "resolved": True}
    # the same day's notes (where it was settled) do not bring it back
    write_note(app.workspace_dir, same_day, "Kyoto is booked.\n")
    set_script(app, {"output": reply([found("Kyoto trip", same_day)])})
    response = await refresh(app, days[1])
    assert response.success, response.answer
    assert response.metadata["pushed"] == []
    interests = load_yaml(app.workspace_dir / f"daily/{days[1]}/interests.yaml")
    assert interests["suppressed"] == [
        {"id": kyoto, "title": "Kyoto trip", "reason": f"resolved on {days[1]}"}
    ]
    # evidence from a later day does
    write_note(app.workspace_dir, new, "Kyoto: the flight was cancelled, rebook.\n")
    set_script(app, {"output": reply([found("Kyoto trip", new)])})
    response = await refresh(app, days[2])
    assert response.success and response.metadata["pushed"] == [kyoto]
    truth = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
    assert truth["resolved"] == [] and [t["id"] for t in truth["topics"]] == [kyoto]


async def test_the_model_may_resolve_an_open_topic(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO)])}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    assert (await refresh(app, "2026-06-20")).success
    kyoto = topic_id("Kyoto trip")
    write_note(app.workspace_dir, "daily/2026-06-21/done.md", "Kyoto all booked.\n")
    set_script(app, {"output": reply([], resolved=[{"id": kyoto, "reason": "booked"}, {"id": "0" * 12}])})
    response = await refresh(app, "2026-06-21")
    assert response.success and response.metadata["resolved"] == [kyoto] and response.metadata["pushed"] == []
    truth = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
    assert truth["topics"] == []
    assert truth["resolved"] == [
        {"id": kyoto, "title": "Kyoto trip", "resolved_at": date(2026, 6, 21), "reason": "booked"}
    ]


async def test_a_low_confidence_topic_is_kept_but_not_pushed(make_port_app: MakePortApp) -> None:
    topics = [
        found("Kyoto trip", KYOTO),
        found("Maybe pottery", KYOTO, confidence=0.3, kind="interest_extend"),
    ]
    app = make_port_app(**scripted([{"output": reply(topics)}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto; pottery perhaps.\n")
    response = await refresh(app, "2026-06-20")
    assert response.success, response.answer
    pottery = topic_id("Maybe pottery")
    assert response.metadata["pushed"] == [topic_id("Kyoto trip")]
    assert response.metadata["llm_calls"] == 2  # one candidate left: no agenda call
    interests = load_yaml(app.workspace_dir / "daily/2026-06-20/interests.yaml")
    assert [t["id"] for t in interests["topics"]] == [topic_id("Kyoto trip")]
    assert interests["suppressed"] == [
        {"id": pottery, "title": "Maybe pottery", "reason": "low confidence: 0.30 < 0.50"}
    ]
    truth = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
    assert pottery in [t["id"] for t in truth["topics"]]


async def test_several_candidates_take_three_calls_in_the_agenda_order(make_port_app: MakePortApp) -> None:
    titles = ["Kyoto trip", "Tax return", "Japanese lessons"]
    ids = [topic_id(t) for t in titles]
    script = reply([found(t, KYOTO, confidence=0.8) for t in titles], order=[ids[2], "nonsense", ids[0]])
    app = make_port_app(**scripted([{"output": script}]))
    write_note(app.workspace_dir, KYOTO, "Three things.\n")
    response = await refresh(app, "2026-06-20")
    assert response.success, response.answer
    assert response.metadata["llm_calls"] == 3 == response.metadata["usage"]["requests"]
    interests = load_yaml(app.workspace_dir / "daily/2026-06-20/interests.yaml")
    assert [a["topic_id"] for a in interests["agenda"]] == [ids[2], ids[0], ids[1]]  # left-out one last
    assert [a["order_reason"] for a in interests["agenda"]][:2] == [
        f"reason for {ids[2]}",
        f"reason for {ids[0]}",
    ]
    assert [t["id"] for t in interests["topics"]] == [ids[2], ids[0], ids[1]]


async def test_the_plan_may_hold_a_candidate_back(make_port_app: MakePortApp) -> None:
    titles = ["Kyoto trip", "Tax return"]
    plans = [plan_for("Kyoto trip"), plan_for("Tax return", push=False, hold_reason="waits for the forms")]
    app = make_port_app(**scripted([{"output": reply([found(t, KYOTO) for t in titles], plans=plans)}]))
    write_note(app.workspace_dir, KYOTO, "Two things.\n")
    response = await refresh(app, "2026-06-20")
    assert response.success, response.answer
    assert response.metadata["pushed"] == [topic_id("Kyoto trip")] and response.metadata["llm_calls"] == 2
    interests = load_yaml(app.workspace_dir / "daily/2026-06-20/interests.yaml")
    assert interests["suppressed"] == [
        {
            "id": topic_id("Tax return"),
            "title": "Tax return",
            "reason": "held back by plan: waits for the forms",
        }
    ]


async def test_evidence_outside_the_material_is_dropped(make_port_app: MakePortApp) -> None:
    topics = [
        found("Kyoto trip", "[[daily/2026-06-20/trip.md]]", "digest/wiki/x.md"),
        found("Invented", "daily/x.md"),
    ]
    app = make_port_app(**scripted([{"output": reply(topics)}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    response = await refresh(app, "2026-06-20")
    assert response.success, response.answer
    truth = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
    assert [(t["title"], t["paths"]) for t in truth["topics"]] == [("Kyoto trip", [KYOTO])]
    assert response.metadata["suppressed"][0]["reason"].startswith("no evidence")


async def test_an_unusable_extract_reply_is_asked_again_once_then_fails_writing_nothing(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app(**scripted([{"text": "Here are some topics: Kyoto!"}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    before = snapshot(app.workspace_dir)
    response = await refresh(app, "2026-06-20")
    assert not response.success
    assert "proactive extract failed: an unusable reply (asked 2 time(s))" in response.answer
    assert response.metadata["llm_calls"] == 2 == response.metadata["usage"]["requests"]
    assert response.metadata["path"] is None
    assert snapshot(app.workspace_dir) == before  # no interests.yaml, no truth source, no catalog
    assert not (app.workspace_dir / "metadata/proactive.json").exists()


async def test_without_a_model_the_refresh_fails_naming_the_setting(make_app: MakeApp) -> None:
    app = await make_app()  # the application's words for the missing setting
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    before = snapshot(app.workspace_dir)
    response = await refresh(app, "2026-06-20")
    assert not response.success and "LLM_MODEL" in response.answer
    assert response.metadata["llm_calls"] == 0
    assert snapshot(app.workspace_dir) == before


async def test_a_malformed_truth_source_is_reported_not_overwritten(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO)])}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    write_note(app.workspace_dir, "daily/_proactive.yaml", "topics: [unclosed\n")
    before = snapshot(app.workspace_dir)
    response = await refresh(app, "2026-06-20")
    assert not response.success
    assert (
        "daily/_proactive.yaml is not valid YAML" in response.answer
        and "proactive_rebuild" in response.answer
    )
    assert response.metadata["llm_calls"] == 0
    assert snapshot(app.workspace_dir) == before
    resolve = await app.run("proactive_resolve", topic_id="0" * 12)
    assert not resolve.success and snapshot(app.workspace_dir) == before


async def test_an_invalid_date_is_refused(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    response = await refresh(app, "2026-02-30")
    assert not response.success and "not a calendar date" in response.answer


async def test_unknown_topic_ids_cannot_be_resolved(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    response = await app.run("proactive_resolve", topic_id="0123456789ab")
    assert not response.success and "unknown topic id" in response.answer
    assert response.metadata == {"topic_id": "0123456789ab", "resolved": False}
    assert not (app.workspace_dir / "daily/_proactive.yaml").exists()
    refused = await app.run("proactive_resolve", topic_id="Kyoto")
    assert not refused.success and "does not match" in refused.answer


async def test_the_truth_source_is_rebuilt_from_the_interests_files(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO), found("Tax", KYOTO)])}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto and tax.\n")
    assert (await refresh(app, "2026-06-20")).success
    assert (await app.run("proactive_resolve", topic_id=topic_id("Tax"))).success
    write_note(app.workspace_dir, "daily/2026-06-21/n.md", "Kyoto.\n")
    set_script(app, {"output": reply([found("Kyoto trip", "daily/2026-06-21/n.md")])})
    assert (await refresh(app, "2026-06-21")).success
    original = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
    (app.workspace_dir / "daily/_proactive.yaml").write_text("::: broken", encoding="utf-8")
    rebuilt = await app.run("proactive_rebuild")
    assert rebuilt.success, rebuilt.answer
    assert rebuilt.metadata["sources"] == [
        "daily/2026-06-20/interests.yaml",
        "daily/2026-06-21/interests.yaml",
    ]
    truth = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
    assert truth["topics"] == original["topics"]
    assert [t["id"] for t in truth["resolved"]] == [topic_id("Tax")]


async def test_the_jobs_are_declared_as_the_spec_says(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    one_shot, cron = app.jobs["proactive_refresh"], app.jobs["proactive_refresh_cron"]
    assert one_shot.enable_serve is False and not one_shot.served
    assert cron.kind == "cron" and cron.cron == "0 18 * * *" and cron.steps == one_shot.steps
    assert [s.backend for s in cron.steps] == [
        "proactive_extract_step",
        "proactive_topics_step",
        "proactive_plan_step",
        "proactive_agenda_step",
        "proactive_finish_step",
    ]
    extract = cron.steps[0].settings
    assert extract == {
        "file_catalog": "proactive",
        "scan_days": 2,
        "carry_forward_days": 14,
        "max_carry_forward_topics": 20,
        "llm_timeout_seconds": 300,
        "max_chars_per_file": 60000,
        "max_total_chars": 300000,
    }
    assert app.jobs["proactive_read"].served and app.jobs["proactive_resolve"].served


async def test_material_is_packed_within_bounds_and_what_is_left_out_is_read_later(
    make_port_app: MakePortApp,
) -> None:
    from reme.pipelines.memory.daily_changes import checkpoint
    from reme.pipelines.proactive.material import gather

    app = make_port_app()
    write_note(app.workspace_dir, "daily/2026-06-19/old.md", "o" * 50)
    write_note(app.workspace_dir, "daily/2026-06-20/big.md", "b" * 500)
    write_note(app.workspace_dir, "daily/2026-06-20/interests.yaml", "topics: []\n")  # never material
    write_note(app.workspace_dir, "daily/2026-06-18/outside.md", "x")  # outside the window
    port = app.port
    day = date(2026, 6, 20)
    material = await gather(
        port, day, catalog="proactive", scan_days=2, max_chars_per_file=300, max_total_chars=300
    )
    assert material.window == ["2026-06-19", "2026-06-20"]
    assert [e.path for e in material.changed] == ["daily/2026-06-19/old.md", "daily/2026-06-20/big.md"]
    assert material.shown == ["daily/2026-06-20/big.md"] and material.cut == ["daily/2026-06-20/big.md"]
    assert material.omitted == ["daily/2026-06-19/old.md"]
    assert "[... cut: 200 more characters of this file not shown]" in material.text
    assert "1 more changed file(s) not shown" in material.text and "o" * 50 not in material.text
    checkpoint(port, "proactive", [e for e in material.changed if e.path in material.shown])
    again = await gather(
        port, day, catalog="proactive", scan_days=2, max_chars_per_file=300, max_total_chars=300
    )
    assert again.shown == ["daily/2026-06-19/old.md"] and again.cut == []


async def test_a_resolve_during_the_run_wins(make_port_app: MakePortApp, monkeypatch) -> None:
    from reme.pipelines.proactive.calls import ModelCalls

    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO)])}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    assert (await refresh(app, "2026-06-20")).success
    kyoto = topic_id("Kyoto trip")
    later = "daily/2026-06-21/n.md"
    write_note(app.workspace_dir, later, "Kyoto still.\n")
    set_script(app, {"output": reply([found("Kyoto trip", later)])})
    ask = ModelCalls.ask

    async def ask_then_resolve(self, stage, *args, **kwargs):
        answer = await ask(self, stage, *args, **kwargs)
        if stage == "extract":  # the agent resolves it while the refresh is still asking the model
            assert (await app.run("proactive_resolve", topic_id=kyoto, reason="booked")).success
        return answer

    monkeypatch.setattr(ModelCalls, "ask", ask_then_resolve)
    response = await refresh(app, "2026-06-21")
    assert response.success, response.answer
    assert response.metadata["pushed"] == []
    truth = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
    assert truth["topics"] == [] and [t["id"] for t in truth["resolved"]] == [kyoto]
    interests = load_yaml(app.workspace_dir / "daily/2026-06-21/interests.yaml")
    assert interests["topics"] == [] and interests["agenda"] == [] and interests["push"] is False


async def test_resolve_waits_for_a_finishing_refresh_and_keeps_hand_added_keys(
    make_port_app: MakePortApp,
) -> None:
    import asyncio

    app = make_port_app()
    write_note(
        app.workspace_dir,
        "daily/_proactive.yaml",
        "topics:\n- {title: Kyoto trip, last_evidence_at: 2026-06-20, paths: [daily/2026-06-20/a.md], owner: me}\n",
    )
    async with app.port.exclusive("proactive"):  # a refresh is writing
        pending = asyncio.create_task(app.run("proactive_resolve", topic_id=topic_id("Kyoto trip")))
        await asyncio.sleep(0.2)
        assert not pending.done()
    response = await pending
    assert response.success, response.answer
    truth = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
    assert truth["topics"] == [] and truth["resolved"][0]["title"] == "Kyoto trip"
    write_note(
        app.workspace_dir,
        "daily/_proactive.yaml",
        "topics:\n- {title: Tax, last_evidence_at: 2026-06-20, paths: [daily/2026-06-20/a.md], owner: me}\n"
        "- {title: Kyoto trip, paths: [daily/2026-06-20/a.md]}\n",
    )
    assert (await app.run("proactive_resolve", topic_id=topic_id("Kyoto trip"))).success
    (kept,) = load_yaml(app.workspace_dir / "daily/_proactive.yaml")["topics"]
    assert kept["title"] == "Tax" and kept["owner"] == "me"


async def test_linked_memory_keeps_only_existing_workspace_paths(
    make_port_app: MakePortApp, tmp_path
) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("outside the workspace", encoding="utf-8")
    links = ["../secret.md", str(outside), "[[digest/wiki/kyoto.md]]", "digest/wiki/missing.md", KYOTO]
    plans = [plan_for("Kyoto trip", linked_memory=links)]
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO)], plans=plans)}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    write_note(app.workspace_dir, "digest/wiki/kyoto.md", "# Kyoto\n")
    assert (await refresh(app, "2026-06-20")).success
    interests = load_yaml(app.workspace_dir / "daily/2026-06-20/interests.yaml")
    assert interests["agenda"][0]["linked_memory"] == ["digest/wiki/kyoto.md", KYOTO]


async def test_a_resolved_topic_reworded_stays_resolved(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted([{"output": reply([found("Release checklist for v2", KYOTO)])}]))
    write_note(app.workspace_dir, KYOTO, "The v2 release checklist.\n")
    assert (await refresh(app, "2026-06-20")).success
    checklist = topic_id("Release checklist for v2")
    assert (await app.run("proactive_resolve", topic_id=checklist)).success
    old_day = "daily/2026-06-21/n.md"  # before the day it was resolved (the app's today)
    write_note(app.workspace_dir, old_day, "v2 release checklist, again.\n")
    set_script(app, {"output": reply([found("v2 release checklist", old_day)])})
    response = await refresh(app, "2026-06-21")
    assert response.success and response.metadata["pushed"] == []
    assert {s["id"] for s in response.metadata["suppressed"]} == {checklist}


async def test_a_second_refresh_while_one_runs_answers_at_once_and_a_failed_run_lets_the_next_start(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app(**scripted([{"text": "unusable"}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    before = snapshot(app.workspace_dir)
    async with app.port.exclusive("proactive_refresh"):  # another process is refreshing
        busy = await refresh(app, "2026-06-20")
    assert not busy.success and "a proactive_refresh run is in progress since" in busy.answer
    assert busy.metadata["llm_calls"] == 0 and snapshot(app.workspace_dir) == before
    failed = await refresh(app, "2026-06-20")
    assert not failed.success and "unusable reply" in failed.answer
    set_script(app, {"output": reply([found("Kyoto trip", KYOTO)])})
    assert (await refresh(app, "2026-06-20")).success  # the failed run released its lock
    assert (await refresh(app, "2026-06-20")).success  # and so did the finished one


async def test_bad_step_settings_are_named(make_app: MakeApp) -> None:
    steps = [{"backend": "proactive_extract_step", "scan_days": 0}, {"backend": "proactive_finish_step"}]
    app = await make_app(**{"jobs.proactive_refresh.steps": steps})
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    response = await refresh(app, "2026-06-20")
    assert not response.success and "scan_days must be a number of at least 1" in response.answer


async def test_an_unknown_step_setting_stops_the_start_naming_the_key(make_app: MakeApp) -> None:
    from reme.app.config import ConfigError

    steps = [{"backend": "proactive_extract_step", "scan_dayz": 3}, {"backend": "proactive_finish_step"}]
    with pytest.raises(ConfigError, match=r"'jobs.proactive_refresh.steps\[0\].scan_dayz'.*scan_days"):
        await make_app(**{"jobs.proactive_refresh.steps": steps})


async def test_a_known_topic_named_without_evidence_is_carried_not_suppressed(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO)])}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    assert (await refresh(app, "2026-06-20")).success
    write_note(app.workspace_dir, "daily/2026-06-21/n.md", "Other things.\n")
    set_script(app, {"output": reply([found("Kyoto trip", "daily/2026-06-30/invented.md")])})
    response = await refresh(app, "2026-06-21")
    assert response.success and response.metadata["pushed"] == [topic_id("Kyoto trip")]
    assert response.metadata["suppressed"] == []
    (topic,) = load_yaml(app.workspace_dir / "daily/_proactive.yaml")["topics"]
    assert topic["paths"] == [KYOTO]

"""proactive_refresh, chat and auto_resource against a misbehaving (scripted) model.

Guarantees in code, not in prompts: whatever the model replies, the job refuses what breaks a rule
(success=false, or the item skipped with its reason) and the files on disk are as the rules require.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.pipelines.conftest import MakeApp, scripted
from tests.pipelines.port_jobs import MakePortApp, PortApp, port_app_fixture  # noqa: F401  (the fixture)
from tests.pipelines.proactive_helpers import found, load_yaml, reply, snapshot, write_note
from tests.pipelines.test_auto_memory import front_matter

from reme import ReMe
from reme.pipelines.proactive import calls as proactive_calls
from reme.pipelines.proactive.topics import topic_id

KYOTO = "daily/2026-06-20/trip.md"
TRUTH = "daily/_proactive.yaml"
INTERESTS = "daily/2026-06-20/interests.yaml"


async def refresh(app: PortApp, day: str = "2026-06-20") -> Any:
    return await app.run("proactive_refresh", date=day)


def kyoto_app(make_port_app: MakePortApp, topics: list[dict[str, Any]], **kw: Any) -> PortApp:
    app = make_port_app(**scripted([{"output": reply(topics, **kw)}]))
    write_note(app.workspace_dir, KYOTO, "# Trip\nBooking Kyoto for June 29.\n")
    return app


# proactive_refresh ---------------------------------------------------------------------------------


async def test_proactive_evidence_outside_the_workspace_or_missing_is_not_evidence(
    make_port_app: MakePortApp,
) -> None:
    bad = ["../../etc/passwd", "/etc/passwd", "~/notes.md", "daily/2026-06-20/nope.md", "daily/../secret.md"]
    app = kyoto_app(make_port_app, [found("Leak", *bad), found("Kyoto trip", KYOTO, *bad)])
    response = await refresh(app)
    assert response.success, response.answer
    assert response.metadata["pushed"] == [topic_id("Kyoto trip")]
    (topic,) = load_yaml(app.workspace_dir / TRUTH)["topics"]
    assert topic["paths"] == [KYOTO]
    interests = load_yaml(app.workspace_dir / INTERESTS)
    assert {"id": topic_id("Leak"), "title": "Leak"} == {
        k: interests["suppressed"][0][k] for k in ("id", "title")
    }


async def test_proactive_thousands_of_topics_fail_and_write_nothing(make_port_app: MakePortApp) -> None:
    app = kyoto_app(make_port_app, [found(f"Topic {n}", KYOTO) for n in range(2000)])
    before = snapshot(app.workspace_dir)
    response = await refresh(app)
    assert not response.success and "unusable reply" in response.answer
    assert snapshot(app.workspace_dir) == before


async def test_proactive_duplicate_topics_are_one(make_port_app: MakePortApp) -> None:
    twins = [
        found("Kyoto trip", KYOTO, confidence=0.6),
        found("kyoto   TRIP", KYOTO, confidence=0.9),
        found("Other", KYOTO, known_id=topic_id("Kyoto trip")),
    ]
    app = kyoto_app(make_port_app, twins)
    response = await refresh(app)
    assert response.success, response.answer
    truth = load_yaml(app.workspace_dir / TRUTH)
    (topic,) = truth["topics"]  # the named known id continues the topic, under its known title
    assert topic["id"] == topic_id("Kyoto trip") and topic["title"] == "Kyoto trip"
    assert topic["confidence"] == 0.9 and topic["paths"] == [KYOTO]


@pytest.mark.parametrize(
    "title",
    [
        "Kyoto\ntrip: - [x] & *ref !tag | > % @ `q` # not a comment",
        "---\n...\nkey: value",
        "null",
        "2026-06-20",
        "2026-06-20 10:00:00",
        "2026-02-30",
        "2026-06-20 25:00:00",
        "'quoted' \"double\" \\ back",
    ],
)
async def test_proactive_yaml_breaking_titles_round_trip(make_port_app: MakePortApp, title: str) -> None:
    app = kyoto_app(make_port_app, [found(title, KYOTO)])
    response = await refresh(app)
    assert response.success, response.answer
    (topic,) = load_yaml(app.workspace_dir / TRUTH)["topics"]
    assert "\n" not in str(topic["title"]) and topic["id"] == topic_id(title)
    # the file it wrote is read again by the next run and by resolve
    write_note(app.workspace_dir, "daily/2026-06-21/more.md", "Kyoto again.\n")
    again = await refresh(app, "2026-06-21")
    assert again.success, again.answer
    resolved = await app.run("proactive_resolve", topic_id=topic_id(title), reason="done")
    assert resolved.success, resolved.answer


@pytest.mark.parametrize("title", ["!!!", "🎉🎉", "  \n\t ", "—"])
async def test_proactive_title_without_words_never_breaks_the_truth_source(
    make_port_app: MakePortApp, title: str
) -> None:
    app = kyoto_app(make_port_app, [found(title, KYOTO), found("Kyoto trip", KYOTO)])
    response = await refresh(app)
    assert response.success, response.answer
    assert response.metadata["pushed"] == [topic_id("Kyoto trip")]
    truth = load_yaml(app.workspace_dir / TRUTH)
    assert [t["title"] for t in truth["topics"]] == ["Kyoto trip"]
    write_note(app.workspace_dir, "daily/2026-06-21/more.md", "Kyoto again.\n")
    again = await refresh(app, "2026-06-21")
    assert again.success, again.answer


async def test_proactive_hand_edited_truth_with_bad_dates_still_refreshes(make_port_app: MakePortApp) -> None:
    app = kyoto_app(make_port_app, [found("Kyoto trip", KYOTO)])
    write_note(
        app.workspace_dir,
        TRUTH,
        "version: 1\ntopics:\n- title: Old thing\n  last_evidence_at: June 19\n  first_seen: 19/06/2026\n"
        "  paths: [daily/2026-06-19/x.md]\nresolved:\n- title: Kyoto trip\n  resolved_at: yesterday\n",
    )
    response = await refresh(app)
    assert response.success, response.answer
    truth = load_yaml(app.workspace_dir / TRUTH)
    assert [t["title"] for t in truth["topics"]] == ["Kyoto trip"]  # the old one's evidence file is gone


async def test_proactive_malformed_hand_edit_is_refused_byte_for_byte(make_port_app: MakePortApp) -> None:
    app = kyoto_app(make_port_app, [found("Kyoto trip", KYOTO)])
    write_note(app.workspace_dir, TRUTH, "topics: [\n  - title: broken\n")
    before = snapshot(app.workspace_dir)
    response = await refresh(app)
    assert not response.success and "proactive_rebuild" in response.answer
    assert snapshot(app.workspace_dir) == before


async def test_proactive_hand_edited_interests_file_between_runs(make_port_app: MakePortApp) -> None:
    app = kyoto_app(make_port_app, [found("Kyoto trip", KYOTO)])
    assert (await refresh(app)).success
    # a person rewrites the day's agenda file by hand, with junk
    write_note(app.workspace_dir, INTERESTS, "topics: not a list\nagenda: {x: [\n")
    rebuilt = await app.run("proactive_rebuild")
    assert rebuilt.success and rebuilt.metadata["skipped"][0]["path"] == INTERESTS
    write_note(app.workspace_dir, "daily/2026-06-21/more.md", "Kyoto again.\n")
    app.set_script({"output": reply([found("Kyoto trip", "daily/2026-06-21/more.md")])})
    again = await refresh(app, "2026-06-21")
    assert again.success, again.answer


async def test_proactive_resolve_racing_a_refresh_wins(
    make_port_app: MakePortApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = kyoto_app(make_port_app, [found("Kyoto trip", KYOTO)])
    assert (await refresh(app)).success
    kyoto = topic_id("Kyoto trip")
    later = "daily/2026-06-21/more.md"
    write_note(app.workspace_dir, later, "Kyoto again.\n")
    app.set_script({"output": reply([found("Kyoto trip", later)])})
    ask = proactive_calls.ModelCalls.ask

    async def racing(self: Any, stage: str, *args: Any, **kwargs: Any) -> Any:
        if stage == "plan":  # the user resolves it while the model is asked
            assert (await app.run("proactive_resolve", topic_id=kyoto, reason="booked")).success
        return await ask(self, stage, *args, **kwargs)

    monkeypatch.setattr(proactive_calls.ModelCalls, "ask", racing)
    response = await refresh(app, "2026-06-21")
    assert response.success, response.answer
    assert response.metadata["pushed"] == []
    truth = load_yaml(app.workspace_dir / TRUTH)
    assert truth["topics"] == [] and [t["id"] for t in truth["resolved"]] == [kyoto]
    interests = load_yaml(app.workspace_dir / "daily/2026-06-21/interests.yaml")
    assert interests["topics"] == [] and interests["agenda"] == []


async def test_proactive_plan_links_outside_the_workspace_are_dropped(make_port_app: MakePortApp) -> None:
    links = ["../outside.md", "/etc/passwd", "daily/2026-06-20/nope.md", KYOTO, "[[daily/2026-06-20/trip]]"]
    plan = {"topic_id": topic_id("Kyoto trip"), "scenario_type": "x", "opener": "o", "next_action": "n"}
    app = kyoto_app(make_port_app, [found("Kyoto trip", KYOTO)], plans=[{**plan, "linked_memory": links}])
    response = await refresh(app)
    assert response.success, response.answer
    (item,) = load_yaml(app.workspace_dir / INTERESTS)["agenda"]
    assert item["linked_memory"] == [KYOTO]


# chat ----------------------------------------------------------------------------------------------


async def seed_note(app: ReMe) -> None:
    wrote = await app.run("write", path="daily/2026-06-01/kyoto.md", content="- window seats\n", name="Kyoto")
    assert wrote.success, wrote.answer


async def test_chat_sources_are_only_what_it_read(make_app: MakeApp) -> None:
    script = [
        {"tool": "read", "args": {"path": "daily/2026-06-01/missing.md"}},
        {"tool": "read", "args": {"path": "../../etc/passwd"}},
        {"text": "See [[daily/2026-06-01/kyoto.md]] and [[secret/plans.md]]."},
    ]
    app = await make_app(**scripted(script))
    await seed_note(app)
    response = await app.run("chat", query="Which seats?")
    assert response.success, response.answer
    assert response.metadata["sources"] == []
    assert [c["success"] for c in response.metadata["tool_calls"]] == [False, False]


async def test_chat_write_tools_leave_the_workspace_as_it_was(make_app: MakeApp) -> None:
    script = [
        {"tool": "delete", "args": {"path": "daily/2026-06-01/kyoto.md"}},
        {"tool": "move", "args": {"src": "daily/2026-06-01/kyoto.md", "dst": "daily/x.md"}},
        {"tool": "frontmatter_update", "args": {"path": "daily/2026-06-01/kyoto.md", "updates": {"a": 1}}},
        {"text": "Done."},
    ]
    app = await make_app(**scripted(script))
    await seed_note(app)
    before = snapshot(app.workspace_dir)
    await app.run("chat", query="Delete my note.")
    assert snapshot(app.workspace_dir) == before


async def test_chat_looping_on_search_stops_and_fails(make_app: MakeApp) -> None:
    script = [{"tool": "search", "args": {"query": f"seats {n}"}} for n in range(200)]
    app = await make_app(**scripted(script))
    await seed_note(app)
    response = await app.run("chat", query="Which seats?")
    assert not response.success
    assert response.metadata["usage"]["requests"] <= 20


async def test_chat_enormous_answer_writes_nothing(make_app: MakeApp) -> None:
    # the reply's size is bounded by max_tokens and the transport's 10 MB (docs/llm.md), not by chat
    app = await make_app(**scripted([{"text": "x" * 3_000_000}]))
    await seed_note(app)
    before = snapshot(app.workspace_dir)
    response = await app.run("chat", query="Say a lot.")
    assert response.success and response.metadata["sources"] == [] == response.metadata["tool_calls"]
    assert snapshot(app.workspace_dir) == before


# auto_resource -------------------------------------------------------------------------------------

RESOURCE = "resource/2026-06-01/report.md"
CARD = "daily/2026-06-01/report.md"


def put(app: PortApp | ReMe, path: str, content: str) -> None:
    write_note(app.workspace_dir, path, content)


def finish() -> dict[str, Any]:
    return {"output": {"name": "Report", "description": "A report."}}


async def test_resource_card_for_another_resource_is_refused(make_port_app: MakePortApp) -> None:
    script = [
        {"tool": "write", "args": {"path": "daily/2026-06-01/other.md", "content": "# Other\n"}},
        {"tool": "write", "args": {"path": RESOURCE, "content": "rewritten"}},
        {"tool": "edit", "args": {"path": RESOURCE, "old": "Revenue", "new": "Loss"}},
        {"tool": "delete", "args": {"path": RESOURCE}},
        {"tool": "write", "args": {"path": "$card_path", "content": "# Report\n\nRevenue 3.2M.\n"}},
        finish(),
    ]
    app = make_port_app(**scripted(script))
    put(app, RESOURCE, "Revenue 3.2M.\n")
    original = (app.workspace_dir / RESOURCE).read_bytes()
    response = await app.run("auto_resource", paths=[RESOURCE])
    assert response.success, response.answer
    assert (app.workspace_dir / RESOURCE).read_bytes() == original
    assert not (app.workspace_dir / "daily/2026-06-01/other.md").exists()
    assert sorted(p.name for p in (app.workspace_dir / "daily/2026-06-01").iterdir()) == ["report.md"]


@pytest.mark.parametrize(
    "content",
    [
        "# No front matter at all\n",
        "---\nsource_resource: '[[resource/2026-06-01/other.md]]'\nsession_id: stolen\n"
        "source_sha256: '0'\npending: true\n---\n# Lies\n",
    ],
)
async def test_resource_card_front_matter_is_set_by_code(make_port_app: MakePortApp, content: str) -> None:
    app = make_port_app(
        **scripted([{"tool": "write", "args": {"path": "$card_path", "content": content}}, finish()])
    )
    put(app, RESOURCE, "Revenue 3.2M.\n")
    response = await app.run("auto_resource", paths=[RESOURCE])
    assert response.success, response.answer
    meta = front_matter(app.workspace_dir / CARD)
    assert meta["source_resource"] == f"[[{RESOURCE}]]" and "pending" not in meta
    assert meta["session_id"] != "stolen" and meta["source_sha256"] != "0"


@pytest.mark.parametrize(
    "content",
    [
        "---\nname: [unclosed\n---\n# Broken\n",
        "---\n- a list\n- not a mapping\n---\n# Body\n",
        "---\nname: x\n",
    ],
)
async def test_resource_card_with_broken_front_matter_leaves_no_card(make_app: MakeApp, content: str) -> None:
    app = await make_app(
        **scripted([{"tool": "write", "args": {"path": "$card_path", "content": content}}, finish()])
    )
    put(app, RESOURCE, "Revenue 3.2M.\n")
    response = await app.run("auto_resource", paths=[RESOURCE])
    card = app.workspace_dir / CARD
    if response.success:
        meta = front_matter(card)
        assert meta["source_resource"] == f"[[{RESOURCE}]]" and "pending" not in meta
    else:
        assert not card.exists()
        assert response.metadata["pending"] == [RESOURCE]


async def test_resource_card_links_to_missing_files(make_port_app: MakePortApp) -> None:
    body = "# Report\n\nSee [[daily/2099-01-01/nothing.md]] and [[../../etc/passwd]].\n"
    app = make_port_app(
        **scripted([{"tool": "write", "args": {"path": "$card_path", "content": body}}, finish()])
    )
    put(app, RESOURCE, "Revenue 3.2M.\n")
    response = await app.run("auto_resource", paths=[RESOURCE])
    assert response.success, response.answer
    assert not (app.workspace_dir / "daily/2099-01-01").exists()

"""auto_memory end to end on a real workspace, with the scripted model (docs/spec.md §10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from tests.pipelines.conftest import MakeApp, scripted
from tests.pipelines.port_jobs import MakePortApp, port_app_fixture  # noqa: F401  (the fixture)

from reme import ReMe


def front_matter(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), text
    return yaml.safe_load(text.split("---\n", 2)[1])


def transcript(app: ReMe, session_id: str) -> list[dict[str, Any]]:
    lines = (
        (app.workspace_dir / f"session/dialog/{session_id}.jsonl").read_text(encoding="utf-8").splitlines()
    )
    return [json.loads(line) for line in lines]


def card_script(body: str, name: str, description: str = "What was said.") -> list[dict[str, Any]]:
    return [
        {"tool": "read", "args": {"path": "$card_path"}},
        {"tool": "write", "args": {"path": "$card_path", "content": body}},
        {"output": {"name": name, "description": description}},
    ]


TRIP = [
    {
        "id": "u1",
        "role": "user",
        "content": "I prefer window seats. Booking Kyoto for June 9.",
        "created_at": "2026-06-01T09:00:00Z",
    },
    {
        "id": "a1",
        "role": "assistant",
        "content": "Noted: window seat, Kyoto on June 9.",
        "created_at": "2026-06-01T09:00:05Z",
    },
]


async def test_distils_the_conversation_into_a_named_card(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(card_script("# Kyoto\n\n- Prefers window seats\n", "Kyoto trip")))
    response = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
    assert response.success, response.answer
    meta = response.metadata
    assert meta["session_path"] == "session/dialog/trip-1.jsonl"
    assert meta["note_path"] == "daily/2026-06-01/kyoto-trip.md"
    assert meta["date"] == "2026-06-01" and meta["pending"] is False
    assert meta["usage"]["requests"] == 3 and meta["usage"]["input_tokens"] > 0
    card = app.workspace_dir / meta["note_path"]
    assert front_matter(card) == {
        "name": "Kyoto trip",
        "description": "What was said.",
        "session_id": "trip-1",
        "source_conversation": "[[session/dialog/trip-1.jsonl]]",
    }
    assert card.read_text(encoding="utf-8").endswith("# Kyoto\n\n- Prefers window seats\n")
    assert [m["id"] for m in transcript(app, "trip-1")] == ["u1", "a1"]
    day_index = (app.workspace_dir / "daily/2026-06-01.md").read_text(encoding="utf-8")
    assert "- [[daily/2026-06-01/kyoto-trip.md]] name: Kyoto trip" in day_index
    assert sorted(p.name for p in (app.workspace_dir / "daily/2026-06-01").iterdir()) == ["kyoto-trip.md"]


async def test_second_call_updates_the_same_card_and_tools_touch_nothing_else(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app(**scripted(card_script("- window seats\n", "Kyoto trip")))
    first = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
    assert first.success, first.answer
    llm = app.component("llm")
    llm.script = [  # type: ignore[attr-defined]
        {"tool": "read", "args": {"path": "$card_path"}},
        {
            "tools": [
                {"tool": "write", "args": {"path": "daily/$date/stolen.md", "content": "x"}},
                {"tool": "edit", "args": {"path": "daily/$date.md", "old": "notes", "new": "hacked"}},
                {"tool": "read", "args": {"path": "session/dialog/other.jsonl"}},
                {
                    "tool": "write",
                    "args": {"path": "$card_path", "content": "- window seats\n- hotel: Ryokan Sakura\n"},
                },
            ]
        },
        {"output": {"name": "Kyoto trip", "description": "Seats and hotel."}},
    ]
    later = [
        {
            "id": "u2",
            "role": "user",
            "content": "Hotel is Ryokan Sakura.",
            "created_at": "2026-06-01T18:00:00Z",
        }
    ]
    second = await app.run("auto_memory", session_id="trip-1", messages=later)
    assert second.success, second.answer
    assert second.metadata["note_path"] == first.metadata["note_path"] == "daily/2026-06-01/kyoto-trip.md"
    card = app.workspace_dir / second.metadata["note_path"]
    assert card.read_text(encoding="utf-8").endswith("- window seats\n- hotel: Ryokan Sakura\n")
    assert front_matter(card)["description"] == "Seats and hotel."
    assert sorted(p.name for p in card.parent.iterdir()) == ["kyoto-trip.md"]
    assert "hacked" not in (app.workspace_dir / "daily/2026-06-01.md").read_text(encoding="utf-8")
    assert [m["id"] for m in transcript(app, "trip-1")] == ["u1", "a1", "u2"]


async def test_a_message_at_2330_utc_lands_on_the_next_day_in_utc_plus_8(make_port_app: MakePortApp) -> None:
    app = make_port_app("Asia/Shanghai", **scripted(card_script("- late note\n", "Late note")))
    messages = [
        {"role": "user", "content": "Remember the parcel code 4711.", "created_at": "2026-06-01T23:30:00Z"}
    ]
    response = await app.run("auto_memory", session_id="late", messages=messages)
    assert response.success, response.answer
    assert response.metadata["date"] == "2026-06-02"
    assert response.metadata["note_path"] == "daily/2026-06-02/late-note.md"
    assert transcript(app, "late")[0]["created_at"] == "2026-06-02T07:30:00+08:00"


async def test_explicit_date_wins_and_invalid_date_writes_nothing(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(card_script("- x\n", "Filed")))
    bad = await app.run("auto_memory", session_id="s", messages=TRIP, date="2026-02-30")
    assert not bad.success and "2026-02-30" in bad.answer and "YYYY-MM-DD" in bad.answer
    assert not (app.workspace_dir / "session/dialog/s.jsonl").exists()
    assert not any((app.workspace_dir / "daily").iterdir())
    good = await app.run("auto_memory", session_id="s", messages=TRIP, date="2026-05-20")
    assert good.success and good.metadata["note_path"] == "daily/2026-05-20/filed.md"


async def test_rename_retargets_inbound_links(make_app: MakeApp) -> None:
    app = await make_app(**scripted(card_script("- v1\n", "Kyoto trip")))
    first = await app.run("auto_memory", session_id="trip-1", messages=TRIP)
    assert first.success, first.answer
    hub = app.workspace_dir / "digest/wiki/travel.md"
    wrote = await app.run(
        "save",
        path="digest/wiki/travel.md",
        content="# Travel\n\nsee [[daily/2026-06-01/kyoto-trip.md|the trip]]\n",
    )
    assert wrote.success, wrote.answer
    app.component("llm").script = card_script("- v2\n", "Kyoto and Osaka trip")  # type: ignore[attr-defined]
    second = await app.run(
        "auto_memory",
        session_id="trip-1",
        messages=[{"role": "user", "content": "Add Osaka.", "created_at": "2026-06-01T10:00:00Z"}],
    )
    assert second.success, second.answer
    assert second.metadata["note_path"] == "daily/2026-06-01/kyoto-and-osaka-trip.md"
    assert not (app.workspace_dir / "daily/2026-06-01/kyoto-trip.md").exists()
    assert (
        hub.read_text(encoding="utf-8")
        == "# Travel\n\nsee [[daily/2026-06-01/kyoto-and-osaka-trip.md|the trip]]\n"
    )
    day_index = (app.workspace_dir / "daily/2026-06-01.md").read_text(encoding="utf-8")
    assert "kyoto-and-osaka-trip.md" in day_index and "daily/2026-06-01/kyoto-trip.md" not in day_index


async def test_base64_and_tool_results_never_reach_the_transcript(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(card_script("- chart\n", "Chart")))
    blob = "iVBORw0KGgo" + "QUJD" * 300
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What does this chart show?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{blob}"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": blob}},
            ],
            "created_at": "2026-06-01T08:00:00Z",
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": "sales"}'},
                }
            ],
            "created_at": "2026-06-01T08:00:01Z",
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "TOOL-OUTPUT-OPENAI",
            "created_at": "2026-06-01T08:00:02Z",
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "TOOL-OUTPUT-ANTHROPIC"}],
            "created_at": "2026-06-01T08:00:03Z",
        },
        {
            "role": "assistant",
            "content": f"Sales rose 12%. Raw: {blob}",
            "created_at": "2026-06-01T08:00:04Z",
        },
    ]
    response = await app.run("auto_memory", session_id="chart", messages=messages)
    assert response.success, response.answer
    saved = (app.workspace_dir / "session/dialog/chart.jsonl").read_text(encoding="utf-8")
    assert "QUJDQUJD" not in saved and "TOOL-OUTPUT" not in saved
    records = transcript(app, "chart")
    assert [r["content"] for r in records] == [
        "What does this chart show?\n[image]\n[image]",
        '[tool call lookup: {"q": "sales"}]',
        "Sales rose 12%. Raw: [base64 data removed]",
    ]


async def test_identical_call_changes_nothing(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(card_script("- once\n", "Once")))
    first = await app.run("auto_memory", session_id="s", messages=TRIP)
    assert first.success
    files = {
        p: (p.read_bytes(), p.stat().st_mtime_ns)
        for p in app.workspace_dir.rglob("*")
        if p.is_file() and "metadata" not in p.parts
    }
    again = await app.run("auto_memory", session_id="s", messages=TRIP)
    assert again.success and again.metadata["pending"] is False
    assert again.metadata["usage"] == {}  # no model call
    assert again.metadata["note_path"] == first.metadata["note_path"]
    after = {
        p: (p.read_bytes(), p.stat().st_mtime_ns)
        for p in app.workspace_dir.rglob("*")
        if p.is_file() and "metadata" not in p.parts
    }
    assert after == files


async def test_messages_without_ids_get_stable_ids_and_merge_in_time_order(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app(**scripted(card_script("- x\n", "Merge")))
    early = {"role": "user", "content": "first", "timestamp": "2026-06-01T08:00:00Z"}
    late = {"role": "user", "content": "third", "createdAt": 1780308000000}  # 2026-06-01T10:00:00Z in ms
    middle = {"role": "assistant", "content": "second", "metadata": {"time_created": "2026-06-01 09:00:00"}}
    assert (await app.run("auto_memory", session_id="m", messages=[early, late])).success
    assert (await app.run("auto_memory", session_id="m", messages=[early, middle, late])).success
    records = transcript(app, "m")
    assert [r["content"] for r in records] == ["first", "second", "third"]
    assert [r["created_at"] for r in records] == [
        "2026-06-01T08:00:00+00:00",
        "2026-06-01T09:00:00+00:00",
        "2026-06-01T10:00:00+00:00",
    ]
    assert len({r["id"] for r in records}) == 3


async def test_oversize_content_is_truncated(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(card_script("- x\n", "Long")))
    text = "word " * 5000
    response = await app.run("auto_memory", session_id="long", messages=[{"role": "user", "content": text}])
    assert response.success, response.answer
    content = transcript(app, "long")[0]["content"]
    assert content.startswith("word word") and content.endswith(
        f"[truncated {len(text.strip()) - 8000} characters]"
    )


async def test_bad_messages_and_session_ids_are_refused_before_writing(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(card_script("- x\n", "X")))
    cases = [
        ({"session_id": "../escape", "messages": TRIP}, "session_id"),
        ({"session_id": "trailing.", "messages": TRIP}, "cannot be a file name"),
        ({"session_id": "nul", "messages": TRIP}, "reserved device name"),
        ({"session_id": "s", "messages": [{"content": "no role"}]}, "messages[0].role"),
        (
            {"session_id": "s", "messages": [{"role": "user", "content": "x", "created_at": "yesterday"}]},
            "not ISO 8601",
        ),
        (
            {"session_id": "s", "messages": [{"role": "tool", "content": "only a tool result"}]},
            "no message with text",
        ),
    ]
    for params, expected in cases:
        response = await app.run("auto_memory", **params)
        assert not response.success and expected in response.answer, response.answer
    assert not (app.workspace_dir / "session/dialog").exists() or not any(
        (app.workspace_dir / "session/dialog").iterdir()
    )


async def test_a_malformed_saved_transcript_is_a_clear_error_and_stays_as_it_is(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app(**scripted(card_script("- x\n", "X")))
    saved = app.workspace_dir / "session/dialog/s.jsonl"
    saved.parent.mkdir(parents=True, exist_ok=True)
    for line, said in (
        ('{"id": "a", "role": 5, "content": "hi"}\n', "transcript line 1 'a': role must be text"),
        ('{"id": ["a"], "role": "user", "content": "hi"}\n', "transcript line 1 has no usable id"),
    ):
        saved.write_text(line, encoding="utf-8")
        response = await app.run("auto_memory", session_id="s", messages=TRIP)
        assert not response.success and said in response.answer, response.answer
        assert saved.read_text(encoding="utf-8") == line
    assert not (app.workspace_dir / "daily").exists() or not any((app.workspace_dir / "daily").rglob("*.md"))


def test_hooks_and_jobs_share_one_session_id_rule() -> None:
    from reme.workspace.transcript import check_session_id, is_session_id

    for good in ("s", "abc-123.jsonl-part", "日本語", "_underscore", "a" * 128):
        assert is_session_id(good) and check_session_id(good) == good
    for bad in ("", "../escape", "a..b", "trailing.", "nul", "-dash", "a/b", "a" * 129, 5, None):
        assert not is_session_id(bad)


async def test_relative_dates_left_in_the_card_are_resolved(make_port_app: MakePortApp) -> None:
    body = "## Today's plan\n\n- Call the bank tomorrow\n- Met Li yesterday (2026-06-01)\n"
    app = make_port_app("Asia/Shanghai", **scripted(card_script(body, "Bank call")))
    messages = [{"role": "user", "content": "Call the bank tomorrow.", "created_at": "2026-06-02T01:00:00Z"}]
    response = await app.run("auto_memory", session_id="bank", messages=messages)
    assert response.success, response.answer
    text = (app.workspace_dir / response.metadata["note_path"]).read_text(encoding="utf-8")
    assert text.endswith(
        "## Today's plan\n\n- Call the bank tomorrow (2026-06-03)\n- Met Li yesterday (2026-06-01)\n"
    )


async def test_concurrent_calls_for_one_session_take_turns(make_port_app: MakePortApp) -> None:
    import asyncio

    app = make_port_app(**scripted(card_script("- merged\n", "Busy session")))
    batches = [
        [{"id": f"m{i}", "role": "user", "content": f"fact {i}", "created_at": f"2026-06-01T0{i}:00:00Z"}]
        for i in range(1, 5)
    ]
    responses = await asyncio.gather(
        *(app.run("auto_memory", session_id="busy", messages=b) for b in batches)
    )
    assert all(r.success for r in responses), [r.answer for r in responses]
    assert {r.metadata["note_path"] for r in responses} == {"daily/2026-06-01/busy-session.md"}
    assert [m["id"] for m in transcript(app, "busy")] == ["m1", "m2", "m3", "m4"]
    assert sorted(p.name for p in (app.workspace_dir / "daily/2026-06-01").iterdir()) == ["busy-session.md"]


async def test_a_users_note_with_the_cards_name_is_never_taken_over(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(card_script("- distilled\n", "Main")))
    mine = app.workspace_dir / "daily/2026-06-01/main.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("---\nname: my plan\n---\nMY OWN TEXT\n", encoding="utf-8")
    response = await app.run("auto_memory", session_id="main", messages=TRIP)
    assert response.success, response.answer
    assert mine.read_text(encoding="utf-8") == "---\nname: my plan\n---\nMY OWN TEXT\n"
    card = app.workspace_dir / response.metadata["note_path"]
    assert card != mine and card.parent == mine.parent
    assert front_matter(card)["session_id"] == "main" and card.read_text(encoding="utf-8").endswith(
        "- distilled\n"
    )

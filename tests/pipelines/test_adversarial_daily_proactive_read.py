"""Adversarial checks of the daily jobs (docs/spec.md §8), `proactive_read` / `proactive_resolve` (§13.2)
and two refresh guarantees (§13.1): what a hand-edited or damaged file, an odd date or a symbolic link
does, and that bad input gets a clear answer and leaves every file as it was.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from tests.pipelines.conftest import scripted
from tests.pipelines.port_jobs import MakePortApp, PortApp, port_app_fixture  # noqa: F401  (the fixture)
from tests.pipelines.proactive_helpers import found, load_yaml, plan_for, reply, snapshot, write_note

from reme import ReMe
from reme.pipelines.proactive.calls import ModelCalls
from reme.pipelines.proactive.topics import topic_id

DAY, NEXT = "2026-06-20", "2026-06-21"
KYOTO = f"daily/{DAY}/trip.md"
LATER = f"daily/{NEXT}/notes.md"
TRUTH = "daily/_proactive.yaml"
INTERESTS = f"daily/{DAY}/interests.yaml"


def during_the_run(monkeypatch: pytest.MonkeyPatch, after_stage: str, edit: Callable[[], None]) -> None:
    """`edit` runs once the model has answered `after_stage`: a person saving a file mid-run."""
    ask = ModelCalls.ask

    async def ask_then_edit(self: ModelCalls, stage: str, *args: Any, **kwargs: Any) -> Any:
        answer = await ask(self, stage, *args, **kwargs)
        if stage == after_stage:
            edit()
        return answer

    monkeypatch.setattr(ModelCalls, "ask", ask_then_edit)


async def read(app: PortApp, **params: object) -> Any:
    return await app.run("proactive_read", **params)


# leftover (a): a linked note that is a symbolic link into metadata/ ------------------------------------


async def test_a_linked_note_that_is_a_symlink_into_metadata_is_refused(make_port_app: MakePortApp) -> None:
    links = ["digest/wiki/index-copy.md", "digest/wiki/kyoto.md", "digest/aside/notes.md"]
    plans = [plan_for("Kyoto trip", linked_memory=links)]
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO)], plans=plans)}]))
    root = app.workspace_dir
    write_note(root, KYOTO, "Kyoto.\n")
    write_note(root, "digest/wiki/kyoto.md", "# Kyoto\n")
    write_note(root, "metadata/derived.md", "derived state\n")
    os.symlink(root / "metadata/derived.md", root / "digest/wiki/index-copy.md")  # a note-looking name
    os.symlink(root / "metadata", root / "digest/aside")  # a folder that is metadata/
    response = await app.run("proactive_refresh", date=DAY)
    assert response.success, response.answer
    (item,) = load_yaml(root / INTERESTS)["agenda"]
    assert item["linked_memory"] == ["digest/wiki/kyoto.md"]
    dropped = {row["path"]: row["reason"] for row in response.metadata["dropped_links"]}
    assert set(dropped) == {"digest/wiki/index-copy.md", "digest/aside/notes.md"}
    assert "metadata/derived.md" in dropped["digest/wiki/index-copy.md"]
    assert "metadata/" in dropped["digest/aside/notes.md"]


# leftover (b): a topic edited during the run is checked against the push rules again ----------------


async def two_topics(app: PortApp) -> None:
    """A first refresh leaves Kyoto and Tax open; the next day's notes name both again."""
    app.set_script({"output": reply([found("Kyoto trip", KYOTO), found("Tax return", KYOTO)])})
    write_note(app.workspace_dir, KYOTO, "Kyoto; tax.\n")
    assert (await app.run("proactive_refresh", date=DAY)).success
    write_note(app.workspace_dir, LATER, "Kyoto ryokan; tax forms.\n")
    topics = [found("Kyoto trip", LATER, confidence=0.7), found("Tax return", LATER, confidence=0.6)]
    app.set_script({"output": reply(topics)})


def edit_tax(app: PortApp, change: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
    truth_file = app.workspace_dir / TRUTH

    def person_edits() -> None:
        data = load_yaml(truth_file)
        for topic in data["topics"]:
            if topic["title"] == "Tax return":
                change(topic)
        truth_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")

    return person_edits


async def test_a_topic_whose_confidence_is_lowered_during_the_run_is_not_pushed(
    make_port_app: MakePortApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_port_app(**scripted([{"text": "set below"}]))
    await two_topics(app)
    during_the_run(monkeypatch, "agenda", edit_tax(app, lambda t: t.update(confidence=0.1)))
    response = await app.run("proactive_refresh", date=NEXT)
    assert response.success, response.answer
    tax = topic_id("Tax return")
    assert response.metadata["pushed"] == [topic_id("Kyoto trip")]
    interests = load_yaml(app.workspace_dir / f"daily/{NEXT}/interests.yaml")
    assert [t["title"] for t in interests["topics"]] == ["Kyoto trip"]
    assert [a["topic_id"] for a in interests["agenda"]] == [topic_id("Kyoto trip")]
    (held,) = [s for s in interests["suppressed"] if s["id"] == tax]
    assert held["reason"].startswith("low confidence: 0.10 < 0.50") and "edited" in held["reason"]
    (kept,) = [t for t in load_yaml(app.workspace_dir / TRUTH)["topics"] if t["title"] == "Tax return"]
    assert kept["confidence"] == 0.1  # the person's entry stays as they wrote it


async def test_a_topic_whose_evidence_is_moved_out_of_the_window_during_the_run_is_not_pushed(
    make_port_app: MakePortApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_port_app(**scripted([{"text": "set below"}]))
    await two_topics(app)

    def stale(topic: dict[str, Any]) -> None:
        topic.update(last_evidence_at="2026-01-02", paths=["daily/2026-01-02/gone.md"])

    during_the_run(monkeypatch, "plan", edit_tax(app, stale))
    response = await app.run("proactive_refresh", date=NEXT)
    assert response.success, response.answer
    assert response.metadata["pushed"] == [topic_id("Kyoto trip")]
    interests = load_yaml(app.workspace_dir / f"daily/{NEXT}/interests.yaml")
    (held,) = [s for s in interests["suppressed"] if s["id"] == topic_id("Tax return")]
    assert "carry_forward_days" in held["reason"] and "edited" in held["reason"]


# proactive_read of a hand-edited or damaged file --------------------------------------------------


async def test_an_agenda_entry_with_a_list_for_topic_id_is_left_out_not_a_crash(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app()
    write_note(
        app.workspace_dir,
        INTERESTS,
        "version: 2\ntopics:\n- {title: Kyoto trip, confidence: 0.9}\n"
        f"agenda:\n- {{topic_id: [1, 2]}}\n- {{topic_id: {{a: 1}}}}\n- {{topic_id: {topic_id('Kyoto trip')}}}\n",
    )
    before = snapshot(app.workspace_dir)
    response = await read(app, date=DAY)
    assert response.success, response.answer
    assert [a["topic_id"] for a in response.metadata["agenda"]] == [topic_id("Kyoto trip")]
    assert snapshot(app.workspace_dir) == before


async def test_a_wide_read_on_the_first_calendar_days_is_not_a_crash(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    write_note(
        app.workspace_dir,
        TRUTH,
        "topics:\n- {title: Old times, confidence: 0.9, last_evidence_at: 0001-01-02, "
        "paths: [daily/0001-01-02/a.md]}\n",
    )
    response = await read(app, date="0001-01-03", horizon_days=30)
    assert response.success, response.answer
    assert [t["title"] for t in response.metadata["topics"]] == ["Old times"]


async def test_duplicate_ids_and_untitled_entries_are_left_out_and_named(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    kyoto = topic_id("Kyoto trip")
    write_note(
        app.workspace_dir,
        INTERESTS,
        "version: 2\ntopics:\n"
        f"- {{id: {kyoto}, title: Kyoto trip, confidence: 0.9}}\n"
        "- {reason: the title was deleted by hand, confidence: 0.9}\n"
        f"- {{id: {kyoto}, title: Kyoto trip copy, confidence: 0.8}}\n"
        "- {title: KYOTO  trip!, confidence: 0.7}\n"
        f"agenda:\n- {{topic_id: {kyoto}, opener: first}}\n- {{topic_id: {kyoto}, opener: second}}\n",
    )
    before = snapshot(app.workspace_dir)
    response = await read(app, date=DAY)
    assert response.success, response.answer
    assert [(t["id"], t["title"]) for t in response.metadata["topics"]] == [(kyoto, "Kyoto trip")]
    assert [a["opener"] for a in response.metadata["agenda"]] == ["first"]
    left_out = response.metadata["left_out"]
    assert [(row["entry"], row["title"]) for row in left_out] == [
        (2, None),
        (3, "Kyoto trip copy"),
        (4, "KYOTO  trip!"),
    ]
    assert left_out[0]["reason"].startswith("no title")
    assert all(row["reason"].startswith("duplicate id") for row in left_out[1:])
    assert response.answer["left_out"] == left_out and response.metadata["summary"] == (
        f"Read 1 proactive topic(s) from {INTERESTS}"
    )
    assert snapshot(app.workspace_dir) == before


async def test_a_truth_source_with_one_topic_twice_is_refused_by_read_resolve_and_refresh(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO)])}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    write_note(
        app.workspace_dir,
        TRUTH,
        "topics:\n"
        f"- {{title: Kyoto trip, confidence: 0.9, last_evidence_at: {DAY}, paths: [{KYOTO}]}}\n"
        f"- {{title: kyoto TRIP, confidence: 0.2, last_evidence_at: {DAY}, paths: [{KYOTO}], note: mine}}\n",
    )
    before = snapshot(app.workspace_dir)
    wide = await read(app, date=DAY, horizon_days=7)
    assert not wide.success and wide.answer.startswith("Error:")
    assert topic_id("Kyoto trip") in wide.answer and "kyoto TRIP" in wide.answer
    resolved = await app.run("proactive_resolve", topic_id=topic_id("Kyoto trip"))
    assert not resolved.success and TRUTH in resolved.answer and "proactive_rebuild" in resolved.answer
    refreshed = await app.run("proactive_refresh", date=DAY)
    assert not refreshed.success and topic_id("Kyoto trip") in refreshed.answer
    assert snapshot(app.workspace_dir) == before


async def test_resolve_says_when_it_cut_the_reason(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    write_note(
        app.workspace_dir,
        TRUTH,
        f"topics:\n- {{title: Kyoto trip, last_evidence_at: {DAY}, paths: [{KYOTO}]}}\n",
    )
    response = await app.run("proactive_resolve", topic_id=topic_id("Kyoto trip"), reason="booked " * 250)
    assert response.success, response.answer
    (tombstone,) = load_yaml(app.workspace_dir / TRUTH)["resolved"]
    assert len(tombstone["reason"]) == 500 and "reason cut to 500 characters" in response.answer


# daily jobs ---------------------------------------------------------------------------------------


async def test_a_card_that_is_a_symlink_outside_the_notes_is_not_a_card(app: ReMe, tmp_path: Any) -> None:
    root = app.workspace_dir
    day = "2026-03-05"
    write_note(root, f"daily/{day}/real.md", "---\nname: Real card\n---\nbody\n")
    write_note(root, "metadata/derived.md", "---\nname: derived\n---\n")
    outside = tmp_path / "outside.md"
    outside.write_text("---\nname: outside\n---\n", encoding="utf-8")
    os.symlink(root / "metadata/derived.md", root / f"daily/{day}/derived.md")
    os.symlink(outside, root / f"daily/{day}/outside.md")
    os.symlink(root / f"daily/{day}/real.md", root / f"daily/{day}/alias.md")  # inside the notes: a card
    listed = await app.run("daily_list", date=day)
    assert listed.success, listed.answer
    assert [n["path"] for n in listed.metadata["notes"]] == [f"daily/{day}/alias.md", f"daily/{day}/real.md"]
    reindexed = await app.run("daily_reindex", date=day)
    assert reindexed.success and reindexed.metadata["count"] == 2
    page = (root / f"daily/{day}.md").read_text(encoding="utf-8")
    assert "derived.md" not in page and "outside.md" not in page


async def test_a_date_folder_that_is_a_symlink_into_metadata_lists_no_cards(app: ReMe) -> None:
    root = app.workspace_dir
    day = "2026-03-06"
    write_note(root, "metadata/derived.md", "---\nname: derived\n---\n")
    (root / "daily").mkdir(exist_ok=True)
    os.symlink(root / "metadata", root / f"daily/{day}")
    listed = await app.run("daily_list", date=day)
    assert listed.success and listed.metadata["notes"] == []


async def test_an_unreadable_truth_source_does_not_fail_the_days_read(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    write_note(app.workspace_dir, INTERESTS, "topics:\n- {title: Kyoto trip, confidence: 0.9}\n")
    (app.workspace_dir / TRUTH).write_bytes(b"\x00\x01 not text")
    before = snapshot(app.workspace_dir)
    response = await read(app, date=DAY)
    assert response.success, response.answer
    assert [t["title"] for t in response.metadata["topics"]] == ["Kyoto trip"]
    assert snapshot(app.workspace_dir) == before


async def test_a_hand_written_infinite_or_nan_number_reads_as_json(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    write_note(
        app.workspace_dir,
        INTERESTS,
        "topics:\n- {title: Kyoto trip, confidence: .inf, weight: .nan}\n- {title: Tax, confidence: 7}\n",
    )
    response = await read(app, date=DAY)
    assert response.success, response.answer
    shown = {t["title"]: t for t in response.metadata["topics"]}
    assert shown["Kyoto trip"]["confidence"] == 0.5 and shown["Tax"]["confidence"] == 1.0
    json.dumps(response.metadata, allow_nan=False)  # strict JSON, as an HTTP client parses it

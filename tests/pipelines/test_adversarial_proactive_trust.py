"""Proactive refresh against a verbose model and a person editing its files (docs/spec.md §13.1, §14).

A refresh keeps its work when the model says too much, links an agenda only to the workspace's
notes, and never overwrites what a person wrote to the proactive files while it was running.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml
from tests.pipelines.conftest import scripted
from tests.pipelines.port_jobs import MakePortApp, PortApp, port_app_fixture  # noqa: F401  (the fixture)
from tests.pipelines.proactive_helpers import found, load_yaml, plan_for, reply, write_note

from reme.pipelines.proactive.calls import MAX_FOUND, ModelCalls
from reme.pipelines.proactive.topics import topic_id

DAY, NEXT = "2026-06-20", "2026-06-21"
KYOTO = f"daily/{DAY}/trip.md"
LATER = f"daily/{NEXT}/notes.md"
TRUTH = "daily/_proactive.yaml"


async def refresh(app: PortApp, day: str) -> Any:
    return await app.run("proactive_refresh", date=day)


def during_the_run(monkeypatch: pytest.MonkeyPatch, after_stage: str, edit: Callable[[], None]) -> None:
    """`edit` runs once the model has answered `after_stage`: a person saving a file mid-run."""
    ask = ModelCalls.ask

    async def ask_then_edit(self: ModelCalls, stage: str, *args: Any, **kwargs: Any) -> Any:
        answer = await ask(self, stage, *args, **kwargs)
        if stage == after_stage:
            edit()
        return answer

    monkeypatch.setattr(ModelCalls, "ask", ask_then_edit)


# a verbose model ----------------------------------------------------------------------------------


async def test_more_topics_than_the_cap_keep_the_most_confident_and_report_the_rest(
    make_port_app: MakePortApp,
) -> None:
    count = MAX_FOUND + 5
    topics = [found(f"Topic number {n}", KYOTO, confidence=round(0.5 + n / 100, 2)) for n in range(count)]
    app = make_port_app(**scripted([{"output": reply(topics, plans=[])}]))
    write_note(app.workspace_dir, KYOTO, "Many threads today.\n")
    response = await refresh(app, DAY)
    assert response.success, response.answer
    truth = load_yaml(app.workspace_dir / TRUTH)
    kept = {f"Topic number {n}" for n in range(5, count)}  # the five least confident are left out
    assert {t["title"] for t in truth["topics"]} == kept
    left_out = [s for s in response.metadata["suppressed"] if s["reason"].startswith("left out")]
    assert [s["title"] for s in left_out] == [f"Topic number {n}" for n in range(5)]
    assert left_out[0]["id"] == topic_id("Topic number 0")
    assert (
        f"{count} topics proposed" in left_out[0]["reason"]
        and f"{MAX_FOUND} most confident" in left_out[0]["reason"]
    )
    assert "Topic number 0 — left out" in response.answer
    interests = load_yaml(app.workspace_dir / f"daily/{DAY}/interests.yaml")
    assert len(interests["topics"]) == 10  # max_topics
    assert [s for s in interests["suppressed"] if s["reason"].startswith("left out")] == left_out


async def test_overlong_fields_and_lists_are_cut_not_a_failed_run(make_port_app: MakePortApp) -> None:
    topic = found("Kyoto trip", KYOTO, *[f"daily/{DAY}/n{i}.md" for i in range(30)], reason="r" * 5000)
    plan = plan_for("Kyoto trip", opener="o" * 900, preconditions=[f"p{i}" for i in range(25)])
    app = make_port_app(**scripted([{"output": reply([topic], plans=[plan])}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    response = await refresh(app, DAY)
    assert response.success, response.answer
    (saved,) = load_yaml(app.workspace_dir / TRUTH)["topics"]
    assert saved["reason"] == "r" * 1000 and saved["paths"] == [KYOTO]
    (item,) = load_yaml(app.workspace_dir / f"daily/{DAY}/interests.yaml")["agenda"]
    assert item["opener"] == "o" * 500 and item["preconditions"] == [f"p{i}" for i in range(10)]


# linked memory ------------------------------------------------------------------------------------


async def test_linked_memory_takes_only_the_workspaces_notes(make_port_app: MakePortApp) -> None:
    notes = ["digest/wiki/kyoto.md", KYOTO]
    others = [
        "metadata/proactive.json",
        "metadata/notes.md",
        ".git/config",
        ".git/description.md",
        "digest/.obsidian/workspace.md",
        "session/dialog/s1.jsonl",
    ]
    plans = [plan_for("Kyoto trip", linked_memory=[others[0], notes[0], *others[1:], notes[1]])]
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO)], plans=plans)}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    for path in [notes[0], *others]:
        write_note(app.workspace_dir, path, "exists\n")
    response = await refresh(app, DAY)
    assert response.success, response.answer
    (item,) = load_yaml(app.workspace_dir / f"daily/{DAY}/interests.yaml")["agenda"]
    assert item["linked_memory"] == notes
    dropped = {row["path"]: row["reason"] for row in response.metadata["dropped_links"]}
    assert list(dropped) == others
    assert "metadata/" in dropped["metadata/notes.md"] and ".git/" in dropped[".git/description.md"]
    assert dropped["session/dialog/s1.jsonl"] == "not a Markdown note"


# a person's edits during the run ------------------------------------------------------------------


async def two_topics(app: PortApp) -> None:
    """A first refresh leaves Kyoto and Tax open; the next day's notes name both again."""
    app.set_script({"output": reply([found("Kyoto trip", KYOTO), found("Tax return", KYOTO)])})
    write_note(app.workspace_dir, KYOTO, "Kyoto; tax.\n")
    assert (await refresh(app, DAY)).success
    write_note(app.workspace_dir, LATER, "Kyoto ryokan; tax forms.\n")
    topics = [found("Kyoto trip", LATER, confidence=0.7), found("Tax return", LATER, confidence=0.6)]
    app.set_script({"output": reply(topics)})


async def test_a_hand_edit_to_the_truth_source_during_the_run_is_kept(
    make_port_app: MakePortApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_port_app(**scripted([{"text": "set below"}]))
    await two_topics(app)
    truth_file = app.workspace_dir / TRUTH

    def person_edits() -> None:
        text = truth_file.read_text(encoding="utf-8")
        text = text.replace("the notes keep coming back to Tax return", "waiting for the accountant")
        text = text.replace("topics:\n", f"topics:\n- {{title: Garden, paths: [{KYOTO}], owner: me}}\n", 1)
        truth_file.write_text(text, encoding="utf-8")

    during_the_run(monkeypatch, "plan", person_edits)
    response = await refresh(app, NEXT)
    assert response.success, response.answer
    by_title = {t["title"]: t for t in load_yaml(truth_file)["topics"]}
    assert set(by_title) == {"Kyoto trip", "Tax return", "Garden"}
    tax = by_title["Tax return"]
    assert tax["reason"] == "waiting for the accountant" and tax["paths"] == [KYOTO]  # the person's entry
    assert by_title["Garden"]["owner"] == "me"
    kyoto = by_title["Kyoto trip"]
    assert kyoto["paths"] == [LATER, KYOTO] and kyoto["confidence"] == 0.7  # the run's own work stands
    (edit,) = response.metadata["edits_during_run"]
    assert edit["path"] == TRUTH and topic_id("Tax return") in edit["reason"]
    assert topic_id("Garden") in edit["reason"] and TRUTH in response.answer
    interests = load_yaml(app.workspace_dir / f"daily/{NEXT}/interests.yaml")
    shown = {t["title"]: t["reason"] for t in interests["topics"]}
    assert shown["Tax return"] == "waiting for the accountant"


async def test_a_topic_deleted_by_hand_during_the_run_stays_deleted(
    make_port_app: MakePortApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_port_app(**scripted([{"text": "set below"}]))
    await two_topics(app)
    truth_file = app.workspace_dir / TRUTH

    def person_deletes_tax() -> None:
        data = load_yaml(truth_file)
        data["topics"] = [t for t in data["topics"] if t["title"] != "Tax return"]
        truth_file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")

    during_the_run(monkeypatch, "agenda", person_deletes_tax)
    response = await refresh(app, NEXT)
    assert response.success, response.answer
    (kyoto,) = load_yaml(truth_file)["topics"]
    assert kyoto["title"] == "Kyoto trip" and kyoto["paths"] == [
        LATER,
        KYOTO,
    ]  # the run's work on the rest stands
    tax = topic_id("Tax return")
    assert tax not in response.metadata["pushed"]
    interests = load_yaml(app.workspace_dir / f"daily/{NEXT}/interests.yaml")
    assert [a["topic_id"] for a in interests["agenda"]] == [topic_id("Kyoto trip")]
    assert {
        "id": tax,
        "title": "Tax return",
        "reason": f"removed from {TRUTH} during the refresh",
    } in interests["suppressed"]


async def test_a_hand_edit_to_the_days_interests_during_the_run_is_not_overwritten(
    make_port_app: MakePortApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_port_app(**scripted([{"output": reply([found("Kyoto trip", KYOTO)])}]))
    write_note(app.workspace_dir, KYOTO, "Kyoto.\n")
    assert (await refresh(app, DAY)).success
    interests = app.workspace_dir / f"daily/{DAY}/interests.yaml"
    write_note(app.workspace_dir, f"daily/{DAY}/more.md", "Tax forms too.\n")
    app.set_script(
        {"output": reply([found("Kyoto trip", KYOTO), found("Tax return", f"daily/{DAY}/more.md")])}
    )
    mine = interests.read_text(encoding="utf-8").replace("push: true", "push: false  # not today, thanks")
    during_the_run(monkeypatch, "extract", lambda: interests.write_text(mine, encoding="utf-8"))
    response = await refresh(app, DAY)
    assert response.success, response.answer
    assert interests.read_text(encoding="utf-8") == mine
    assert response.answer.startswith(f"Kept daily/{DAY}/interests.yaml")
    assert [e["path"] for e in response.metadata["edits_during_run"]] == [f"daily/{DAY}/interests.yaml"]
    truth = load_yaml(app.workspace_dir / TRUTH)  # the truth source still takes the run's work
    assert {t["title"] for t in truth["topics"]} == {"Kyoto trip", "Tax return"}

"""Proactive's known-topic check (docs/spec.md §13.1) with vectors on: embedding cosine against the threshold
calibrated for the model; lexical similarity when vectors are off or the model is not calibrated."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("numpy", reason="vectors need numpy (pip install 'reme[vectors]')")

from tests.embedders import hashed_words_backend, vector_overrides  # noqa: E402
from tests.pipelines.conftest import MakeApp, scripted  # noqa: E402
from tests.pipelines.proactive_helpers import found, load_yaml, reply, write_note  # noqa: E402

from reme import ReMe  # noqa: E402
from reme.pipelines.port import Embeddings  # noqa: E402
from reme.pipelines.proactive import merge as proactive_merge  # noqa: E402
from reme.pipelines.proactive.merge import TopicRules, title_similarity  # noqa: E402
from reme.pipelines.proactive.topics import similarity, topic_id  # noqa: E402

FIRST, LATER = "daily/2026-06-20/a.md", "daily/2026-06-21/b.md"


@pytest.fixture(autouse=True)
def backend():
    with hashed_words_backend():
        yield


def set_script(app: ReMe, *turns: dict[str, Any]) -> None:
    app.component("llm").script = list(turns)  # type: ignore[attr-defined]


async def two_runs(app: ReMe) -> tuple[Any, list[str]]:
    """Day 1 finds "Learn to unwind"; day 2 the same topic reworded, "Learn to relax"."""
    write_note(app.workspace_dir, FIRST, "Trying to unwind more.\n")
    assert (await app.run("proactive_refresh", date="2026-06-20")).success
    write_note(app.workspace_dir, LATER, "Still learning to relax.\n")
    set_script(app, {"output": reply([found("Learn to relax", LATER)], plans=[])})
    response = await app.run("proactive_refresh", date="2026-06-21")
    assert response.success, response.answer
    truth = load_yaml(app.workspace_dir / "daily/_proactive.yaml")
    return response, [t["title"] for t in truth["topics"]]


def test_the_titles_are_lexically_different() -> None:
    assert similarity("Learn to unwind", "Learn to relax") < TopicRules().lexical_threshold


async def test_with_vectors_on_a_reworded_topic_continues_the_known_one(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(proactive_merge.CALIBRATED_THRESHOLDS, "hashed-v1@512", 0.9)
    app = await make_app(
        **scripted([{"output": reply([found("Learn to unwind", FIRST)])}]), **vector_overrides()
    )
    response, titles = await two_runs(app)
    assert titles == ["Learn to unwind"]  # one topic, its first title and id kept
    assert response.metadata["pushed"] == [topic_id("Learn to unwind")]
    assert response.metadata["topic_similarity"] == "embedding hashed-v1@512 ≥ 0.9"


async def test_an_uncalibrated_model_falls_back_to_lexical(make_app: MakeApp) -> None:
    app = await make_app(
        **scripted([{"output": reply([found("Learn to unwind", FIRST)])}]), **vector_overrides()
    )
    response, titles = await two_runs(app)
    assert sorted(titles) == ["Learn to relax", "Learn to unwind"]  # two topics: the titles share too little
    assert (
        response.metadata["topic_similarity"] == "lexical (no known_threshold calibrated for hashed-v1@512)"
    )


async def test_with_vectors_off_the_check_is_lexical(make_app: MakeApp) -> None:
    app = await make_app(**scripted([{"output": reply([found("Learn to unwind", FIRST)])}]))
    response, titles = await two_runs(app)
    assert sorted(titles) == ["Learn to relax", "Learn to unwind"]
    assert response.metadata["topic_similarity"] == "lexical"


def test_the_configured_threshold_applies_to_the_model_it_was_calibrated_for() -> None:
    rules = TopicRules(known_threshold=0.5, known_threshold_calibrated_for="m@2")
    embedded = Embeddings("m@2", [[1.0, 0.0], [0.6, 0.8]])
    similar, threshold, used = title_similarity(rules, embedded, ["a", "b"])
    assert threshold == 0.5 and similar("a", "b") == pytest.approx(0.6) and used == "embedding m@2 ≥ 0.5"
    assert title_similarity(rules, None, ["a", "b"])[1:] == (rules.lexical_threshold, "lexical")

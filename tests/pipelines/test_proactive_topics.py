"""Topic ids, lexical sameness, selection bounds and the files' shapes (no application)."""

from __future__ import annotations

from datetime import date

import pytest

from reme.pipelines.proactive.files import TruthSource, parse_interests, parse_truth, render_interests
from reme.pipelines.proactive.merge import MAX_OPEN_TOPICS, Selection, TopicRules, select
from reme.pipelines.proactive.topics import Topic, normalise_title, similarity, topic_id


def test_the_id_is_remes_rule_and_ignores_case_width_and_punctuation() -> None:
    assert topic_id("记忆检索链路的质量回归") == "b2120f3573cb"  # the id in ReMe's own files
    assert normalise_title("  Kyoto—Trip!! (June) ") == "kyoto trip june"
    variants = ["Kyoto trip", "KYOTO TRIP", "kyoto_trip", "Kyoto, trip.", "Ｋｙｏｔｏ　ｔｒｉｐ"]
    assert {topic_id(v) for v in variants} == {topic_id("kyoto trip")}
    assert topic_id("Kyoto trip") != topic_id("Tokyo trip")


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("记忆检索链路的质量回归", "记忆检索链路质量回归", True),
        ("Book flights to Tokyo", "Book flights to Kyoto", False),
        ("Release checklist for v2", "v2 release checklist", True),
        ("Tax return", "Kyoto trip", False),
    ],
)
def test_lexical_similarity(a: str, b: str, same: bool) -> None:
    assert (similarity(a, b) >= TopicRules().lexical_threshold) is same


def topic(title: str, confidence: float, last: str = "2026-06-20") -> Topic:
    return Topic(
        topic_id(title),
        title,
        confidence=confidence,
        first_seen=last,
        last_evidence_at=last,
        paths=(f"daily/{last}/a.md",),
    )


def test_selection_pushes_at_most_max_topics_by_confidence_then_recency() -> None:
    truth = TruthSource(
        {t.id: t for t in [topic("a", 0.6), topic("b", 0.9), topic("c", 0.6, "2026-06-19"), topic("d", 0.2)]}
    )
    selection = Selection()
    select(
        truth,
        day=date(2026, 6, 20),
        rules=TopicRules(max_topics=2),
        exists=lambda p: True,
        selection=selection,
    )
    assert [t.title for t in selection.candidates] == ["b", "a"]
    assert [(s["title"], s["reason"]) for s in selection.suppressed] == [
        ("c", "over max_topics (2)"),
        ("d", "low confidence: 0.20 < 0.50"),
    ]
    assert set(truth.topics) == {topic_id(x) for x in "abcd"}  # held back, not forgotten


def test_topics_whose_evidence_files_are_gone_are_dropped() -> None:
    truth = TruthSource({t.id: t for t in [topic("a", 0.9), topic("b", 0.9)]})
    selection = Selection()
    gone = "daily/2026-06-20/a.md"
    kept = Topic(
        topic_id("b"),
        "b",
        confidence=0.9,
        last_evidence_at="2026-06-20",
        paths=(gone, "daily/2026-06-20/b.md"),
    )
    truth.topics[kept.id] = kept
    select(truth, day=date(2026, 6, 20), rules=TopicRules(), exists=lambda p: p != gone, selection=selection)
    assert list(truth.topics) == [kept.id] and truth.topics[kept.id].paths == ("daily/2026-06-20/b.md",)
    assert selection.expired == [topic_id("a")]


def test_render_then_parse_round_trips_in_the_spec_shape() -> None:
    text = render_interests("2026-06-20", "2026-06-20T18:00:00+08:00", [topic("Kyoto", 0.86)], [], [])
    assert text.startswith(
        "version: 2\ndate: 2026-06-20\ngenerated_at: 2026-06-20T18:00:00+08:00\npush: true\n"
    )
    parsed = parse_interests(text, "x")
    assert parsed.version == 2 and parsed.topics[0]["first_seen"] == "2026-06-20" and parsed.agenda == []
    truth = TruthSource({t.id: t for t in [topic("Kyoto", 0.86)]})
    assert parse_truth(truth.render("now"), "x").topics == truth.topics


@pytest.mark.parametrize(
    "text", ["- a\n- b\n", "topics: {a: 1}\n", "topics:\n- {reason: no title}\n", "[oops"]
)
def test_a_malformed_truth_source_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="_proactive.yaml"):
        parse_truth(text, "daily/_proactive.yaml")


def test_the_truth_source_keeps_at_most_max_open_topics() -> None:
    truth = TruthSource(
        {t.id: t for t in (topic(f"topic {n}", n / 1000) for n in range(MAX_OPEN_TOPICS + 5))}
    )
    selection = Selection()
    select(truth, day=date(2026, 6, 20), rules=TopicRules(), exists=lambda p: True, selection=selection)
    assert len(truth.topics) == MAX_OPEN_TOPICS
    assert (
        topic_id("topic 0") not in truth.topics and topic_id(f"topic {MAX_OPEN_TOPICS + 4}") in truth.topics
    )
    assert len(selection.expired) == 5

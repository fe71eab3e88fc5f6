"""proactive_read (docs/spec.md §13.2) over files written by hand in the design document's formats."""

from __future__ import annotations

from tests.pipelines.port_jobs import MakePortApp, port_app_fixture  # noqa: F401  (the fixture)
from tests.pipelines.proactive_helpers import snapshot, write_note

from reme.pipelines.proactive.topics import topic_id

# version 2, exactly as the design document shows it
V2 = """\
version: 2
date: 2026-06-20
generated_at: 2026-06-20T18:00:00+08:00
push: true
topics:
- id: b2120f3573cb
  title: 记忆检索链路的质量回归
  reason: 用户近期持续修改 search、node_search 和 dream 集成链路。
  kind: follow_up
  confidence: 0.86
  first_seen: 2026-06-20
  last_evidence_at: 2026-06-20
  evidence: daily/2026-06-20/session.md
  paths:
  - daily/2026-06-20/session.md
- id: 0123456789ab
  title: A weak hunch
  reason: mentioned once
  kind: interest_extend
  confidence: 0.2
  first_seen: 2026-06-20
  last_evidence_at: 2026-06-20
  evidence: daily/2026-06-20/session.md
  paths: [daily/2026-06-20/session.md]
agenda:
- topic_id: b2120f3573cb
  title: 记忆检索链路的质量回归
  scenario_type: resume_task
  opener: 下次发布前先回顾最近的检索回归。
  next_action: 对比失败查询与上一个索引快照。
  preconditions: []
  delivery: in_conversation
  linked_memory: []
  order_reason: 证据较新且下一步明确。
- topic_id: 0123456789ab
  title: A weak hunch
  scenario_type: extend_interest
  opener: maybe
  next_action: ask
  preconditions: []
  delivery: in_conversation
  linked_memory: []
  order_reason: weak
suppressed: []
"""

# version 1: no version, topics with title, reason, evidence, keywords, paths
V1 = """\
date: 2026-06-19
topics:
  - title: Kyoto trip
    reason: The user is booking a trip to Kyoto.
    evidence: "Booking Kyoto for June 29, window seat."
    keywords: [kyoto, travel]
    paths: [daily/2026-06-19/trip.md]
  - reason: a topic without a title is not a topic
  - just a string
"""


async def read(app, **params):
    return await app.run("proactive_read", **params)


async def test_a_version_2_file_reads_with_its_agenda_filtered_like_its_topics(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app()
    write_note(app.workspace_dir, "daily/2026-06-20/interests.yaml", V2)
    before = snapshot(app.workspace_dir)
    response = await read(app, date="2026-06-20")
    assert response.success, response.answer
    answer = response.answer
    assert answer["summary"] == "Read 1 proactive topic(s) from daily/2026-06-20/interests.yaml"
    assert answer["topics"] == [
        {
            "id": "b2120f3573cb",
            "title": "记忆检索链路的质量回归",
            "reason": "用户近期持续修改 search、node_search 和 dream 集成链路。",
            "kind": "follow_up",
            "confidence": 0.86,
            "first_seen": "2026-06-20",
            "last_evidence_at": "2026-06-20",
            "evidence": "daily/2026-06-20/session.md",
            "paths": ["daily/2026-06-20/session.md"],
        }
    ]
    assert [a["topic_id"] for a in answer["agenda"]] == ["b2120f3573cb"]
    assert answer["agenda"][0]["opener"] == "下次发布前先回顾最近的检索回归。"
    assert answer["content"] == V2
    meta = response.metadata
    assert (meta["date"], meta["path"], meta["skipped"], meta["error"]) == (
        "2026-06-20",
        "daily/2026-06-20/interests.yaml",
        False,
        None,
    )
    assert meta["topics"] == answer["topics"] and meta["agenda"] == answer["agenda"]
    assert snapshot(app.workspace_dir) == before  # a read writes nothing
    everything = await read(app, date="2026-06-20", min_confidence=0, include_content=False)
    assert [t["id"] for t in everything.answer["topics"]] == ["b2120f3573cb", "0123456789ab"]
    assert len(everything.answer["agenda"]) == 2
    assert "content" not in everything.answer and "content" not in everything.metadata


async def test_a_version_1_file_reads_with_computed_ids_and_default_confidence(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app()
    write_note(app.workspace_dir, "daily/2026-06-19/interests.yaml", V1)
    response = await read(app, date="2026-06-19", include_content=False)
    assert response.success, response.answer
    assert response.answer["topics"] == [
        {
            "id": topic_id("Kyoto trip"),
            "title": "Kyoto trip",
            "reason": "The user is booking a trip to Kyoto.",
            "evidence": "Booking Kyoto for June 29, window seat.",
            "keywords": ["kyoto", "travel"],
            "paths": ["daily/2026-06-19/trip.md"],
            "confidence": 0.5,
        }
    ]
    assert "agenda" not in response.answer and "agenda" not in response.metadata
    assert (await read(app, date="2026-06-19", min_confidence=0.6)).answer["topics"] == []


async def test_a_missing_file_is_a_skipped_read(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    response = await read(app, date="2026-06-20")
    assert response.success
    assert response.answer == "Skipped: interests file not found at daily/2026-06-20/interests.yaml"
    assert response.metadata["skipped"] is True and response.metadata["topics"] == []


async def test_unparsable_yaml_is_an_error(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    write_note(app.workspace_dir, "daily/2026-06-20/interests.yaml", "topics: [unclosed\n")
    response = await read(app, date="2026-06-20")
    assert not response.success
    assert response.answer.startswith("Error: daily/2026-06-20/interests.yaml is not valid YAML at line 2")
    assert response.metadata["error"] and response.metadata["topics"] == []


async def test_a_valid_file_without_valid_topics_reads_empty(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    for text in ("version: 2\ntopics: nope\n", "just a sentence\n", "", "topics:\n  - {reason: untitled}\n"):
        write_note(app.workspace_dir, "daily/2026-06-20/interests.yaml", text)
        response = await read(app, date="2026-06-20")
        assert response.success, (text, response.answer)
        assert response.answer["topics"] == [] and response.answer["summary"].startswith("Read 0 proactive")


async def test_resolved_topics_are_left_out(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    write_note(app.workspace_dir, "daily/2026-06-20/interests.yaml", V2)
    write_note(
        app.workspace_dir,
        "daily/_proactive.yaml",
        "version: 1\ntopics: []\nresolved:\n- {id: b2120f3573cb, title: 记忆检索链路的质量回归, resolved_at: 2026-06-20}\n",
    )
    response = await read(app, date="2026-06-20", min_confidence=0)
    assert [t["id"] for t in response.answer["topics"]] == ["0123456789ab"]
    assert [a["topic_id"] for a in response.answer["agenda"]] == ["0123456789ab"]


async def test_a_wider_horizon_reads_the_open_topics_of_the_truth_source(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    truth = """\
version: 1
topics:
- {id: aaaaaaaaaaaa, title: Recent, confidence: 0.9, last_evidence_at: 2026-06-19, paths: [daily/2026-06-19/a.md]}
- {title: Older, confidence: 0.9, last_evidence_at: 2026-06-10, paths: [daily/2026-06-10/a.md]}
- {title: Faint, confidence: 0.1, last_evidence_at: 2026-06-20, paths: [daily/2026-06-20/a.md]}
resolved: []
"""
    write_note(app.workspace_dir, "daily/_proactive.yaml", truth)
    response = await read(app, date="2026-06-20", horizon_days=7, include_content=False)
    assert response.success, response.answer
    assert response.answer["path"] == "daily/_proactive.yaml"
    assert [t["title"] for t in response.answer["topics"]] == ["Recent"]
    assert response.answer["topics"][0]["id"] == topic_id("Recent")
    assert "agenda" not in response.answer
    wide = await read(app, date="2026-06-20", horizon_days=30, include_content=False)
    assert [t["title"] for t in wide.answer["topics"]] == ["Recent", "Older"]


async def test_bad_parameters_are_refused(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    for params, expected in (
        ({"date": "20-06-2026"}, "date must be YYYY-MM-DD"),
        ({"horizon_days": 0}, "minimum"),
        ({"min_confidence": 2}, "maximum"),
        ({"days": 3}, "unknown parameter"),
    ):
        response = await read(app, **params)
        assert not response.success and expected in response.answer, (params, response.answer)


async def test_yaml_aliases_are_refused_not_expanded(make_port_app: MakePortApp) -> None:
    app = make_port_app()
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\ntopics: [*b, *b, *b]\n"
    write_note(app.workspace_dir, "daily/2026-06-20/interests.yaml", bomb)
    response = await read(app, date="2026-06-20")
    assert not response.success and "aliases (*name) are not allowed" in response.answer

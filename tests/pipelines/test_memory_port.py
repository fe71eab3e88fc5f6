"""The ports as pipelines see them, on `AppPort` and on the in-memory port alike: typed values, typed
refusals, the same files on disk. Plus what only the in-memory port has (tool calls checked against the
job schemas) and the validation of run records read back."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.pipelines.dream_support import CARD, CARD_TEXT, NODE, body, put

from reme import ReMe
from reme.app.port import AppPort
from reme.errors import Conflict, ReMeError
from reme.pipelines.journal.records import Modified, RunRecord, parse_record, record_text
from reme.pipelines.port import Committed, DigestRun, NodeHit
from reme.testing.memory_port import InMemoryPort
from reme.workspace.edges import ConservationViolation
from reme.workspace.transaction import Change

OTHER = "digest/wiki/outage-review.md"


@pytest.fixture(params=["app", "memory"])
async def port(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[DigestRun]:
    ws = tmp_path / "ws"
    if request.param == "memory":
        yield InMemoryPort(ws)
        return
    async with ReMe(workspace_dir=ws, timezone="UTC") as app:
        yield AppPort(app)


async def test_digest_writes_are_typed_and_refusals_tell_their_kind(port: DigestRun, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    put(ws, CARD, CARD_TEXT)
    written = await port.write_node(OTHER, body(CARD), description="The outage.")
    assert written.path == OTHER and "name: outage-review" in written.content
    linked = await port.write_node(NODE, body(CARD, text=f"Weekly, see [[{OTHER}]]."), description="Cadence.")
    with pytest.raises(ReMeError, match="already exists"):
        await port.write_node(NODE, body(CARD), description="Again.")
    with pytest.raises(ConservationViolation) as lost:
        await port.edit_node(NODE, f", see [[{OTHER}]]", "", expected_sha256=linked.sha256)
    assert lost.value.metadata["missing_edges"] == [{"target": OTHER, "predicate": None}]
    with pytest.raises(Conflict):
        await port.edit_node(NODE, "Weekly", "Every week", expected_sha256=written.sha256)
    edited = await port.edit_node(NODE, "Weekly", "Every week", expected_sha256=linked.sha256)
    assert "Every week" in edited.content and (ws / NODE).read_text(encoding="utf-8") == edited.content

    hits = await port.node_search("every week outage", limit=5)
    assert hits and all(isinstance(hit, NodeHit) for hit in hits) and {h.path for h in hits} <= {NODE, OTHER}
    around = await port.traverse([NODE], depth=1)
    assert any(edge.source == NODE and edge.resolved == OTHER for edge in around.edges)
    assert {node.path for node in around.nodes} >= {NODE, OTHER}

    done = await port.commit([Change(OTHER, None, written.sha256)])
    assert done == [Committed(OTHER, None, (NODE,))]  # the links still pointing at the deleted node


async def test_tool_calls_are_checked_against_the_job_schema(tmp_path: Path) -> None:
    port = InMemoryPort(tmp_path / "ws")
    put(port.root, CARD, CARD_TEXT)
    bad = await port.run_job("read", path=CARD, colour="red")
    assert not bad.success and "colour" in bad.answer
    read = await port.run_job("read", path=CARD)
    assert read.success and "Release" in read.answer
    missing = await port.run_job("shell", command="ls")
    assert not missing.success and port.tool_calls[-1] == ("shell", {"command": "ls"})


def test_a_run_record_round_trips_and_a_malformed_one_names_its_field() -> None:
    record = RunRecord("20260620T230000-000000-abcdef", "auto_dream", "2026-06-20T23:00:00", ["a", "b"])
    record.modified.append(Modified("digest/wiki/a.md", "0" * 64, "before\n", "1" * 64))
    record.actions.append({"unit": "A", "action": "CREATE", "target_path": "digest/wiki/a.md", "reason": "r"})
    loaded, problem = parse_record(json.loads(record_text(record)))
    assert loaded == record and problem == ""
    for data, words in [
        ({"modified": [{"sha256_after": "0"}]}, "`modified[0].path` is missing"),
        ({"actions": "abc"}, "`actions` is not a list"),
        ({"run_id": 3}, "`run_id` is not text"),
        ({"violations": [{"path": "a", "missing_edges": [{"target": 1}]}]}, "missing_edges[0].target"),
        (["a", "list"], "a JSON list, not a run record object"),
    ]:
        refused, why = parse_record(data)
        assert refused is None and words in why, (data, why)


async def test_every_agent_tool_of_the_pipelines_runs_in_process(tmp_path: Path) -> None:
    port = InMemoryPort(tmp_path / "ws")
    put(port.root, CARD, CARD_TEXT)
    note = "notes/plan.md"
    calls: list[tuple[str, dict[str, object]]] = [
        ("write", {"path": note, "content": "# Plan\n\nShip weekly, see [[weekly-releases]].\n"}),
        ("edit", {"path": note, "old": "Ship weekly", "new": "Ship on Fridays"}),
        ("frontmatter_update", {"path": note, "metadata": {"status": "draft"}}),
        ("frontmatter_read", {"path": note}),
        ("read", {"path": note}),
        ("load", {"path": note}),
        ("list", {"path": "notes"}),
        ("daily_list", {"date": "2026-06-20"}),
        ("digest_write", {"path": NODE, "content": body(CARD), "description": "Cadence."}),
        ("digest_edit", {"path": NODE, "old": "releases weekly", "new": "releases on Fridays"}),
        ("node_search", {"query": "releases Fridays"}),
        ("search", {"query": "Fridays"}),
        ("traverse", {"path": note, "depth": 1}),
    ]
    for job, params in calls:
        reply = await port.run_job(job, **params)
        assert reply.success, (job, reply.answer)
    assert "on Fridays" in (port.root / note).read_text(encoding="utf-8")
    assert "status: draft" in (port.root / note).read_text(encoding="utf-8")
    assert NODE in (await port.run_job("node_search", query="releases Fridays")).answer
    assert note in (await port.run_job("search", query="Fridays")).metadata["results"]
    assert NODE in (await port.run_job("traverse", path=note, depth=1)).answer  # the short link resolved

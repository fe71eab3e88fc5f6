"""digest_maintain with the scripted model (docs/spec.md §12.5): splits that keep every edge, and what is refused.

Most run the pipeline on the in-memory port; the job (its index, parameters, cron entry, HTTP client) on an application."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.pipelines.conftest import MakeApp, MakePipes, scripted, served_by
from tests.pipelines.dream_support import journal_runs, put
from tests.pipelines.maintain_support import (
    CARDS,
    CHILDREN,
    OTHER,
    PARENT,
    child_body,
    report,
    setup_digest,
    split_run,
    split_turns,
)

import reme.workspace.transaction as transaction
from reme.llm.testing.fake_openai import FakeOpenAI
from reme.pipelines.digest.maintain import MaintainSettings
from reme.pipelines.digest.nodes import Overload
from reme.workspace import frontmatter
from reme.workspace.edges import missing_edges


def body_of(path: Path) -> str:
    return frontmatter.parse(path.read_text(encoding="utf-8")).body


def digest_files(ws: Path) -> dict[str, bytes]:
    return {
        p.relative_to(ws).as_posix(): p.read_bytes()
        for p in sorted((ws / "digest").rglob("*.md"))
        if not p.name.startswith("_")
    }


async def test_a_split_that_keeps_every_edge_is_written_whole_and_journaled(make_app: MakeApp) -> None:
    app = await make_app(**scripted([split_run(split_turns())]))
    ws = app.workspace_dir
    parent = setup_digest(ws)
    old_body, other_before = body_of(parent), (ws / OTHER).read_bytes()
    response = await app.run("digest_maintain")
    assert response.success, response.answer
    meta = response.metadata
    assert [c["path"] for c in meta["candidates"]] == [PARENT] and "9 sections > 8" in meta["candidates"][0][
        "reason"
    ]
    assert meta["splits"] == [
        {"parent": PARENT, "children": sorted(CHILDREN), "reason": "three distinct groups of rules"}
    ]
    children = [body_of(ws / child) for child in CHILDREN]
    assert missing_edges(old_body, body_of(parent), *children) == []  # E-2 on disk
    overview = body_of(parent)
    assert all(f"[[{child}]]" in overview for child in CHILDREN) and "## Rule 1" not in overview
    assert (ws / OTHER).read_bytes() == other_before  # inbound links untouched (F-10)
    assert "name: release-cadence" in (ws / CHILDREN[0]).read_text(encoding="utf-8")
    [run] = journal_runs(ws)
    assert run["kind"] == "maintain" and run["run_id"] == meta["run_id"]
    assert sorted(run["created"]) == sorted(CHILDREN) and run["modified"][0]["path"] == PARENT
    assert run["actions"][0]["action"] == "SPLIT"
    assert f"maintain run {meta['run_id']}" in (ws / meta["journal_path"]).read_text(encoding="utf-8")
    assert meta["usage"]["requests"] == 5
    hits = await app.run("node_search", query="Rule 4 of shipping")  # the index follows the commit
    assert hits.metadata["results"][0]["path"] == CHILDREN[1]

    again = await app.run("digest_maintain")  # nothing overloaded any more: no model call
    assert again.success and again.metadata["candidates"] == [] and "nothing to split" in again.answer


LOST = {"path": PARENT, "missing_edges": [{"target": "digest/wiki/rule-9-notes.md", "predicate": None}]}


async def test_a_split_whose_model_drops_an_edge_keeps_nothing(make_pipes: MakePipes) -> None:
    app = make_pipes([split_run(split_turns(drop_link=True, retry=""))])
    ws = app.workspace_dir
    setup_digest(ws)
    before = digest_files(ws)
    response = await app.maintain()
    assert not response.success
    [failed] = response.metadata["failed"]
    assert failed["parent"] == PARENT and failed["error"].startswith("ConservationViolation: ")
    assert "[[digest/wiki/rule-9-notes.md]]" in failed["error"]
    assert response.metadata["violations"] == [LOST, LOST]  # refused, retried, refused again
    assert digest_files(ws) == before  # parent byte-identical, no child on disk
    [run] = journal_runs(ws)
    assert run["created"] == [] and run["modified"] == [] and run["violations"] == [LOST, LOST]
    audit = await app.audit()
    assert audit.metadata["counts"]["conservation_violation"] == 2


async def test_a_dropped_edge_is_refused_once_and_the_retry_that_keeps_it_is_written(
    make_pipes: MakePipes,
) -> None:
    kept = "Rule 9 notes: [[digest/wiki/rule-9-notes.md]].\n"
    app = make_pipes([split_run(split_turns(drop_link=True, retry=kept))])
    ws = app.workspace_dir
    parent = setup_digest(ws)
    old_body = body_of(parent)
    response = await app.maintain()
    assert response.success, response.answer
    assert response.metadata["violations"] == [LOST] and kept in body_of(parent)
    assert missing_edges(old_body, body_of(parent), *(body_of(ws / child) for child in CHILDREN)) == []


async def test_writes_outside_the_parents_bucket_or_to_another_node_are_refused(
    make_pipes: MakePipes,
) -> None:
    stray = "digest/procedure/release-cadence.md"
    turns = [
        {"tool": "digest_write", "args": {"path": stray, "content": child_body(0), "description": "x"}},
        {"tool": "digest_edit", "args": {"path": OTHER, "old": "See", "new": "Read"}},
        {"tool": "write", "args": {"path": "daily/2026-06-20/evil.md", "content": "x"}},
        {
            "tool": "digest_write",
            "args": {
                "path": "digest/wiki/invented.md",
                "content": child_body(0).replace(CARDS[0], "daily/2026-06-20/other.md"),
                "description": "x",
            },
        },
        *split_turns(),
    ]
    app = make_pipes([split_run(turns)])
    ws = app.workspace_dir
    setup_digest(ws)
    put(ws, "daily/2026-06-20/other.md", "# Other\n")
    other_before = (ws / OTHER).read_bytes()
    response = await app.maintain()
    assert response.success, response.answer
    refused = [r["refusal"] for r in response.metadata["refusals"]]
    # another bucket is refused by the path policy (writes only under digest/wiki/), the rest by the guard
    assert len(refused) == 2 and "only the parent" in refused[0]
    assert "cites sources the parent does not" in refused[1]
    assert not (ws / stray).exists() and not (ws / "digest/wiki/invented.md").exists()
    assert not (ws / "daily/2026-06-20/evil.md").exists() and (ws / OTHER).read_bytes() == other_before
    assert all((ws / child).is_file() for child in CHILDREN)


async def test_a_report_that_does_not_match_the_staged_split_keeps_nothing(make_pipes: MakePipes) -> None:
    app = make_pipes([split_run(split_turns(children=CHILDREN[:2]))])
    ws = app.workspace_dir
    setup_digest(ws)
    before = digest_files(ws)
    response = await app.maintain()
    assert not response.success and "staged" in response.metadata["failed"][0]["error"]
    assert digest_files(ws) == before


async def test_an_overview_that_does_not_link_a_child_keeps_nothing(make_pipes: MakePipes) -> None:
    turns = split_turns()
    turns[3]["args"]["new"] = turns[3]["args"]["new"].replace(
        f"- [[{CHILDREN[2]}]] — three of the rules.\n", ""
    )
    turns[3]["args"]["new"] += "Rule links kept: [[digest/wiki/rule-7-notes.md]]\n"
    app = make_pipes([split_run(turns)])
    ws = app.workspace_dir
    setup_digest(ws)
    before = digest_files(ws)
    response = await app.maintain()
    assert not response.success and f"does not link {CHILDREN[2]}" in response.answer
    assert digest_files(ws) == before


async def test_a_child_may_spell_a_parent_source_without_md(make_pipes: MakePipes) -> None:
    turns = split_turns()
    args = turns[0]["args"]
    source = f"derived_from:: [[{CARDS[0][: -len('.md')]}]]"  # the parent writes it with .md
    args["content"] = args["content"].replace(f"derived_from:: [[{CARDS[0]}]]", source)
    assert source in args["content"]
    app = make_pipes([split_run(turns)])
    ws = app.workspace_dir
    setup_digest(ws)
    response = await app.maintain()
    assert response.success, response.answer
    assert response.metadata["refusals"] == [] and all((ws / child).is_file() for child in CHILDREN)


async def test_an_overview_may_link_its_children_by_short_name(make_pipes: MakePipes) -> None:
    turns = split_turns()
    for child in CHILDREN:
        slug = child.rsplit("/", 1)[1][: -len(".md")]
        turns[3]["args"]["new"] = turns[3]["args"]["new"].replace(f"[[{child}]]", f"[[{slug}]]")
    assert "[[release-cadence]]" in turns[3]["args"]["new"]
    app = make_pipes([split_run(turns)])
    ws = app.workspace_dir
    setup_digest(ws)
    response = await app.maintain()
    assert response.success, response.answer
    assert "[[release-cadence]]" in body_of(ws / PARENT) and all((ws / child).is_file() for child in CHILDREN)


async def test_the_model_may_decline_and_nothing_is_written(make_pipes: MakePipes) -> None:
    turns = [report([], split=False, reason="the rules belong together")]
    app = make_pipes([split_run(turns)])
    ws = app.workspace_dir
    setup_digest(ws)
    before = digest_files(ws)
    response = await app.maintain()
    assert response.success, response.answer
    assert response.metadata["declined"] == [{"parent": PARENT, "reason": "the rules belong together"}]
    assert digest_files(ws) == before and journal_runs(ws) == []


async def test_a_refused_edit_then_a_declined_split_is_journaled_for_the_audit(make_pipes: MakePipes) -> None:
    turns = [*split_turns(drop_link=True)[:-1], report([], split=False, reason="better left whole")]
    app = make_pipes([split_run(turns)])
    ws = app.workspace_dir
    setup_digest(ws)
    before = digest_files(ws)
    response = await app.maintain()
    assert response.success, response.answer
    assert response.metadata["violations"] == [LOST] and response.metadata["declined"]
    assert digest_files(ws) == before
    [run] = journal_runs(ws)
    assert run["violations"] == [LOST] and run["created"] == [] and run["modified"] == []
    audit = await app.audit()
    assert audit.metadata["counts"]["conservation_violation"] == 1


async def test_a_disk_error_mid_commit_fails_the_split_and_keeps_nothing(
    make_pipes: MakePipes, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_pipes([split_run(split_turns())])
    ws = app.workspace_dir
    setup_digest(ws)
    before = digest_files(ws)
    apply_change, calls = transaction.apply_change, []

    def full_disk(w: object, relative: str, content: str | None) -> None:
        calls.append(relative)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        apply_change(w, relative, content)  # type: ignore[arg-type]

    monkeypatch.setattr(transaction, "apply_change", full_disk)
    response = await app.maintain()
    assert not response.success
    [failed] = response.metadata["failed"]
    assert "No space left on device" in failed["error"] and "nothing was written" in failed["error"]
    assert digest_files(ws) == before  # parent byte-identical, no child on disk
    assert not list((ws / "metadata/transactions").glob("*.json"))
    monkeypatch.undo()
    [run] = journal_runs(ws)  # the failure is journaled, the split is not
    assert run["created"] == [] and run["modified"] == [] and run["failed_units"][0]["unit"] == PARENT


async def test_max_children_over_the_transaction_cap_is_refused_saying_what_to_set(make_app: MakeApp) -> None:
    steps = [{"backend": "digest_maintain", "max_children": transaction.MAX_FILES - 1}]
    app = await make_app(**scripted([]), **{"jobs.digest_maintain.steps": steps})
    setup_digest(app.workspace_dir)
    before = digest_files(app.workspace_dir)
    response = await app.run("digest_maintain")
    assert not response.success and "max_children" in response.answer
    assert f"between 1 and {transaction.MAX_FILES - 2}" in response.answer
    assert digest_files(app.workspace_dir) == before


async def test_no_overloaded_node_succeeds_without_a_model(make_pipes: MakePipes) -> None:
    app = make_pipes()  # no LLM configured at all
    put(app.workspace_dir, CARDS[0], "# Card\n")
    await app.write_node(OTHER, f"# Outage\n\n## Sources\n- derived_from:: [[{CARDS[0]}]] — x.\n", "x")
    response = await app.maintain()
    assert response.success and response.metadata["candidates"] == [] and response.metadata["usage"] == {}


async def test_an_overloaded_node_without_a_model_fails_saying_what_to_set(make_pipes: MakePipes) -> None:
    app = make_pipes()
    setup_digest(app.workspace_dir)
    response = await app.maintain()
    assert not response.success and "no LLM configured" in response.answer
    assert "1 overloaded node(s) left as they are" in response.answer


async def test_bad_parameters_are_refused(make_app: MakeApp) -> None:
    app = await make_app()
    setup_digest(app.workspace_dir)
    for params, words in [
        ({"path": "daily/2026-06-20/release.md"}, "is not a digest node"),
        ({"path": "digest/wiki/nowhere.md"}, "no node"),
        ({"max_splits": 0}, "max_splits"),
    ]:
        response = await app.run("digest_maintain", **params)
        assert not response.success and words in response.answer, (params, response.answer)


async def test_size_bound_and_path_select_the_candidates(make_pipes: MakePipes) -> None:
    app = make_pipes()
    settings = MaintainSettings(Overload(max_node_chars=400, max_sections=50))
    setup_digest(app.workspace_dir)
    response = await app.maintain(OTHER, settings=settings)
    assert response.success and response.metadata["candidates"] == []
    response = await app.maintain(settings=settings)  # no model: fails, but says which nodes are overloaded
    assert not response.success and [c["path"] for c in response.metadata["candidates"]] == [PARENT]
    assert "characters > 400" in response.metadata["candidates"][0]["reason"]


async def test_maintain_cron_runs_the_same_steps_at_two(make_app: MakeApp) -> None:
    app = await make_app()
    cron, job = app.jobs["digest_maintain_cron"], app.jobs["digest_maintain"]
    assert (cron.kind, cron.cron, cron.served) == ("cron", "0 2 * * *", False)
    assert cron.steps == job.steps and job.served


async def test_a_dream_run_in_progress_blocks_maintain(make_pipes: MakePipes) -> None:
    app = make_pipes([split_run(split_turns())])
    ws = app.workspace_dir
    setup_digest(ws)
    async with app.port.exclusive("dream"):
        response = await app.maintain()
    assert not response.success and "a dream run is in progress" in response.answer
    assert not any((ws / child).exists() for child in CHILDREN)


async def test_a_split_over_the_real_http_client_path(make_app: MakeApp) -> None:
    server = FakeOpenAI(split_turns())
    try:
        app = await make_app(**served_by(server))
        ws = app.workspace_dir
        parent = setup_digest(ws)
        old_body = body_of(parent)
        response = await app.run("digest_maintain")
    finally:
        server.close()
    assert response.success, response.answer
    assert len(server.requests) == 5 and all((ws / child).is_file() for child in CHILDREN)
    assert missing_edges(old_body, body_of(parent), *(body_of(ws / child) for child in CHILDREN)) == []
    prompt = "\n".join(str(m.get("content") or "") for m in server.requests[0]["messages"])
    assert f"Node to split: {PARENT} (9 sections > 8)" in prompt and "## Rule 9" in prompt
    assert {t["function"]["name"] for t in server.requests[0]["tools"]} >= {
        "digest_write",
        "digest_edit",
        "read",
    }


async def test_a_node_too_large_for_one_prompt_is_left_for_a_person(make_pipes: MakePipes) -> None:
    app = make_pipes([split_run(split_turns())])
    ws = app.workspace_dir
    setup_digest(ws)
    before = digest_files(ws)
    response = await app.maintain(settings=MaintainSettings(max_parent_chars=500))
    assert response.success, response.answer
    [declined] = response.metadata["declined"]
    assert "max_parent_chars 500: split it by hand" in declined["reason"] and response.metadata["usage"] == {}
    assert digest_files(ws) == before


async def test_an_overview_that_is_not_shorter_than_the_node_keeps_nothing(make_pipes: MakePipes) -> None:
    turns = split_turns()
    links = " ".join(f"[[{child}]]" for child in CHILDREN)
    turns[3] = {
        "tool": "digest_edit",
        "args": {"path": PARENT, "old": "How the team ships.", "new": f"Parts: {links}."},
    }
    app = make_pipes([split_run(turns)])
    ws = app.workspace_dir
    setup_digest(ws)
    before = digest_files(ws)
    response = await app.maintain()
    assert not response.success and "is not shorter than the node was" in response.answer
    assert digest_files(ws) == before

"""auto_dream against a misbehaving model (docs/spec.md §12.3): refused in code, the workspace intact afterwards.

The pipeline runs on the in-memory port: the guard, the digest rules and the path policy are the same code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.pipelines.conftest import MakePipes
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    DAY,
    NODE,
    Pipes,
    body,
    catalog,
    corroborate_turns,
    create_turns,
    extract_run,
    integrate_run,
    journal_runs,
    put,
    report,
    sha,
    unit,
)

OLD_CARD = "daily/2026-06-10/outage.md"
OTHER = "digest/wiki/outage-review.md"
OLD_BODY = body(OLD_CARD, text=f"The team releases weekly, see [[{OTHER}]].")


async def with_node(make_pipes: MakePipes, script: list[dict[str, Any]]) -> tuple[Pipes, Path]:
    """Pipelines whose digest already holds NODE (sourced from an old card) and a changed card today."""
    app = make_pipes(script)
    put(app.workspace_dir, OLD_CARD, "# Outage\n\nWe had an outage.\n")
    await app.write_node(NODE, OLD_BODY, "Release cadence.")
    put(app.workspace_dir, CARD, CARD_TEXT)
    return app, app.workspace_dir / NODE


def drop_link_edit() -> dict[str, Any]:
    return {
        "tool": "digest_edit",
        "args": {"path": NODE, "old": f", see [[{OTHER}]].", "new": f". Also [derived_from:: [[{CARD}]]]."},
    }


async def test_a_dropped_link_is_refused_retried_once_then_the_unit_fails(make_pipes: MakePipes) -> None:
    turns = [{"tool": "read", "args": {"path": NODE}}, drop_link_edit(), drop_link_edit(), report("REFINE")]
    app, node = await with_node(make_pipes, [extract_run(unit()), integrate_run(turns)])
    before = node.read_bytes()
    response = await app.dream()
    assert not response.success
    [failure] = response.metadata["failed_units"]
    assert failure["error"].startswith("ConservationViolation: ") and failure["paths"] == [CARD]
    assert node.read_bytes() == before
    assert response.metadata["checkpointed"] == [] and CARD not in catalog(app.workspace_dir)
    assert [v["missing_edges"] for v in response.metadata["violations"]] == [
        [{"target": OTHER, "predicate": None}]
    ] * 2
    day_log = (app.workspace_dir / response.metadata["journal_path"]).read_text(encoding="utf-8")
    assert "ConservationViolation" in day_log and f"would drop `[[{OTHER}]]`" in day_log

    # the next run retries the same source; this time the model keeps the link
    app.script = [extract_run(unit()), integrate_run(corroborate_turns(CARD, "confirmed weekly."))]
    retry = await app.dream()
    assert retry.success, retry.answer
    assert retry.metadata["changed"] == [CARD] and retry.metadata["checkpointed"] == [CARD]
    text = node.read_text(encoding="utf-8")
    assert f"[[{OTHER}]]" in text and f"derived_from:: [[{CARD}]]" in text
    [failed, run] = journal_runs(app.workspace_dir)  # run ids sort by start time
    assert failed["run_id"] == response.metadata["run_id"] and failed["modified"] == []
    [modified] = run["modified"]
    assert modified["content_before"].encode() == before and modified["sha256_after"] == sha(node)


async def test_unconfigured_bucket_outside_digest_and_a_second_node_are_refused(
    make_pipes: MakePipes,
) -> None:
    second = "digest/wiki/rollback-rule.md"
    turns = [
        {
            "tool": "digest_write",
            "args": {"path": "digest/nope/weekly.md", "content": body(CARD), "description": "x"},
        },
        {
            "tool": "digest_write",
            "args": {"path": "daily/2026-06-20/evil.md", "content": body(CARD), "description": "x"},
        },
        {"tool": "frontmatter_update", "args": {"path": CARD, "metadata": {"x": 1}}},
        create_turns()[0],
        {"tool": "digest_write", "args": {"path": second, "content": body(CARD), "description": "x"}},
        report("CREATE"),
    ]
    app = make_pipes([extract_run(unit()), integrate_run(turns)])
    card = put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.dream()
    assert response.success, response.answer
    ws = app.workspace_dir
    assert sorted(p.relative_to(ws).as_posix() for p in (ws / "digest").rglob("*.md")) == [
        "digest/_buckets.md",
        NODE,
    ]
    assert not (ws / "daily/2026-06-20/evil.md").exists() and card.read_text(encoding="utf-8") == CARD_TEXT
    [run] = journal_runs(ws)
    assert run["created"] == [NODE]
    refused = [r["refusal"] for r in response.metadata["refusals"]]
    # the bucket is refused by digest_write itself, daily/ by the path policy, the second node by the guard
    assert len(refused) == 1 and "one subject per unit" in refused[0]


async def test_a_report_that_lies_fails_the_unit_and_puts_the_digest_back(make_pipes: MakePipes) -> None:
    lie = [create_turns()[0], report("CREATE", "digest/wiki/something-else.md")]
    app = make_pipes([extract_run(unit()), integrate_run(lie)])
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.dream()
    assert not response.success
    [failure] = response.metadata["failed_units"]
    assert (
        failure["error"].startswith("ReportMismatch: ")
        and "digest/wiki/something-else.md" in failure["error"]
    )
    assert not (app.workspace_dir / NODE).exists() and catalog(app.workspace_dir) == {}
    assert "FAILED Weekly releases: ReportMismatch" in response.answer


async def test_an_update_reported_without_a_change_fails(make_pipes: MakePipes) -> None:
    turns = [{"tool": "read", "args": {"path": NODE}}, report("CORROBORATE")]
    app, node = await with_node(make_pipes, [extract_run(unit()), integrate_run(turns)])
    before = node.read_bytes()
    response = await app.dream()
    assert not response.success and "no node was written" in response.metadata["failed_units"][0]["error"]
    assert node.read_bytes() == before and catalog(app.workspace_dir) == {}


async def test_an_edit_of_a_node_never_read_is_refused(make_pipes: MakePipes) -> None:
    edit = {"tool": "digest_edit", "args": {"path": NODE, "old": "weekly", "new": "every week"}}
    turns = [edit, report("REFINE")]
    app, node = await with_node(make_pipes, [extract_run(unit()), integrate_run(turns)])
    before = node.read_bytes()
    response = await app.dream()
    assert not response.success and node.read_bytes() == before


async def test_a_failed_unit_keeps_only_its_sources_for_the_next_run(make_pipes: MakePipes) -> None:
    other_card = f"daily/{DAY}/hiring.md"
    script = [
        extract_run(unit(), unit("Hiring bar", other_card)),
        integrate_run(create_turns(), "Weekly releases"),
        integrate_run([report("CREATE", "digest/wiki/hiring-bar.md")], "Hiring bar"),
    ]
    app = make_pipes(script)
    put(app.workspace_dir, CARD, CARD_TEXT)
    put(app.workspace_dir, other_card, "# Hiring\n\nWe hire slowly.\n")
    response = await app.dream()
    assert not response.success
    assert response.metadata["checkpointed"] == [CARD] and set(catalog(app.workspace_dir)) == {CARD}
    assert (app.workspace_dir / NODE).exists()


async def test_an_update_that_does_not_cite_the_units_evidence_fails_and_is_put_back(
    make_pipes: MakePipes,
) -> None:
    edit = {
        "tool": "digest_edit",
        "args": {"path": NODE, "old": "releases weekly", "new": "releases every week"},
    }
    turns = [{"tool": "read", "args": {"path": NODE}}, edit, report("REFINE")]
    app, node = await with_node(make_pipes, [extract_run(unit()), integrate_run(turns)])
    before = node.read_bytes()
    response = await app.dream()
    assert not response.success
    [failure] = response.metadata["failed_units"]
    assert failure["error"].startswith("ReportMismatch: ") and "derived_from" in failure["error"]
    assert node.read_bytes() == before and catalog(app.workspace_dir) == {}


async def test_a_new_link_to_a_digest_section_is_refused(make_pipes: MakePipes) -> None:
    anchored = body(CARD, text="Weekly, see [[digest/wiki/outage-review.md#timeline]].")
    turns = [
        {"tool": "digest_write", "args": {"path": NODE, "content": anchored, "description": "x"}},
        *create_turns(),
    ]
    app = make_pipes([extract_run(unit()), integrate_run(turns)])
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.dream()
    assert response.success, response.answer
    assert "#timeline" not in (app.workspace_dir / NODE).read_text(encoding="utf-8")
    assert "without '#anchor'" in response.metadata["refusals"][0]["refusal"]

"""dream_revert (docs/spec.md §12.5) after real scripted runs: byte-for-byte, compare-and-set, idempotent, journaled.

The runs go through the in-memory port; the revert job, its parameters and the index it updates through an application."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tests.pipelines.conftest import MakeApp, MakePipes
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    DAY,
    NODE,
    Pipes,
    body,
    create_turns,
    extract_run,
    integrate_run,
    journal_runs,
    put,
    report,
    unit,
)
from tests.pipelines.maintain_support import CHILDREN, PARENT, setup_digest, split_run, split_turns

OLD_CARD = "daily/2026-06-10/outage.md"
HIRING = "digest/wiki/hiring-bar.md"
HIRING_CARD = f"daily/{DAY}/hiring.md"
CORROBORATE = {
    "tool": "digest_edit",
    "args": {
        "path": NODE,
        "old": "## Sources\n",
        "new": f"## Sources\n- derived_from:: [[{CARD}]] — again.\n",
    },
}
SCRIPT = [
    extract_run(unit(), unit("Hiring bar", HIRING_CARD)),
    integrate_run(
        [{"tool": "read", "args": {"path": NODE}}, CORROBORATE, report("CORROBORATE")], "Weekly releases"
    ),
    integrate_run(
        create_turns(HIRING, body(HIRING_CARD, text="We hire slowly and on purpose."))[:1]
        + [report("CREATE", HIRING)],
        "Hiring bar",
    ),
]


async def dreamed(
    make_pipes: MakePipes, script: list[dict[str, Any]] | None = None
) -> tuple[Pipes, bytes, str]:
    """After one auto_dream that updated NODE and created HIRING: (the pipelines, NODE before, run id)."""
    app = make_pipes(script or SCRIPT)
    ws = app.workspace_dir
    put(ws, OLD_CARD, "# Outage\n")
    await app.write_node(NODE, body(OLD_CARD), "Release cadence.")
    before = (ws / NODE).read_bytes()
    put(ws, CARD, CARD_TEXT)
    put(ws, HIRING_CARD, "# Hiring\n\nWe hire slowly.\n")
    response = await app.dream()
    assert response.success, response.answer
    assert (ws / NODE).read_bytes() != before and (ws / HIRING).is_file()
    return app, before, response.metadata["run_id"]


async def test_revert_after_a_dream_restores_byte_for_byte_and_removes_created_nodes(
    make_pipes: MakePipes, make_app: MakeApp
) -> None:
    _, before, run_id = await dreamed(make_pipes)
    app = await make_app()  # the revert job of an application over the same workspace, with its index
    ws = app.workspace_dir
    response = await app.run("dream_revert", run_id=run_id)
    assert response.success, response.answer
    meta = response.metadata
    assert meta["run_id"] == run_id and meta["restored"] == [NODE] and meta["deleted"] == [HIRING]
    assert meta["skipped"] == [] and meta["revert_run_id"]
    assert (ws / NODE).read_bytes() == before and not (ws / HIRING).exists()
    hits = await app.run("node_search", query="hire slowly")  # the index follows the revert
    assert HIRING not in [hit["path"] for hit in hits.metadata["results"]]
    revert = journal_runs(ws)[-1]
    assert revert["kind"] == "revert" and revert["reverts"] == run_id
    assert f"revert run {meta['revert_run_id']}" in (ws / meta["journal_path"]).read_text(encoding="utf-8")

    again = await app.run("dream_revert", run_id=run_id)  # a second revert changes nothing
    assert again.success and "already reverted" in again.answer
    assert (
        again.metadata["restored"] == again.metadata["deleted"] == []
        and again.metadata["revert_run_id"] is None
    )
    assert sorted(again.metadata["unchanged"]) == sorted([NODE, HIRING]) and len(journal_runs(ws)) == 2

    redo = await app.run("dream_revert", run_id=meta["revert_run_id"])  # reverting the revert redoes the run
    assert redo.success, redo.answer
    assert sorted(redo.metadata["restored"]) == sorted([NODE, HIRING])
    assert f"derived_from:: [[{CARD}]]" in (ws / NODE).read_text(encoding="utf-8") and (ws / HIRING).is_file()


async def test_a_file_edited_by_a_person_after_the_run_is_skipped_unless_force(make_pipes: MakePipes) -> None:
    app, before, run_id = await dreamed(make_pipes)
    ws = app.workspace_dir
    edited = (ws / NODE).read_text(encoding="utf-8").replace("The team", "Our team")
    (ws / NODE).write_text(edited, encoding="utf-8")
    response = await app.revert(run_id)
    assert response.success, response.answer
    assert response.metadata["skipped"] == [
        {"path": NODE, "reason": "changed since the run; force=true overwrites that change"}
    ]
    assert response.metadata["deleted"] == [HIRING] and (ws / NODE).read_text(encoding="utf-8") == edited
    assert f"SKIPPED {NODE}" in response.answer

    forced = await app.revert(run_id, force=True)
    assert forced.success and forced.metadata["restored"] == [NODE]
    assert (ws / NODE).read_bytes() == before


async def test_a_created_node_changed_since_is_kept_and_its_inbound_links_reported(
    make_pipes: MakePipes,
) -> None:
    app, _, run_id = await dreamed(make_pipes)
    ws = app.workspace_dir
    (ws / HIRING).write_text(
        (ws / HIRING).read_text(encoding="utf-8") + "\nA person's note.\n", encoding="utf-8"
    )
    kept = await app.revert(run_id)
    assert kept.metadata["skipped"][0]["path"] == HIRING and (ws / HIRING).is_file()

    linker = "digest/wiki/team.md"
    await app.write_node(linker, body(OLD_CARD, text=f"See [[{HIRING}]]."), "Team.")
    forced = await app.revert(run_id, force=True)
    assert forced.metadata["deleted"] == [HIRING] and not (ws / HIRING).exists()
    assert forced.metadata["inbound"] == [{"path": HIRING, "source_path": linker}]
    assert f"DEAD LINK {linker} still links the deleted {HIRING}" in forced.answer


async def test_unknown_and_malformed_run_ids_are_refused(make_app: MakeApp) -> None:
    app = await make_app()
    unknown = await app.run("dream_revert", run_id="20260101T000000-000000-abcdef")
    assert not unknown.success and "no run '20260101T000000-000000-abcdef'" in unknown.answer
    bad = await app.run("dream_revert", run_id="../../etc/passwd")
    assert not bad.success and "is not a run id" in bad.answer
    missing = await app.run("dream_revert")
    assert not missing.success


async def test_a_corrupt_run_record_is_reported_as_unreadable_not_as_missing(make_pipes: MakePipes) -> None:
    app = make_pipes()
    run_id = "20260101T000000-000000-abcdef"
    put(app.workspace_dir, f"journal/dream/runs/{run_id}.json", '{"run_id": "cut off')
    before = (app.workspace_dir / f"journal/dream/runs/{run_id}.json").read_bytes()
    for response in (await app.revert(run_id), await app.journal(run_id)):
        assert not response.success and "no run" not in response.answer
        assert f"run record journal/dream/runs/{run_id}.json is unreadable: " in response.answer
    assert (app.workspace_dir / f"journal/dream/runs/{run_id}.json").read_bytes() == before


async def test_a_lock_held_by_a_revert_run_is_named_as_such(make_pipes: MakePipes) -> None:
    app = make_pipes()
    async with app.port.exclusive("dream", "revert"):
        response = await app.maintain()
    assert not response.success and "a revert run is in progress" in response.answer
    assert "dream run" not in response.answer


async def test_revert_of_a_maintain_run_puts_the_parent_back_and_removes_the_children(
    make_pipes: MakePipes,
) -> None:
    app = make_pipes([split_run(split_turns())])
    ws = app.workspace_dir
    parent: Path = setup_digest(ws)
    before = parent.read_bytes()
    split = await app.maintain()
    assert split.success, split.answer
    response = await app.revert(split.metadata["run_id"])
    assert response.success, response.answer
    assert response.metadata["restored"] == [PARENT] and sorted(response.metadata["deleted"]) == sorted(
        CHILDREN
    )
    assert parent.read_bytes() == before and not any((ws / child).exists() for child in CHILDREN)


async def test_a_tampered_record_cannot_touch_files_outside_the_digest(make_pipes: MakePipes) -> None:
    app, _, run_id = await dreamed(make_pipes)
    ws = app.workspace_dir
    record_path = ws / f"journal/dream/runs/{run_id}.json"
    record = json.loads(record_path.read_text(encoding="utf-8"))
    record["created"].append(CARD)  # a daily note the run never created
    record["created_sha256"][CARD] = hashlib.sha256((ws / CARD).read_bytes()).hexdigest()
    record_path.write_text(json.dumps(record), encoding="utf-8")
    response = await app.revert(run_id)
    assert response.success and (ws / CARD).read_text(encoding="utf-8") == CARD_TEXT
    assert {
        "path": CARD,
        "reason": "not a digest node; a revert only puts digest nodes back",
    } in response.metadata["skipped"]


async def test_a_revert_waits_for_no_one_while_a_dream_run_holds_the_lock(make_pipes: MakePipes) -> None:
    app, _, run_id = await dreamed(make_pipes)
    async with app.port.exclusive("dream"):
        response = await app.revert(run_id)
    assert not response.success and "a dream run is in progress" in response.answer
    assert (app.workspace_dir / HIRING).is_file()

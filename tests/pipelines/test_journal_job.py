"""The `journal` job: the changelog of dream, maintain and revert runs, and one run's diffs (the pipeline on the in-memory port, the job's settings and parameters on an application)."""

from __future__ import annotations

from tests.pipelines.conftest import MakeApp, MakePipes, scripted
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    NODE,
    create_turns,
    extract_run,
    integrate_run,
    put,
    unit,
)
from tests.pipelines.maintain_support import CHILDREN, PARENT, setup_digest, split_run, split_turns

SCRIPT = [extract_run(unit()), integrate_run(create_turns()), split_run(split_turns())]


async def test_runs_newest_first_with_actions_kinds_and_diffs(make_pipes: MakePipes) -> None:
    app = make_pipes(SCRIPT)
    ws = app.workspace_dir
    empty = await app.journal()
    assert empty.success and empty.metadata["runs"] == [] and "no run in the journal yet" in empty.answer
    setup_digest(ws)
    put(ws, CARD, CARD_TEXT)
    dream = await app.dream()
    split = await app.maintain()
    assert dream.success and split.success, dream.answer + split.answer
    fresh = await app.journal(split.metadata["run_id"])
    diffs = {diff["path"]: diff for diff in fresh.metadata["diffs"]}
    assert set(diffs) == {PARENT, *CHILDREN} and all(diff["note"] == "" for diff in diffs.values())
    assert diffs[CHILDREN[1]]["change"] == "created" and "+# Part 2" in diffs[CHILDREN[1]]["diff"]
    assert diffs[PARENT]["change"] == "modified" and "-## Rule 1" in diffs[PARENT]["diff"]
    assert f"+- [[{CHILDREN[0]}]] — three of the rules." in diffs[PARENT]["diff"]
    (ws / CHILDREN[0]).write_text(
        (ws / CHILDREN[0]).read_text(encoding="utf-8") + "\nLater note.\n", encoding="utf-8"
    )
    revert = await app.revert(split.metadata["run_id"])
    assert revert.success and revert.metadata["skipped"][0]["path"] == CHILDREN[0]

    listing = await app.journal()
    assert listing.success, listing.answer
    runs = listing.metadata["runs"]
    assert [run["kind"] for run in runs] == ["revert", "maintain", "auto_dream"]
    assert runs[0]["reverts"] == split.metadata["run_id"]
    assert runs[2]["actions"][0] == dream.metadata["actions"][0]
    assert f"CREATE {NODE} — new abstraction" in listing.answer and f"SPLIT {PARENT}" in listing.answer
    assert (
        listing.answer.index("revert") < listing.answer.index("maintain") < listing.answer.index("auto_dream")
    )

    assert [run["kind"] for run in (await app.journal(kind="dream")).metadata["runs"]] == ["auto_dream"]
    assert len((await app.journal(limit=1)).metadata["runs"]) == 1

    detail = await app.journal(split.metadata["run_id"])
    assert detail.success, detail.answer
    diffs = {diff["path"]: diff for diff in detail.metadata["diffs"]}
    # reverted since: the after-states are gone, each diff says what it compares with
    assert "the file is gone" in diffs[CHILDREN[1]]["note"]
    assert "no longer on disk" in diffs[PARENT]["note"] and diffs[PARENT]["diff"] == ""
    assert "+Later note." in diffs[CHILDREN[0]]["diff"] and "no longer on disk" in diffs[CHILDREN[0]]["note"]
    assert "--- a/digest/wiki/release-practice.md" not in detail.answer  # no difference: shown as such
    assert "(no difference)" in detail.answer


async def test_long_diffs_are_cut_and_bad_requests_refused(make_app: MakeApp) -> None:
    overrides = {**scripted(SCRIPT), "jobs.journal.steps": [{"backend": "journal", "max_diff_lines": 5}]}
    app = await make_app(**overrides)
    setup_digest(app.workspace_dir)
    split = await app.run("digest_maintain")
    detail = await app.run("journal", run_id=split.metadata["run_id"])
    assert all(diff["truncated"] for diff in detail.metadata["diffs"])
    assert "more diff line(s) not shown (max_diff_lines)" in detail.answer
    assert not (await app.run("journal", run_id="nope")).success
    assert not (await app.run("journal", kind="other")).success
    assert not (await app.run("journal", limit=0)).success

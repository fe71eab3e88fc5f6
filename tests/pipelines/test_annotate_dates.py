"""annotate_dates (docs/spec.md §17.1) on notes written by hand: resolved, idempotent, journaled, revertible."""

from __future__ import annotations

import json
from pathlib import Path

from tests.pipelines.conftest import MakeApp
from tests.pipelines.dream_support import put
from tests.pipelines.port_jobs import MakePortApp, port_app_fixture  # noqa: F401  (the fixture)

DAY_NOTE = "daily/2023-05-08/walk.md"
DAY_TEXT = (
    "---\nnote: written yesterday\n---\n# Walk\n\nYesterday we walked; next Friday maybe again.\n"
    "Last week was wet. `yesterday` stays code.\n"
)
HAND = "notes/trip.md"
HAND_TEXT = "---\ndate: 2024-03-14\n---\n上周五我们去了杭州，下个月再去。\n"
UNDATED = "notes/undated.md"


async def test_a_folder_is_annotated_once_journaled_and_reverted(tmp_path: Path, make_app: MakeApp) -> None:
    ws = tmp_path / "ws"
    put(ws, DAY_NOTE, DAY_TEXT)
    put(ws, HAND, HAND_TEXT)
    put(ws, UNDATED, "Tomorrow we pack.\n")
    put(ws, "session/dialog/s1.md", "yesterday\n")
    app = await make_app()

    dry = await app.run("annotate_dates", path=".", dry_run=True)
    assert dry.success, dry.answer
    assert dry.metadata["annotations"] == 4 and (ws / DAY_NOTE).read_text() == DAY_TEXT

    done = await app.run("annotate_dates", path=".")
    assert done.success, done.answer
    assert (ws / DAY_NOTE).read_text() == DAY_TEXT.replace(
        "Yesterday we", "Yesterday (2023-05-07) we"
    ).replace("Last week was", "Last week (2023-05-01/2023-05-07) was")
    assert (ws / HAND).read_text() == HAND_TEXT.replace("上周五", "上周五 (2024-03-08)").replace(
        "下个月", "下个月 (2024-04)"
    )
    assert (ws / UNDATED).read_text() == "Tomorrow we pack.\n"
    assert done.metadata["skipped"] == [{"path": UNDATED, "reason": "no reference date (give date)"}]
    assert (ws / "session/dialog/s1.md").read_text() == "yesterday\n"  # transcripts stay as recorded
    run_id = done.metadata["run_id"]
    record = json.loads((ws / f"journal/dream/runs/{run_id}.json").read_text())
    assert record["kind"] == "annotate" and {m["path"] for m in record["modified"]} == {DAY_NOTE, HAND}

    listed = await app.run("journal", kind="annotate")
    assert listed.success and run_id in listed.answer and f"ANNOTATE {HAND}" in listed.answer

    again = await app.run("annotate_dates", path=".")
    assert again.success and again.metadata["changed"] == [] and again.metadata["run_id"] is None

    given = await app.run("annotate_dates", path=UNDATED, date="2026-01-01")
    assert given.success and (ws / UNDATED).read_text() == "Tomorrow (2026-01-02) we pack.\n"

    undo = await app.run("dream_revert", run_id=run_id)
    assert undo.success, undo.answer
    assert sorted(undo.metadata["restored"]) == sorted([DAY_NOTE, HAND])
    assert (ws / DAY_NOTE).read_text() == DAY_TEXT and (ws / HAND).read_text() == HAND_TEXT
    redo = await app.run("dream_revert", run_id=undo.metadata["revert_run_id"])
    assert redo.success and "(2023-05-07)" in (ws / DAY_NOTE).read_text()


async def test_bad_input_changes_nothing(tmp_path: Path, make_port_app: MakePortApp) -> None:
    ws = tmp_path / "ws"
    put(ws, DAY_NOTE, DAY_TEXT)
    app = make_port_app()
    for params, said in (
        ({"path": "../outside"}, "path"),
        ({"path": "nowhere/x.md"}, "no file"),
        ({"path": "session"}, "stays as recorded"),
        ({"path": DAY_NOTE, "date": "2023-13-01"}, "not a calendar date"),
    ):
        response = await app.run("annotate_dates", **params)
        assert not response.success and said in response.answer, response.answer
    assert (ws / DAY_NOTE).read_text() == DAY_TEXT
    assert not (ws / "journal").exists()

"""auto_dream end to end with the scripted model (docs/spec.md §12): what is on disk afterwards."""

from __future__ import annotations

import io
import sys

import pytest
from tests.pipelines.conftest import MakeApp, MakePipes, scripted
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    DAY,
    NODE,
    catalog,
    create_turns,
    extract_run,
    integrate_run,
    journal_runs,
    put,
    unit,
)


async def test_creates_a_sourced_node_checkpoints_and_journals(make_pipes: MakePipes) -> None:
    app = make_pipes([extract_run(unit()), integrate_run(create_turns())])
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.dream()
    assert response.success, response.answer
    meta = response.metadata
    assert meta["changed"] == [CARD] and meta["checkpointed"] == [CARD]
    assert meta["actions"] == [
        {"unit": "Weekly releases", "action": "CREATE", "target_path": NODE, "reason": "new abstraction"}
    ]
    assert meta["modified_paths"] == [NODE] and meta["failed_units"] == []
    node = (app.workspace_dir / NODE).read_text(encoding="utf-8")
    assert f"derived_from:: [[{CARD}]]" in node and "name: weekly-releases" in node
    assert set(catalog(app.workspace_dir)) == {CARD}
    assert meta["usage"]["extract"]["requests"] == 1 and meta["usage"]["units"][0]["requests"] == 2
    day_log = (app.workspace_dir / meta["journal_path"]).read_text(encoding="utf-8")
    assert f"CREATE [[{NODE}]]" in day_log and meta["run_id"] in day_log
    [run] = journal_runs(app.workspace_dir)
    assert run["created"] == [NODE] and run["modified"] == [] and run["window"] == ["2026-06-19", DAY]
    assert "CREATE digest/wiki/weekly-releases.md — new abstraction" in response.answer

    again = await app.dream()  # nothing changed: no model call, no journal entry
    assert again.success and again.metadata["changed"] == [] and again.metadata["usage"]["requests"] == 0
    assert len(journal_runs(app.workspace_dir)) == 1


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_progress_per_unit_on_a_terminal_only(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = await make_app(**scripted([extract_run(unit()), integrate_run(create_turns())]))
    put(app.workspace_dir, CARD, CARD_TEXT)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    response = await app.run("auto_dream", date=DAY)
    assert response.success, response.answer
    shown = terminal.getvalue()
    assert "extracting from 1 changed file(s)" in shown
    assert f"unit 1/1 'Weekly releases': CREATE {NODE}" in shown


async def test_dream_cron_runs_the_same_steps_nightly_in_the_app_timezone(make_app: MakeApp) -> None:
    app = await make_app()
    cron, job = app.jobs["dream_cron"], app.jobs["auto_dream"]
    assert (cron.kind, cron.cron, cron.served) == ("cron", "0 23 * * *", False)
    assert cron.steps == job.steps and job.served

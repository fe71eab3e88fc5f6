"""Two machines dreaming at once with the scripted model (docs/spec.md §18): no update lost, journal and revert work."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    DAY,
    NODE,
    create_turns,
    extract_run,
    integrate_run,
    journal_runs,
    put,
    report,
    unit,
)
from tests.sync.conftest import Machine, git, tree

from reme import ReMe
from reme.workspace.edges import edges

SCRIPTED = {"components.llm.backend": "scripted", "components.llm.script": []}


def _corroborate(card: str) -> list[dict[str, Any]]:
    """Extract one unit from `card`, then add it to the node's sources."""
    edit = {
        "tool": "digest_edit",
        "args": {
            "path": NODE,
            "old": "## Sources\n",
            "new": f"## Sources\n- derived_from:: [[{card}]] — seen again.\n",
        },
    }
    return [
        extract_run(unit("Weekly releases", card)),
        integrate_run([{"tool": "read", "args": {"path": NODE}}, edit, report("CORROBORATE")]),
    ]


def _script(app: ReMe, script: list[dict[str, Any]]) -> None:
    app.component("llm").script = script  # type: ignore[attr-defined]


async def _dream(app: ReMe) -> dict[str, Any]:
    response = await app.run("auto_dream", date=DAY)
    assert response.success, response.answer
    return response.metadata


def _card(root: Path, name: str) -> str:
    path = f"daily/{DAY}/{name}.md"
    put(root, path, CARD_TEXT.replace("name: release", f"name: {name}").replace("weekly", f"weekly ({name})"))
    return path


async def test_two_machines_dreaming_at_once_keep_every_update(machine: Machine, remote: Path) -> None:
    a = await machine("a", **SCRIPTED)
    put(a.workspace_dir, CARD, CARD_TEXT)
    _script(a, [extract_run(unit()), integrate_run(create_turns())])
    first = await _dream(a)
    assert (await a.run("sync_init", remote=str(remote))).success
    b = await machine("b", **SCRIPTED)
    assert (await b.run("sync_clone", remote=str(remote))).success
    card_a, card_b = _card(a.workspace_dir, "from-a"), _card(b.workspace_dir, "from-b")
    _script(a, _corroborate(card_a))
    _script(
        b,
        [
            extract_run(unit("Weekly releases", card_b), unit("Canary", card_b)),
            integrate_run(_corroborate(card_b)[1]["turns"], "Weekly releases"),
            integrate_run(
                create_turns(
                    "digest/wiki/canary.md",
                    f"# Canary\n\nOne percent first.\n\n## Sources\n- derived_from:: [[{card_b}]] — the canary.\n",
                ),
                "Canary",
            ),
        ],
    )
    run_a, run_b = await asyncio.gather(_dream(a), _dream(b))  # both dream at once
    assert not run_a["failed_units"] and not run_b["failed_units"]
    for app, run in ((a, run_a), (b, run_b)):  # one commit per run, trailers naming job and run
        body = git(app.workspace_dir, "log", "-1", "--format=%B")
        assert f"ReMe-Run: {run['run_id']}" in body and "ReMe-Job: auto_dream" in body
        assert body.startswith(f"dream {run['run_id']}: ") and "CORROBORATE" in body

    for app in (a, b, a):
        assert (await app.run("sync")).success, "sync failed"
    assert tree(a.workspace_dir) == tree(b.workspace_dir)
    for app in (a, b):
        node = (app.workspace_dir / NODE).read_text()
        assert {(CARD, "derived_from"), (card_a, "derived_from"), (card_b, "derived_from")} <= set(
            edges(node)
        )
        runs = {run["run_id"] for run in journal_runs(app.workspace_dir)}
        assert runs == {first["run_id"], run_a["run_id"], run_b["run_id"]}
        day_log = next((app.workspace_dir / "journal/dream").glob("*.md")).read_text()
        assert run_a["run_id"] in day_log and run_b["run_id"] in day_log
        versions = (await app.run("history", path=NODE)).metadata["versions"]
        assert {run_a["run_id"], run_b["run_id"]} <= {v["run_id"] for v in versions}
        hits = await app.run("node_search", query="canary one percent")
        assert [hit["path"] for hit in hits.metadata["results"]][:1] == ["digest/wiki/canary.md"]

    # a's machine reverts b's run: the node b created goes, everywhere, after a sync
    revert = await a.run("dream_revert", run_id=run_b["run_id"])
    assert revert.success and revert.metadata["deleted"] == ["digest/wiki/canary.md"], revert.answer
    assert "ReMe-Job: dream_revert" in git(a.workspace_dir, "log", "-1", "--format=%B")
    for app in (a, b):
        assert (await app.run("sync")).success
    assert not (b.workspace_dir / "digest/wiki/canary.md").exists()
    assert (await b.run("node_search", query="canary one percent")).metadata["results"] == [] or all(
        hit["path"] != "digest/wiki/canary.md"
        for hit in (await b.run("node_search", query="canary")).metadata["results"]
    )


async def test_a_sync_during_a_dream_never_overwrites_either(machine: Machine, remote: Path) -> None:
    """Compare-and-set both ways: the merge waits for the node's lock and checks it; the dream checks its read."""
    a = await machine("a", **SCRIPTED)
    put(a.workspace_dir, CARD, CARD_TEXT)
    _script(a, [extract_run(unit()), integrate_run(create_turns())])
    await _dream(a)
    assert (await a.run("sync_init", remote=str(remote))).success
    b = await machine("b", **SCRIPTED)
    assert (await b.run("sync_clone", remote=str(remote))).success
    card_a, card_b = _card(a.workspace_dir, "from-a"), _card(b.workspace_dir, "from-b")
    _script(a, _corroborate(card_a))
    await _dream(a)
    assert (await a.run("sync")).success
    _script(b, _corroborate(card_b))
    dreamt, synced = await asyncio.gather(b.run("auto_dream", date=DAY), b.run("sync"))
    assert dreamt.success and synced.success, (dreamt.answer, synced.answer)
    if dreamt.metadata["failed_units"]:  # the merge won the race: the unit is retried by the next run
        _script(b, _corroborate(card_b))
        assert not (await _dream(b))["failed_units"]
    for app in (b, a, b):
        assert (await app.run("sync")).success
    for app in (a, b):
        node = (app.workspace_dir / NODE).read_text()
        assert {(CARD, "derived_from"), (card_a, "derived_from"), (card_b, "derived_from")} <= set(
            edges(node)
        )
        assert json.loads((app.workspace_dir / "metadata/sync.json").read_text())["success"]

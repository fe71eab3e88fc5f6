"""A split killed at each point of its commit leaves the old parent or the complete split, never half."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.pipelines.conftest import MakeApp, scripted
from tests.pipelines.dream_support import journal_runs
from tests.pipelines.maintain_support import CHILDREN, PARENT, setup_digest, split_run, split_turns
from tests.support import reme_env

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

SCRIPT = [split_run(split_turns())]
FILES_IN_COMMIT = len(CHILDREN) + 2  # the children, the parent, the run's journal record
# then one more transaction: the record again, finished (kill_after == FILES_IN_COMMIT dies in it)

# Runs one digest_maintain in a fresh process whose transaction dies (os._exit, as a kill) after
# `n` of its file writes.
KILLED_RUN = textwrap.dedent(
    """
    import asyncio, json, os, sys
    from pathlib import Path
    import reme.workspace.transaction as transaction
    from reme import ReMe

    workspace, script, kill_after = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
    apply_change, done = transaction.apply_change, []

    def dying(ws, relative, content):
        if len(done) == kill_after:
            os._exit(137)
        apply_change(ws, relative, content)
        done.append(relative)

    transaction.apply_change = dying

    async def main():
        overrides = {"components.llm.backend": "scripted", "components.llm.script": script, "scheduler.cron": False}
        async with ReMe(workspace_dir=workspace, timezone="UTC", **overrides) as app:
            response = await app.run("digest_maintain")
            print(json.dumps({"success": response.success, "answer": response.answer}))

    asyncio.run(main())
    """
)


def digest_files(ws: Path) -> dict[str, bytes]:
    return {
        p.relative_to(ws).as_posix(): p.read_bytes()
        for p in sorted((ws / "digest").rglob("*.md"))
        if not p.name.startswith("_")
    }


@pytest.mark.parametrize("kill_after", range(FILES_IN_COMMIT + 1))
async def test_a_kill_during_the_commit_leaves_the_old_parent_or_the_whole_split(
    tmp_path: Path, make_app: MakeApp, kill_after: int
) -> None:
    ws = tmp_path / "ws"
    setup_digest(ws)
    before = digest_files(ws)
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, str(ws), json.dumps(SCRIPT), str(kill_after)],
        env=reme_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == 137, killed.stdout + killed.stderr
    assert list((ws / "metadata/transactions").glob("*.json")), "the intent is on disk while the commit runs"

    app = await make_app(**scripted(SCRIPT))  # start-up rolls the dead writer's transaction back
    assert not list((ws / "metadata/transactions").glob("*.json"))
    health = (await app.run("health_check")).metadata["components"]["workspace"]
    [recovered] = health["recovered_transactions"]
    assert recovered["state"] == "rolled_back" and health["status"] == "ok"
    if kill_after < FILES_IN_COMMIT:  # died inside the split's transaction: the old parent, nothing else
        assert digest_files(ws) == before and journal_runs(ws) == []
        response = await app.run("digest_maintain")  # and the split can simply run again, whole
        assert response.success, response.answer
    split = digest_files(ws)
    assert sorted(split) == sorted([*before, *CHILDREN]) and split[PARENT] != before[PARENT]
    [run] = journal_runs(ws)  # the complete split, and the record that can revert it
    assert run["modified"][0]["path"] == PARENT and sorted(run["created"]) == sorted(CHILDREN)


async def test_a_child_edited_after_the_kill_survives_recovery_and_is_reported(
    tmp_path: Path, make_app: MakeApp
) -> None:
    ws = tmp_path / "ws"
    setup_digest(ws)
    before = digest_files(ws)
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, str(ws), json.dumps(SCRIPT), "1"],  # dies after one child
        env=reme_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == 137, killed.stdout + killed.stderr
    [written] = [child for child in CHILDREN if (ws / child).exists()]
    (ws / written).write_text("# Mine now\n\nA person kept working on this note.\n", encoding="utf-8")

    app = await make_app(**scripted(SCRIPT))  # start-up recovery must not destroy that edit
    assert (ws / written).read_text(encoding="utf-8") == "# Mine now\n\nA person kept working on this note.\n"
    assert digest_files(ws) == {**before, written: (ws / written).read_bytes()}
    assert not list((ws / "metadata/transactions").glob("*.json"))
    health = (await app.run("health_check")).metadata["components"]["workspace"]
    [recovered] = health["recovered_transactions"]
    assert recovered["state"] == "conflict" and recovered["conflicts"] == [written]
    assert health["status"] == "degraded" and written in health["reason"]

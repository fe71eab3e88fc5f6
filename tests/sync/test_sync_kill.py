"""kill -9 during a sync, at each of its git steps (docs/spec.md §18): never a corrupt repository, nothing lost.

A `git` on PATH that stalls before one subcommand (the real one runs otherwise) holds the one-shot
`reme start job=sync` there; the test kills its whole process group with SIGKILL, then checks the
repository, syncs again in-process and compares both machines.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from tests.support import REME, reme_env
from tests.sync.conftest import Machine, git, tree

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

STALLING_GIT = """#!/bin/bash
args=("$@"); i=0
while [ "${args[$i]}" = "-c" ]; do i=$((i+2)); done
if [ "${args[$i]}" = "$STALL_ON" ] && [ ! -e "$STALL_MARK" ]; then touch "$STALL_MARK"; sleep 60; fi
exec "$REAL_GIT" "$@"
"""
NOTE = "# Solar\n\nOne.\n\nTwo.\n\nThree.\n\nFour.\n"
STEPS = ["add", "fetch", "merge-tree", "hash-object", "commit-tree", "update-ref", "reset", "push"]


def _message(record_id: str, text: str, at: str) -> dict[str, str]:
    return {"id": record_id, "role": "user", "content": text, "created_at": at}


@pytest.mark.parametrize("step", STEPS)
async def test_kill_during_sync_loses_nothing(
    step: str, machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = await machine("a")
    await a.run("write", path="daily/2026-01-01/solar.md", content=NOTE, name="solar")
    base = [_message("m1", "start", "2026-01-01T10:00:00")]
    await a.run("auto_memory", session_id="s1", messages=base)
    assert (await a.run("sync_init", remote=str(remote))).success
    b = await machine("b")
    assert (await b.run("sync_clone", remote=str(remote))).success
    await a.run("edit", path="daily/2026-01-01/solar.md", old="One.", new="One, from a.")
    await a.run(
        "auto_memory", session_id="s1", messages=[*base, _message("a1", "from a", "2026-01-01T10:01:00")]
    )
    await a.run("write", path="daily/2026-01-02/a-only.md", content="only on a\n")
    assert (await a.run("sync")).success
    await b.run("edit", path="daily/2026-01-01/solar.md", old="Four.", new="Four, from b.")
    await b.run(
        "auto_memory", session_id="s1", messages=[*base, _message("b1", "from b", "2026-01-01T10:02:00")]
    )
    await b.run("write", path="daily/2026-01-02/b-only.md", content="only on b\n")

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(STALLING_GIT)
    (bin_dir / "git").chmod(0o755)
    mark = tmp_path / "stalled"
    env = reme_env(
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        STALL_ON=step,
        STALL_MARK=str(mark),
        REAL_GIT=str(shutil.which("git")),
    )
    proc = subprocess.Popen(
        [
            REME,
            "start",
            "job=sync",
            f"workspace_dir={b.workspace_dir}",
            "scheduler.cron=false",
            "timezone=UTC",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.exists(), f"sync never reached git {step} (exit {proc.poll()})"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)

    subprocess.run(
        ["git", "fsck", "--no-progress", "--strict"], cwd=b.workspace_dir, check=True, capture_output=True
    )
    solar = (b.workspace_dir / "daily/2026-01-01/solar.md").read_text()
    assert "Four, from b." in solar  # the local edit is on disk whatever step died
    assert (b.workspace_dir / "daily/2026-01-02/b-only.md").exists()

    again = await b.run("sync")
    assert again.success, again.answer
    assert (await a.run("sync")).success
    assert tree(a.workspace_dir) == tree(b.workspace_dir)
    for app in (a, b):
        root = app.workspace_dir
        solar = (root / "daily/2026-01-01/solar.md").read_text()
        assert "One, from a." in solar and "Four, from b." in solar
        assert (root / "daily/2026-01-02/a-only.md").exists() and (
            root / "daily/2026-01-02/b-only.md"
        ).exists()
        ids = [json.loads(line)["id"] for line in (root / "session/dialog/s1.jsonl").read_text().splitlines()]
        assert ids == ["m1", "a1", "b1"]
        assert git(root, "status", "--porcelain") == ""
        hits = await app.run("search", query="from b", limit=10)
        assert "daily/2026-01-01/solar.md" in {hit["path"] for hit in hits.metadata["results"]}

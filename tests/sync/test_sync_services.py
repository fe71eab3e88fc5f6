"""Two machines, each with a running service, syncing on their cron (docs/spec.md §18): CLI, HTTP and doctor."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from tests.support import run_reme_process, start_service_process

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

EVERY_SECOND = "sync.interval=* * * * * */1"  # croniter's sixth field: seconds


def _cli(*args: str) -> dict:
    done = run_reme_process(*args, "--json")
    return json.loads(done.stdout)


def test_services_sync_on_their_cron_and_answer_with_each_others_notes(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a = start_service_process(a_dir, EVERY_SECOND, "service.port=0")
    b = None
    try:
        wrote = a.cli("write", "path=daily/2026-01-01/kiln.md", "content=The kiln fires at 1200 degrees.")
        assert wrote.returncode == 0, wrote.stderr
        init = a.cli("sync_init", f"remote={remote}", "--json")
        assert json.loads(init.stdout)["success"], init.stdout
        # what was there reached the remote (pushed by sync_init, or by the every-second cron that may beat it)
        on_remote = subprocess.run(
            ["git", "--git-dir", str(remote), "ls-tree", "-r", "--name-only", "main"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert "daily/2026-01-01/kiln.md" in on_remote, init.stdout
        clone = run_reme_process("start", "job=sync_clone", f"workspace_dir={b_dir}", f"remote={remote}")
        assert clone.returncode == 0, clone.stdout + clone.stderr
        b = start_service_process(b_dir, EVERY_SECOND, "service.port=0")
        found = b.cli("search", "query=kiln degrees", "--json")
        assert json.loads(found.stdout)["metadata"]["results"][0]["path"] == "daily/2026-01-01/kiln.md"

        assert (
            b.cli(
                "write", "path=daily/2026-01-02/glaze.md", "content=Celadon glaze needs reduction."
            ).returncode
            == 0
        )
        deadline = time.monotonic() + 60
        hits: list = []
        while time.monotonic() < deadline and not hits:  # no sync call: the crons carry it over
            answer = json.loads(a.cli("search", "query=celadon glaze reduction", "--json").stdout)
            hits = [
                hit for hit in answer["metadata"]["results"] if hit["path"] == "daily/2026-01-02/glaze.md"
            ]
            time.sleep(0.5)
        assert hits, "a never answered with b's note"
        assert (a_dir / "daily/2026-01-02/glaze.md").read_text() == (
            b_dir / "daily/2026-01-02/glaze.md"
        ).read_text()
        history = json.loads(a.cli("history", "path=daily/2026-01-02/glaze.md", "--json").stdout)
        assert history["metadata"]["versions"][0]["job"] == "write"  # b's write, committed under its job name
        health = json.loads(a.cli("health_check", "--json").stdout)["metadata"]["components"]["sync"]
        assert health["status"] == "ok" and health["remote"] == str(remote) and health["last_sync"]["success"]
        doctor = run_reme_process("doctor", f"workspace_dir={a_dir}", "probe=false", "--json")
        sync_checks = [check for check in json.loads(doctor.stdout) if check["area"] == "sync"]
        assert [check["status"] for check in sync_checks] == ["ok", "ok", "ok"], sync_checks
    finally:
        if b is not None:
            b.stop()
        a.stop()

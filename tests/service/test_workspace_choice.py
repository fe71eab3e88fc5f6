"""Which workspace the CLI acts on (issue 21 item 6, docs/workspaces.md): `workspace_dir=`, else
`$REME_WORKSPACE_DIR`, else the nearest `.reme/` of the current folder or a parent, else `~/.reme`;
never whatever service answers at the default address, and every change names its workspace."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest
from tests.support import REME, reme_env, run_reme_process

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def started_here(folder: Path, env: dict[str, str], *overrides: str) -> tuple[subprocess.Popen[str], Path]:
    """`reme start` run in `folder` exactly as the README prints it (no workspace_dir=); the workspace it serves."""
    proc = subprocess.Popen(
        [REME, "start", *overrides],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    service_file = folder / ".reme" / "metadata" / "service.json"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if json.loads(service_file.read_text()).get("pid") == proc.pid:
                return proc, folder / ".reme"
        except (OSError, ValueError):
            pass
        assert proc.poll() is None, "reme start exited"
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("reme start wrote no service file")


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def homes(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An empty home folder (no `~/.reme`) and the environment that uses it."""
    home = tmp_path / "home"
    home.mkdir()
    return home, reme_env(HOME=str(home))


def test_a_folder_without_a_workspace_never_reaches_another_projects_service(tmp_path: Path) -> None:
    """The reported case: a project's service on the default address, the CLI run from elsewhere."""
    home, env = homes(tmp_path)
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    port = "service.port=2333" if port_is_free(2333) else "service.port=0"
    proc, workspace = started_here(project, env, port, "scheduler.cron=false")
    try:
        before = sorted(p.relative_to(workspace) for p in workspace.rglob("*.md"))
        wrote = run_reme_process("write", "path=x.md", "content=stray", cwd=elsewhere, env=env)
        assert wrote.returncode == 1
        assert f"no reme service runs for workspace {home}/.reme" in wrote.stderr
        assert "nothing was done" in wrote.stderr and "Created" not in wrote.stdout
        assert sorted(p.relative_to(workspace) for p in workspace.rglob("*.md")) == before
        assert not (workspace / "x.md").exists() and not (home / ".reme").exists()
    finally:
        stop(proc)


def test_readme_start_then_calls_from_the_folder_and_below_reach_its_workspace(tmp_path: Path) -> None:
    _, env = homes(tmp_path)
    project = tmp_path / "project"
    (project / "src" / "deep").mkdir(parents=True)
    proc, workspace = started_here(project, env, "service.port=0", "scheduler.cron=false")
    try:
        here = run_reme_process("write", "path=digest/a.md", "content=from the project", cwd=project, env=env)
        assert here.returncode == 0, here.stderr
        assert f"reme: workspace {workspace.resolve()}" in here.stderr  # the change names its workspace
        below = run_reme_process(
            "write", "path=digest/b.md", "content=from below", "--json", cwd=project / "src" / "deep", env=env
        )
        assert below.returncode == 0, below.stderr
        assert json.loads(below.stdout)["metadata"]["workspace"] == str(workspace.resolve())
        assert (workspace / "digest/a.md").read_text().endswith("from the project")
        assert (workspace / "digest/b.md").read_text().endswith("from below")
        read = run_reme_process("read", "path=digest/b.md", cwd=project / "src", env=env)
        assert read.returncode == 0 and "reme: workspace" not in read.stderr  # reads change nothing
    finally:
        stop(proc)


def test_outside_any_project_the_users_home_workspace_is_used(tmp_path: Path) -> None:
    home, env = homes(tmp_path)
    proc, workspace = started_here(home, env, "service.port=0", "scheduler.cron=false")  # serves ~/.reme
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    try:
        wrote = run_reme_process("write", "path=digest/h.md", "content=home note", cwd=elsewhere, env=env)
        assert wrote.returncode == 0, wrote.stderr
        assert f"reme: workspace {workspace.resolve()}" in wrote.stderr
        assert (home / ".reme/digest/h.md").is_file()
        chosen = run_reme_process(
            "write",
            "path=digest/e.md",
            "content=env",
            cwd=elsewhere,
            env={**env, "REME_WORKSPACE_DIR": str(tmp_path / "none")},
        )
        assert (
            chosen.returncode == 1
            and f"no reme service runs for workspace {tmp_path / 'none'}" in chosen.stderr
        )
    finally:
        stop(proc)


def test_a_stale_service_file_is_reported_and_nothing_is_done(tmp_path: Path) -> None:
    _, env = homes(tmp_path)
    dead = subprocess.Popen(["true"])  # a pid that has exited
    dead.wait()
    (tmp_path / ".reme/metadata").mkdir(parents=True)
    (tmp_path / ".reme/metadata/service.json").write_text(json.dumps({"port": 9, "pid": dead.pid}))
    result = run_reme_process("write", "path=a.md", "content=x", cwd=tmp_path, env=env)
    assert result.returncode == 1
    assert f"(pid {dead.pid}) has exited" in result.stderr and "nothing was done" in result.stderr
    assert "start one with `reme start`" in result.stderr
    assert "2333" not in result.stderr


def test_in_process_import_and_export_use_the_same_workspace_as_calls(tmp_path: Path) -> None:
    home, env = homes(tmp_path)
    project = tmp_path / "project"
    (project / ".reme").mkdir(parents=True)
    (project / "src").mkdir()
    memory = tmp_path / "MEMORY.md"
    memory.write_text("# Memory\n\n- The user prefers tea.\n")
    imported = run_reme_process("import", "claude-code", str(memory), cwd=project / "src", env=env)
    assert imported.returncode == 0, imported.stderr
    assert f"reme: workspace {(project / '.reme').resolve()}" in imported.stderr
    assert not (project / "src/.reme").exists() and not (home / ".reme").exists()
    assert any((project / ".reme").rglob("*.md"))

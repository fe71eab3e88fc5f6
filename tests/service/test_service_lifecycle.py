"""A workspace's service over its life, as a user runs it (issue 23.2): `reme stop` stops this
workspace's service by its service file; a second `reme start` names the running one (pid, port)
instead of "Address already in use"; a port another program holds is named as such."""

from __future__ import annotations

import json
import os
import socket

import pytest
from tests.support import run_reme_process

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


def test_a_second_start_names_the_running_service_and_stop_stops_it(reme_service, tmp_path):
    workspace = tmp_path / "ws"
    service = reme_service(workspace, "service.port=0")
    pid, port = service.info["pid"], service.info["port"]

    again = run_reme_process("start", f"workspace_dir={workspace}", f"service.port={port}", cwd=tmp_path)
    assert again.returncode == 2
    assert f"a reme service already runs for workspace {workspace.resolve()}" in again.stderr
    assert f"pid {pid}, http://127.0.0.1:{port}" in again.stderr
    assert f"reme stop workspace_dir={workspace.resolve()}" in again.stderr
    assert service.proc.poll() is None  # the running one is untouched

    stopped = run_reme_process("stop", f"workspace_dir={workspace}", cwd=tmp_path)
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped the reme service of workspace {workspace.resolve()} (pid {pid}" in stopped.stdout
    assert service.proc.wait(10) == 0  # a graceful exit
    assert not (workspace / "metadata" / "service.json").exists()

    nothing = run_reme_process("stop", f"workspace_dir={workspace}", cwd=tmp_path)
    assert nothing.returncode == 0 and "nothing to stop" in nothing.stdout


def test_stop_without_workspace_dir_stops_the_default_workspace_of_this_folder(reme_service, tmp_path):
    service = reme_service(tmp_path / ".reme", "service.port=0")
    stopped = run_reme_process("stop", cwd=tmp_path)
    assert stopped.returncode == 0 and "stopped the reme service" in stopped.stdout, stopped.stderr
    assert service.proc.wait(10) == 0


def test_stop_removes_a_stale_service_file_and_never_signals_a_stranger(tmp_path):
    workspace = tmp_path / "ws"
    (workspace / "metadata").mkdir(parents=True)
    record = workspace / "metadata" / "service.json"
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    record.write_text(json.dumps({"host": "127.0.0.1", "port": 1, "pid": dead}))
    stale = run_reme_process("stop", f"workspace_dir={workspace}", cwd=tmp_path)
    assert stale.returncode == 0 and "removed the stale" in stale.stdout and not record.exists()

    record.write_text(json.dumps({"host": "127.0.0.1", "port": 1, "pid": os.getpid()}))  # pytest, not reme
    stranger = run_reme_process("stop", f"workspace_dir={workspace}", cwd=tmp_path)
    assert stranger.returncode == 1 and "not a reme service" in stranger.stderr and record.exists()


def test_a_port_held_by_another_program_or_another_workspace_is_named(reme_service, tmp_path):
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        taken = run_reme_process(
            "start", f"workspace_dir={tmp_path / 'a'}", f"service.port={port}", cwd=tmp_path
        )
    assert taken.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}: it is taken by another program (not a reme service)" in (
        taken.stderr
    )
    assert "Address already in use" not in taken.stderr

    first = reme_service(tmp_path / "first", "service.port=0")
    clash = run_reme_process(
        "start", f"workspace_dir={tmp_path / 'second'}", f"service.port={first.info['port']}", cwd=tmp_path
    )
    assert clash.returncode == 2
    assert f"it is taken by a reme service of workspace {(tmp_path / 'first').resolve()}" in clash.stderr

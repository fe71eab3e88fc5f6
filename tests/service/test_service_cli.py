"""The `reme` console script as a subprocess: value typing, output, exit codes, discovery order."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from reme import __version__

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


def port_arg(service) -> str:
    return f"port={service.info['port']}"


def test_answer_is_printed_and_exit_status_follows_success(http_service, run_reme):
    ok = run_reme("version", port_arg(http_service))
    assert (ok.returncode, ok.stdout.strip()) == (0, __version__)
    failed = run_reme("help", "job=no_such_job", port_arg(http_service))
    assert failed.returncode == 1
    assert "unknown job 'no_such_job'" in failed.stderr


def test_json_flag_prints_the_whole_response(http_service, run_reme):
    result = run_reme("version", "--json", port_arg(http_service))
    assert result.returncode == 0
    assert json.loads(result.stdout) == {
        "success": True,
        "answer": __version__,
        "metadata": {"version": __version__},
    }
    failed = run_reme("--json", "help", "job=x", port_arg(http_service))
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["success"] is False


@pytest.mark.parametrize(
    "value", ["007", '"42"', "plain words", "[[wikilink]]", "42", "-1.5e3", "true", '["a", 1]', '{"a": 1}']
)
def test_a_string_parameter_takes_the_value_as_typed(http_service, run_reme, value):
    result = run_reme("help", f"job={value}", port_arg(http_service))
    assert result.returncode == 1
    assert f"unknown job {value!r}" in result.stderr


def test_a_job_named_list_is_reachable(http_service, run_reme):
    result = run_reme("list", "path=daily", port_arg(http_service), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["success"] is True
    missing = run_reme("list", port_arg(http_service))
    assert missing.returncode == 1
    assert "missing required parameter 'path'" in missing.stderr


def test_job_help_flag_describes_the_job(http_service, run_reme):
    result = run_reme("list", "--help", port_arg(http_service))
    assert result.returncode == 0
    assert result.stdout.startswith("list path=")


def test_usage_errors(run_reme):
    bare = run_reme()
    assert bare.returncode == 2 and "usage:" in bare.stderr
    assert run_reme("--help").returncode == 0
    bad = run_reme("start", "oops")
    assert bad.returncode == 2 and "expected key=value, got 'oops'" in bad.stderr


def test_start_job_runs_in_process_and_exits_with_its_status(tmp_path, run_reme, service_config):
    workspace = f"workspace_dir={tmp_path / 'ws'}"
    ok = run_reme("start", "job=list", "path=daily", f"config={service_config}", workspace, "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["answer"] == __version__
    hidden = run_reme("start", "job=private_version", f"config={service_config}", workspace)
    assert (hidden.returncode, hidden.stdout.strip()) == (0, __version__)  # not served, still runs locally
    bad = run_reme("start", "job=list", f"config={service_config}", workspace)
    assert bad.returncode == 1 and "missing required parameter 'path'" in bad.stderr
    digits = run_reme("start", "job=list", "path=2024", f"config={service_config}", workspace)
    assert digits.returncode == 0, digits.stderr  # typed by the schema: a string parameter stays a string


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("service.colour=blue", "service.colour"),
        ("service.backend=grpc", "service.backend must be one of http, mcp"),
        ("service.transport=carrier-pigeon", "service.transport must be one of stdio, sse, streamable-http"),
    ],
)
def test_bad_service_settings_are_refused(tmp_path, run_reme, override, expected):
    args = ["start", f"workspace_dir={tmp_path / 'ws'}", "service.backend=mcp", override]
    result = run_reme(*args)
    assert result.returncode == 2
    assert expected in result.stderr
    assert not (tmp_path / "ws").exists()


# discovery order -------------------------------------------------------------------------------


def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again: nothing listens there


def fake_service_file(workspace, port: int, pid: int | None = None) -> None:
    (workspace / "metadata").mkdir(parents=True, exist_ok=True)
    info = {"host": "127.0.0.1", "port": port, "backend": "http", "pid": pid or os.getpid()}
    (workspace / "metadata" / "service.json").write_text(json.dumps(info))


def served_by(result: subprocess.CompletedProcess[str], service) -> bool:
    """Whether a `status --json` call was answered by `service` (told apart by its workspace)."""
    assert result.returncode == 0, result.stderr
    workspace = json.loads(result.stdout)["metadata"]["workspace_dir"]
    return Path(workspace).resolve() == service.workspace.resolve()


def test_explicit_port_beats_env_and_service_file(tmp_path, http_service, run_reme, reme_env):
    fake_service_file(tmp_path / ".reme", dead_port())
    env = reme_env(REME_SERVICE_INFO=json.dumps({"host": "127.0.0.1", "port": dead_port()}))
    assert served_by(
        run_reme("status", "--json", port_arg(http_service), cwd=tmp_path, env=env), http_service
    )


def test_env_beats_service_file(tmp_path, http_service, run_reme, reme_env):
    fake_service_file(tmp_path / ".reme", dead_port())
    info = {"host": "127.0.0.1", "port": http_service.info["port"], "backend": "http"}
    env = reme_env(REME_SERVICE_INFO=json.dumps(info))
    assert served_by(run_reme("status", "--json", cwd=tmp_path, env=env), http_service)
    broken = run_reme("version", cwd=tmp_path, env=reme_env(REME_SERVICE_INFO="{nope"))
    assert broken.returncode == 2 and "REME_SERVICE_INFO is not valid JSON" in broken.stderr


def test_service_file_of_workspace_dir_then_of_the_default_workspace(tmp_path, http_service, run_reme):
    found = run_reme("status", "--json", f"workspace_dir={http_service.workspace}", cwd=tmp_path)
    assert served_by(found, http_service)
    (tmp_path / ".reme").symlink_to(http_service.workspace)  # the default workspace of tmp_path
    assert served_by(run_reme("status", "--json", cwd=tmp_path), http_service)


def test_default_workspace_follows_reme_workspace_dir(tmp_path, http_service, run_reme, reme_env):
    env = reme_env(REME_WORKSPACE_DIR=str(http_service.workspace))
    assert served_by(run_reme("status", "--json", cwd=tmp_path, env=env), http_service)


def exited_pid() -> int:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(gone.stdout)


def test_a_stale_service_file_is_reported_and_nothing_is_tried_elsewhere(tmp_path, run_reme):
    """Never the default address instead (docs/workspaces.md): it may serve another workspace."""
    fake_service_file(tmp_path / ".reme", dead_port(), pid=exited_pid())
    result = run_reme("version", cwd=tmp_path)
    assert result.returncode == 1
    assert "(pid" in result.stderr and "has exited" in result.stderr and "nothing was done" in result.stderr
    assert "127.0.0.1:2333" not in result.stderr
    assert "start one with `reme start`" in result.stderr


def test_unreachable_service_names_where_it_looked(tmp_path, run_reme):
    port = dead_port()
    result = run_reme("status", f"port={port}", cwd=tmp_path)
    assert result.returncode == 1
    assert f"127.0.0.1:{port} (host=/port= arguments)" in result.stderr
    assert "reme start job=status" in result.stderr


def test_cli_imports_no_server_stack(reme_env):
    probe = (
        "import sys, reme.service.cli, reme.service.client, reme.service.service_info;"
        "heavy = {'fastapi', 'uvicorn', 'mcp', 'pydantic', 'pydantic_ai', 'starlette', 'httpx', 'rich', 'yaml'};"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=reme_env())
    assert result.stdout.strip() == "[]"


def run_in_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stdout and stderr; (exit status, what it showed)."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(args, stdout=follower, stderr=follower, stdin=subprocess.DEVNULL, env=env)
    os.close(follower)
    shown = b""
    while True:
        try:
            piece = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not piece:
            break
        shown += piece
    os.close(leader)
    return proc.wait(30), shown.decode("utf-8", "replace")


def test_terminal_output_is_rendered_with_rich(http_service, reme_command, reme_env):
    env = reme_env(TERM="xterm-256color", COLUMNS="100")
    status, shown = run_in_terminal([reme_command, "help", "job=list", port_arg(http_service)], env)
    assert status == 0 and "list path=" in shown
    status, shown = run_in_terminal([reme_command, "help", "job=nope", port_arg(http_service)], env)
    assert status == 1
    assert "\x1b[" in shown  # styled (the red "error:")
    assert "error:" in shown and "unknown job 'nope'" in shown


def test_unreachable_mcp_service_is_reported(tmp_path, run_reme, reme_env):
    info = {"host": "127.0.0.1", "port": dead_port(), "backend": "mcp", "transport": "sse"}
    result = run_reme("version", cwd=tmp_path, env=reme_env(REME_SERVICE_INFO=json.dumps(info)))
    assert result.returncode == 1
    assert f"no MCP service answered at http://127.0.0.1:{info['port']}/sse" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_bug_in_the_cli_shows_its_traceback_and_says_it_is_one(monkeypatch, capsys):
    from reme.service import cli

    def broken(*args, **kwargs):
        return {}["port"]

    monkeypatch.setattr(cli, "call", broken)
    assert cli.main(["status"]) == 1
    err = capsys.readouterr().err
    assert (
        "Traceback" in err
        and "reme: internal error (a bug in reme; its traceback is in the log): KeyError" in err
    )

"""Attacks on the `reme` command line and the hook entry points, run as the real console script.

The promise: bad input gets a message saying what to fix and a non-zero exit status (a hook: exit 0
and a line on stderr), never a Python traceback, and nothing is lost.
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.service.test_agent_hooks import FIXTURES, S1, event, hook, markers
from tests.support import REME, reme_env

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


def port_arg(service) -> str:
    return f"port={service.info['port']}"


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr


# arguments -------------------------------------------------------------------------------------


@pytest.mark.parametrize("job", ["version?x", "version#x", "a b", "搜索", "version\r\nX-Injected: 1"])
def test_a_job_name_is_one_job_never_part_of_the_request_line(http_service, run_reme, job):
    result = run_reme(job, port_arg(http_service))
    no_traceback(result)
    assert result.returncode == 1 and "0.1.0" not in result.stdout  # `version?x` used to run `version`
    assert "unknown" in result.stderr and "serves an unnamed workspace" not in result.stderr


def test_a_key_given_twice_is_refused_not_half_dropped(http_service, run_reme):
    result = run_reme("list", "path=a", "path=b", port_arg(http_service))
    assert result.returncode == 2 and "path= is given twice" in result.stderr
    assert result.stdout == ""
    bare = run_reme("list", "a", "path=b", port_arg(http_service))  # a usage error, not a failed call
    assert (
        bare.returncode == 2
        and bare.stderr == "reme: path is given twice: as path= and as the bare word 'a'\n"
    )


def test_a_value_before_the_job_is_refused(http_service, run_reme):
    result = run_reme(port_arg(http_service), "version")
    assert result.returncode == 2
    assert "the job (or command) comes first" in result.stderr and "usage:" in result.stderr


@pytest.mark.parametrize(
    "args", [("list", "solar", "--help"), ("list", "path=x", "--help"), ("help", "list"), ("--help", "list")]
)
def test_help_describes_the_job_wherever_the_flag_stands(http_service, run_reme, args):
    result = run_reme(*args, port_arg(http_service))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("list path=")


@pytest.mark.parametrize("value", ["a=b", "", "[1,2]", '{"a":1}', "null", "true", "1e400", "NaN", "x\ny"])
def test_odd_string_values_reach_the_job_as_typed(http_service, run_reme, value):
    result = run_reme("list", f"path={value}", port_arg(http_service), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["success"] is True


# output ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_an_answer_the_terminal_cannot_encode_is_escaped_not_a_traceback(http_service, neutral_dir, encoding):
    def run(*args: str) -> tuple[int, str, str]:
        done = subprocess.run(
            [REME, "help", "job=café ☕", port_arg(http_service), *args],
            capture_output=True,
            timeout=60,
            env=reme_env(PYTHONIOENCODING=encoding),
            cwd=neutral_dir,
            stdin=subprocess.DEVNULL,
        )
        return done.returncode, done.stdout.decode(encoding), done.stderr.decode(encoding)

    status, _, stderr = run()
    assert status == 1 and "unknown job 'caf" in stderr and "Traceback" not in stderr, stderr
    status, stdout, stderr = run("--json")
    assert status == 1 and "Traceback" not in stderr, stderr
    assert "café ☕" in json.loads(stdout)["answer"]  # still valid JSON, nothing lost


# a service that breaks off ---------------------------------------------------------------------

HEAD = b"HTTP/1.1 200 OK\r\n%s\r\n"
SSE = b"content-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
PARTIAL = b'data: {"type": "text", "text": "partial answer"}\n\n'
REPLIES = {
    "stream cut off": HEAD % SSE + b"%x\r\n%s\r\n" % (len(PARTIAL), PARTIAL),
    "garbled chunk": HEAD % SSE + b"zz\r\n",
    "body cut short": HEAD % b"content-type: application/json\r\ncontent-length: 1000\r\n" + b'{"succ',
    "no answer": b"",
}


@pytest.fixture
def broken_service() -> Iterator[Callable[[bytes | None], int]]:
    """`start(reply)`: a port where each request gets `reply`, then the connection closes (None: no
    reply at all, the connection stays open)."""
    listeners: list[socket.socket] = []
    held: list[socket.socket] = []

    def start(reply: bytes | None) -> int:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def serve() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                conn.recv(65536)
                if reply is None:
                    held.append(conn)
                    continue
                conn.sendall(reply)
                conn.close()

        threading.Thread(target=serve, daemon=True).start()
        return int(listener.getsockname()[1])

    yield start
    for sock in (*listeners, *held):
        sock.close()


@pytest.mark.parametrize("case", list(REPLIES))
def test_a_service_that_breaks_off_is_named_never_a_traceback(broken_service, run_reme, case):
    result = run_reme("version", f"port={broken_service(REPLIES[case])}")
    no_traceback(result)
    assert result.returncode == 1
    assert any(words in result.stderr for words in ("ended early", "did not answer")), result.stderr


def test_ctrl_c_while_waiting_for_the_service_exits_130_quietly(broken_service, neutral_dir):
    port = broken_service(None)
    proc = subprocess.Popen(
        [REME, "version", f"port={port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=reme_env(),
        cwd=neutral_dir,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(1.5)  # started and waiting on the socket
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in stderr


# hooks -----------------------------------------------------------------------------------------


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    """A Claude Code transcript where Claude Code keeps it (`hook` runs with HOME=tmp_path/home)."""
    folder = tmp_path / "home" / ".claude" / "projects" / "-home-dev-solar-api"
    folder.mkdir(parents=True)
    return Path(shutil.copy(FIXTURES / "claude_session.jsonl", folder / f"{S1}.jsonl"))


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("Stop", ""),
        ("Stop", "   \n"),
        ("Stop", "null"),
        ("Stop", '"a string"'),
        ("Stop", json.dumps({"session_id": 5, "transcript_path": 7})),
        ("Stop", json.dumps({"session_id": S1, "transcript_path": ["x"]})),
        ("PreCompact", DEEP),
        ("SessionEnd", json.dumps({"session_id": S1, "pad": "x" * (2 << 20)})),
        ("UserPromptSubmit", json.dumps({"prompt": ["not", "text"]})),
    ],
)
def test_hook_input_it_cannot_use_is_noted_and_ignored(tmp_path: Path, name: str, payload: str) -> None:
    began = time.monotonic()
    result = hook(name, payload, tmp_path / "ws", "prompt_recall=true", REME_HOOK_SPAWN="0")
    assert time.monotonic() - began < 10
    assert (result.returncode, result.stdout) == (0, "")
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("reme hook: ") or name == "UserPromptSubmit", result.stderr
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # nothing written anywhere


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_hook_input_is_read_as_utf8_whatever_the_locale(tmp_path: Path, transcript, encoding) -> None:
    workspace = tmp_path / "ws"
    # raw UTF-8, as Node's JSON.stringify writes it
    payload = json.dumps(event("Stop", transcript, cwd="/home/dév/café"), ensure_ascii=False)
    result = hook("Stop", payload, workspace, REME_HOOK_SPAWN="0", PYTHONIOENCODING=encoding)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert markers(workspace) == [f"{S1}.json"], result.stderr  # the capture waits; it is not lost
    marker = workspace / "metadata" / "agent" / "captures" / f"{S1}.json"
    assert json.loads(marker.read_text(encoding="utf-8"))["cwd"] == "/home/dév/café"


def test_a_capture_of_an_unknown_source_is_refused_at_once(tmp_path: Path, transcript) -> None:
    workspace = tmp_path / "ws"
    args = ("source=claude", f"transcript_path={transcript}")
    result = hook("capture", "", workspace, *args, REME_HOOK_SPAWN="0")
    assert result.returncode == 0 and "source 'claude'" in result.stderr
    assert markers(workspace) == []  # not queued to fail at every drain


@pytest.mark.parametrize(
    "args", [["search", "solar", "workspace_dir="], ["start", "job=search", "query=x", "workspace_dir= "]]
)
def test_an_empty_workspace_dir_is_refused_not_read_as_the_default(run_reme, tmp_path, args):
    result = run_reme(*args, cwd=tmp_path)
    assert result.returncode == 2 and "workspace_dir= is empty" in result.stderr, result.stderr
    assert not (tmp_path / ".reme").exists()


@pytest.mark.parametrize("port", ["99999", "-1", "0"])
def test_a_port_out_of_range_is_named_not_reported_as_no_service(run_reme, port):
    result = run_reme("version", f"port={port}")
    assert result.returncode != 0 and f"port {port} is out of range (1 to 65535)" in result.stderr, (
        result.stderr
    )

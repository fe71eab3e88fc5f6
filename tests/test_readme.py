"""The README, run as a new user runs it (issue 23.1): every bash line in README order, each in a fresh
shell in an empty folder whose `.venv` is this test's virtual environment, with the venv on PATH
only through the README's own `source .venv/bin/activate` (and the set-up line's `.venv/bin/reme`):
no line before the README says to activate gets it, and every fresh shell after does, as the README
tells a user to do in every new terminal.

A `reme start` without `job=` is a service in the foreground: it is started, must announce where
it serves, and is then ended with Ctrl-C — except the set-up one, which keeps running for the
lines after it until the README's `reme stop`. Skipped, each with its reason: lines that need the
network (creating the venv and installing from a package index) or a model. The Python blocks
run as the whole scripts the README says they are.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support import reme_env

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
VENV = Path(sys.prefix)
ACTIVATE = "source .venv/bin/activate"
SERVICE_WAIT = 60.0
# substring of a line (or of one `&&` part of a set-up line) → why it does not run here
SKIPPED = {
    "python3 -m venv .venv": "creates the venv; this test runs inside the one it made",
    "pip install": "installs from a package index (network)",
    ".venv/bin/pytest": "the whole test suite (this test is part of it; .ci/run runs it, checked below)",
    "LLM_BASE_URL=": "needs a local model server (Ollama: an LLM)",
}
# a line that needs a model: without one it must still do what the README says it does
NEEDS_MODEL = {"reme auto_memory": "conversation saved to session/dialog/s1.jsonl"}
_FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
_SERVICE = re.compile(r"^(?:\w+=\S+\s+)*(?:\.venv/bin/)?reme start\b(?!.*\bjob=)")


def blocks(kind: str) -> list[str]:
    return [body for lang, body in _FENCE.findall(README.read_text(encoding="utf-8")) if lang == kind]


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as reme binds: TIME_WAIT is no owner
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Shell:
    """Fresh `bash` processes in the user's folder, with a HOME of its own and no venv on PATH."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        bin_dir = str(VENV / "bin")
        env = reme_env(HOME=str(folder / "home"))
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != bin_dir)
        for name in ("VIRTUAL_ENV", "CLAUDE_CONFIG_DIR"):  # the install line writes into this HOME only
            env.pop(name, None)
        self.env = env
        self.activated = False  # set once the README has said to activate in every new terminal

    def script(self, line: str) -> str:
        if line.split("#")[0].strip() == ACTIVATE:
            self.activated = True
        return f"{ACTIVATE}\n{line}" if self.activated else line

    def run(self, line: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", self.script(line)],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def start(self, line: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["bash", "-c", self.script(line)],
            cwd=self.folder,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # Ctrl-C goes to its process group, as in a terminal
        )


def wait_until_serving(proc: subprocess.Popen[str], line: str) -> str:
    """The `reme: ... service on URL` announcement; fails with the output when the process ends first."""
    assert proc.stderr is not None
    deadline = time.monotonic() + SERVICE_WAIT
    seen = []
    os.set_blocking(proc.stderr.fileno(), False)
    while time.monotonic() < deadline:
        text = proc.stderr.readline()
        if text:
            seen.append(text)
            if " service on " in text:
                return text
            continue
        if proc.poll() is not None:
            seen.append(proc.stderr.read() or "")
            pytest.fail(f"README line {line!r} exited with {proc.returncode}:\n{''.join(seen)}")
        time.sleep(0.05)
    pytest.fail(f"README line {line!r} did not start serving in {SERVICE_WAIT}s:\n{''.join(seen)}")


def ctrl_c(proc: subprocess.Popen[str]) -> int:
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait(5)


def command_lines() -> list[str]:
    lines = []
    for body in blocks("bash"):
        lines += [line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return lines


def skip_reason(command: str) -> str | None:
    return next((why for needle, why in SKIPPED.items() if needle in command), None)


@pytest.mark.slow
@pytest.mark.timeout(600)  # five services start and stop in turn; a busy machine takes its time
def test_the_readme_runs_as_printed(tmp_path: Path) -> None:
    if sys.prefix == sys.base_prefix:
        pytest.skip("not running inside a virtual environment: there is no .venv to activate")
    user = tmp_path / "user"
    (user / "home").mkdir(parents=True)
    (user / ".venv").symlink_to(VENV, target_is_directory=True)
    shell = Shell(user)
    bare = subprocess.run(
        ["bash", "-c", "command -v reme"], cwd=user, env=shell.env, capture_output=True, text=True
    )
    if bare.returncode == 0:  # without the README's activation `reme` must not be found (the bug this guards)
        pytest.skip(
            f"another reme is on PATH outside the venv ({bare.stdout.strip()}); a fresh shell finds it"
        )

    skipped: list[str] = []
    deviations: list[str] = []
    setup: subprocess.Popen[str] | None = None
    port = 2333
    try:
        for line in command_lines():
            parts = [part.strip() for part in line.split("&&")] if "python3 -m venv" in line else [line]
            for command in parts:
                why = skip_reason(command)
                if why is not None:
                    skipped.append(f"{command}: {why}")
                    continue
                if "localhost:2333" in command and port != 2333:
                    command = command.replace("localhost:2333", f"localhost:{port}")
                    deviations.append(f"curl sent to the set-up service's port {port} (2333 was taken)")
                if _SERVICE.match(command):
                    wanted = re.search(r"service\.port=(\d+)", command)
                    if setup is None:  # the set-up service: keep it for the lines that follow
                        if not port_free(2333):
                            command += " service.port=0"
                            deviations.append("set-up service on a free port: 2333 was taken on this machine")
                        setup = shell.start(command)
                        announced = wait_until_serving(setup, command)
                        port = int(re.search(r":(\d+)\b", announced.split(" service on ")[1]).group(1))
                        continue
                    if "transport=stdio" in command:  # an MCP server on stdin: ends at end of input
                        done = shell.run(command)
                        assert done.returncode == 0, f"{command}\n{done.stderr}"
                        continue
                    needed = int(wanted.group(1)) if wanted else 2333
                    if not port_free(needed):
                        skipped.append(f"{command}: port {needed} is taken on this machine")
                        continue
                    service = shell.start(command)
                    wait_until_serving(service, command)
                    assert ctrl_c(service) == 0, f"{command} did not end cleanly on Ctrl-C"
                    continue
                result = shell.run(command)
                model_line = next((k for k in NEEDS_MODEL if command.startswith(k)), None)
                if model_line is not None:
                    shown = result.stdout + result.stderr
                    assert result.returncode in (0, 1) and NEEDS_MODEL[model_line] in shown, (command, shown)
                    continue
                assert result.returncode == 0, (
                    f"README line failed: {command}\n{result.stdout}\n{result.stderr}"
                )
                if command.startswith("reme stop"):
                    assert setup is not None and setup.wait(30) == 0  # the set-up service is gone
    finally:
        if setup is not None and setup.poll() is None:
            ctrl_c(setup)
    assert (user / ".reme" / "digest" / "wiki" / "pv.md").is_file()  # the Use block's write and move
    assert (user / "home" / ".claude" / "reme-install.json").is_file()  # the agents block's install
    assert setup is not None and skipped, "the README's set-up line was not found"
    print("skipped:", *skipped, "deviations:", *deviations, sep="\n  ")


@pytest.mark.slow
def test_the_readme_python_examples_run(tmp_path: Path) -> None:
    scripts = blocks("python")
    assert len(scripts) >= 2
    for n, script in enumerate(scripts):
        path = tmp_path / f"example{n}.py"
        path.write_text(script, encoding="utf-8")
        result = subprocess.run(
            [sys.executable, str(path)],
            cwd=tmp_path,
            env=reme_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"README Python block {n} failed:\n{result.stderr}"
        assert result.stdout.startswith("True "), result.stdout


def test_ci_runs_the_readme_test_command() -> None:
    """The README's second set-up command is the one `.ci/run` runs (after building the venv)."""
    (command,) = [line for body in blocks("bash") for line in body.splitlines() if ".venv/bin/pytest" in line]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").replace(" --quiet", "")
    assert command.removeprefix("python3 -m venv .venv && ") in ci

"""Helpers for tests that drive the real interfaces: the `reme` console script and services."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REME = str(Path(sys.executable).with_name("reme"))
START_TIMEOUT = 30.0
TEST_PLUGINS = "reme.testing"  # the `REME_PLUGINS` opt-in that brings in the scripted LLM backend


def free_port() -> int:
    """A loopback port that was free a moment ago (prefer `service.port=0` where a race matters)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scripted_overrides(script: list[Any], *, cron: bool = True) -> tuple[str, ...]:
    """CLI overrides that give a process the scripted LLM with `script` (and, unless `cron`, no cron jobs)."""
    overrides = ("components.llm.backend=scripted", f"components.llm.script={json.dumps(script)}")
    return overrides if cron else (*overrides, "scheduler.cron=false")


def reme_env(**extra: str) -> dict[str, str]:
    """The current environment without REME_*/LLM_* variables (tests must not see the developer's),
    plus the suite's plugin opt-in (`REME_PLUGINS=reme.testing`)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("REME_", "LLM_"))}
    env["REME_PLUGINS"] = TEST_PLUGINS
    env.update(extra)
    return env


@dataclass
class ServiceProcess:
    """A `reme start` subprocess that is listening; `info` is its metadata/service.json."""

    proc: subprocess.Popen[str]
    workspace: Path
    info: dict[str, Any]
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://{self.info['host']}:{self.info['port']}"

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`reme <args> workspace_dir=...`: the CLI finds this service through the workspace's service file."""
        return run_reme_process(*args, f"workspace_dir={self.workspace}")

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM, then wait; the exit status (a graceful stop is 0)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode


def start_service_process(
    workspace: Path, *overrides: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> ServiceProcess:
    """Run `reme start workspace_dir=<workspace> <overrides>` and wait for its service file."""
    log_path = workspace.parent / f"{workspace.name}-service-{time.monotonic_ns()}.log"
    log = log_path.open("w", encoding="utf-8")
    proc = subprocess.Popen(
        [REME, "start", f"workspace_dir={workspace}", *overrides],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=reme_env() if env is None else env,
        cwd=cwd or workspace.parent,
        text=True,
    )
    log.close()
    service_file = workspace / "metadata" / "service.json"
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"reme start exited with {proc.returncode}:\n{log_path.read_text()}")
        try:
            info = json.loads(service_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            info = {}
        if info.get("pid") == proc.pid:
            return ServiceProcess(proc, workspace, info, log_path)
        time.sleep(0.05)
    proc.kill()
    proc.wait(5)
    raise RuntimeError(
        f"reme start did not write {service_file} in {START_TIMEOUT}s:\n{log_path.read_text()}"
    )


def run_reme_process(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """Run the real `reme` console script; output captured as text."""
    return subprocess.run(
        [REME, *args],
        cwd=cwd,
        env=reme_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def packaged_tools() -> dict[str, Any]:
    """The agent view (`ToolSpec`) of every packaged job that declares one (`agent:` in its config)."""
    from reme.app.config import load_config
    from reme.app.jobs import build_job
    from reme.app.registry import load_plugins

    load_plugins()
    jobs = (build_job(name, raw) for name, raw in load_config(None, {})["jobs"].items())
    return {job.name: job.agent for job in jobs if job.agent is not None}


def snapshot(root: Path, *, skip: tuple[str, ...] = (), folders: bool = True) -> dict[str, str]:
    """Every entry under `root` with its content hash (links marked; folders too unless `folders` is
    false), for before/after checks; the top-level folders named in `skip` (derived state: `metadata`,
    `journal`) are left out."""
    state = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if not (Path(folder) == root and name in skip)]
        for name in dirs + files:
            path = Path(folder, name)
            key = path.relative_to(root).as_posix()
            if path.is_symlink():
                state[key] = "link:" + os.readlink(path)
            elif path.is_dir():
                if folders:
                    state[key] = "dir"
            else:
                state[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state

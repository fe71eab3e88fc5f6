"""Fixtures for testing through the real interfaces: the `reme` CLI and service subprocesses.

Reusable by other areas (candidates for tests/conftest.py):
- `run_reme(*args, cwd=, env=)` runs the real `reme` console script → CompletedProcess;
- `reme_service(workspace, *overrides, env=, cwd=)` starts `reme start workspace_dir=... ...` and
  returns once its `metadata/service.json` names the process (`.url`, `.info`, `.stop()`, `.log`);
- `run_reme_async(...)`: the same, awaitable, for tests whose event loop must keep serving;
- `module_services`: like `reme_service`, stopped when the test module ends;
- `free_port` (an int), `reme_env` (the environment without REME_* variables, plus extras),
  `reme_command` (path of the console script), `service_config` (the test config: system jobs
  plus stand-ins), `http_service` (one HTTP service on that config for the whole session).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REME = str(Path(sys.executable).with_name("reme"))
SERVICE_CONFIG = Path(__file__).with_name("service_test_config.yaml")
START_TIMEOUT = 30.0


def free_port() -> int:
    """A loopback port that was free a moment ago (prefer `service.port=0` where a race matters)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def reme_env(**extra: str) -> dict[str, str]:
    """The current environment without REME_* variables (tests must not see the developer's)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("REME_")}
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


@pytest.fixture(name="free_port")
def free_port_fixture() -> int:
    return free_port()


@pytest.fixture(name="reme_env")
def reme_env_fixture() -> Callable[..., dict[str, str]]:
    return reme_env


@pytest.fixture(scope="session")
def reme_command() -> str:
    """Path of the installed `reme` console script (for SDK clients that spawn it themselves)."""
    return REME


@pytest.fixture(scope="session")
def service_config() -> Path:
    return SERVICE_CONFIG


def _service_factory() -> Iterator[Callable[..., ServiceProcess]]:
    started: list[ServiceProcess] = []

    def start(workspace: Path, *overrides: str, **kwargs: Any) -> ServiceProcess:
        service = start_service_process(workspace, *overrides, **kwargs)
        started.append(service)
        return service

    yield start
    for service in started:
        service.stop()


@pytest.fixture
def reme_service() -> Iterator[Callable[..., ServiceProcess]]:
    """Factory: `reme_service(workspace, "service.port=0", ...)`; every service is stopped at teardown."""
    yield from _service_factory()


@pytest.fixture(scope="module")
def module_services() -> Iterator[Callable[..., ServiceProcess]]:
    """Like `reme_service`, for services shared by a test module (stopped when the module ends)."""
    yield from _service_factory()


@pytest.fixture(scope="session")
def http_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """One HTTP service on the test config and a fresh workspace, shared by the whole session."""
    workspace = tmp_path_factory.mktemp("service") / "ws"
    service = start_service_process(workspace, f"config={SERVICE_CONFIG}", f"service.port={free_port()}")
    yield service
    service.stop()


async def run_reme_async(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """`run_reme_process` for tests whose own event loop must keep serving meanwhile."""
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        REME,
        *args,
        cwd=cwd,
        env=reme_env() if env is None else env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout)
    return subprocess.CompletedProcess([REME, *args], proc.returncode or 0, stdout.decode(), stderr.decode())


@pytest.fixture(name="run_reme_async")
def run_reme_async_fixture(neutral_dir: Path) -> Callable[..., Any]:
    """Awaitable `run_reme`: `await run_reme_async("talk", "text=hi", "port=...")`."""

    async def run(*args: str, cwd: Path | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return await run_reme_async(*args, cwd=cwd or neutral_dir, **kwargs)

    return run


@pytest.fixture
def neutral_dir(tmp_path: Path) -> Path:
    """An empty working folder: no `.env` or `.reme/` of the developer's checkout leaks into a test."""
    path = tmp_path / "cwd"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture
def run_reme(neutral_dir: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run_reme("version", "port=1234", cwd=..., env=...)` → CompletedProcess (cwd: an empty folder)."""

    def run(*args: str, cwd: Path | None = None, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return run_reme_process(*args, cwd=cwd or neutral_dir, **kwargs)

    return run

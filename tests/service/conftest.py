"""Fixtures for testing through the real interfaces: the `reme` CLI and service subprocesses.

Reusable by other areas (candidates for tests/conftest.py):
- `run_reme(*args, cwd=, env=)` runs the real `reme` console script → CompletedProcess;
- `reme_service(workspace, *overrides, env=, cwd=)` starts `reme start workspace_dir=... ...` and
  returns once its `metadata/service.json` names the process (`.url`, `.info`, `.stop()`, `.log`);
- `run_reme_async(...)`: the same, awaitable, for tests whose event loop must keep serving;
- `module_services`: like `reme_service`, stopped when the test module ends;
- `free_port` (an int), `reme_env` (the environment without REME_* variables, plus extras),
  `reme_command` (path of the console script), `service_config` (the test config: system jobs
  plus stand-ins), `http_service` (one HTTP service on that config for the whole session);
- Studio's browser tests: `browser` (Debian's chromium for the module; skips when it is missing) and
  `page` (a fresh context on the module's own `service` fixture, failing on an uncaught page error;
  a module may define its own `page`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.service.studio_support import launch, require_browser
from tests.support import (
    REME,
    ServiceProcess,
    free_port,
    reme_env,
    run_reme_process,
    start_service_process,
)

SERVICE_CONFIG = Path(__file__).with_name("service_test_config.yaml")


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


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_playwright = require_browser()
    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, service: ServiceProcess) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert not errors, errors

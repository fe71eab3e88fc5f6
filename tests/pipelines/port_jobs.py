"""Pipeline jobs run by their real steps on the in-memory port: no application is started.

A test of pipeline logic asks for `make_port_app` where it used `make_app` (the module imports
`port_app_fixture`, which registers it): `await app.run(job, ...)`
still validates the parameters against the job's schema (defaults filled), runs the job's steps (the
thin adapters that add usage and turn errors into `success=false`) and answers a `Response`; only the
port the steps build (`AppPort(ctx.app)`) is a `reme.testing.memory_port.InMemoryPort` over
`tmp_path/ws`, with the scripted model. No index, no component start, no background loop: a test
about the application itself (HTTP, MCP, kill, the index) keeps `make_app`.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import date, tzinfo
from pathlib import Path

import pytest

from reme import ReMe
from reme.app.jobs import JobSpec, Response, execute
from reme.testing.memory_port import InMemoryPort

# the step modules that build a port from `ctx.app`
STEP_MODULES = (
    "agent",
    "chat",
    "imports",
    "memory",
    "proactive",
    "recall",
    "resource",
    "session_imports",
    "time",
)
SCRIPT = "components.llm.script"


class PortApp:
    """What the steps of these jobs use of an application, over an `InMemoryPort`."""

    def __init__(self, port: InMemoryPort) -> None:
        self.port = port
        self.jobs: dict[str, JobSpec] = port.jobs

    @property
    def workspace_dir(self) -> Path:
        return self.port.root

    @property
    def tz(self) -> tzinfo:
        return self.port.tz

    def today(self) -> date:
        return self.port.today()

    def component(self, name: str) -> InMemoryPort:
        """Only `component("llm")`, whose `script` the tests set: the port holds the scripted turns."""
        if name != "llm":
            raise KeyError(f"the in-memory port has no component {name!r}; this test needs make_app")
        return self.port

    def set_script(self, *turns: dict[str, object]) -> None:
        """The scripted model's turns from now on (a started app's `component("llm").script`)."""
        self.port.script = list(turns)

    async def run(self, job: str, **params: object) -> Response:
        """The job as the application runs it: schema check, then its steps; always a Response."""
        return await execute(self, self.jobs[job], dict(params))  # type: ignore[arg-type]


MakePortApp = Callable[..., PortApp]


def _steps_on_the_port(monkeypatch: pytest.MonkeyPatch) -> None:
    """`AppPort(ctx.app)` in the steps answers with the `PortApp`'s in-memory port."""
    for name in STEP_MODULES:
        module = importlib.import_module(f"reme.app.steps.{name}")
        monkeypatch.setattr(module, "AppPort", lambda app: app.port)


@pytest.fixture(name="make_port_app")
def port_app_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakePortApp]:
    """`make_port_app(tz, today=..., **scripted(...))`: a `PortApp` over `tmp_path/ws`."""
    _steps_on_the_port(monkeypatch)

    def make(tz: str = "UTC", *, today: date | None = None, **overrides: object) -> PortApp:
        script = overrides.pop(SCRIPT, [])
        if overrides.pop("components.llm.backend", "scripted") != "scripted" or overrides:
            raise ValueError(f"the in-memory port takes only the scripted model, not {sorted(overrides)}")
        assert isinstance(script, list)
        return PortApp(InMemoryPort(tmp_path / "ws", script=script, tz=tz, today=today))

    yield make


@pytest.fixture(name="app")
def app_on_port_fixture(workspace_dir: Path, monkeypatch: pytest.MonkeyPatch) -> PortApp:
    """In a module that imports it, `app` (the default app over `workspace_dir`, in UTC) as a `PortApp`."""
    _steps_on_the_port(monkeypatch)
    return PortApp(InMemoryPort(workspace_dir))


@pytest.fixture(name="real_app")
async def real_app_fixture(workspace_dir: Path) -> AsyncIterator[ReMe]:
    """Where a module's `app` is a `PortApp`: the started application for a test that needs one."""
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC") as started:
        yield started

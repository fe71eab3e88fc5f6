"""The application: configuration, started components and the job table.

Every interface (HTTP, MCP, CLI, embedded Python) is a thin shell around `Application.run`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Coroutine, Mapping, Sequence
from contextvars import ContextVar
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any, Literal

import anyio

from reme.app.component import Component, Components
from reme.app.config import ConfigError, load_config
from reme.app.jobs import Chunk, JobSpec, Response, build_jobs, execute
from reme.app.registry import COMPONENTS, load_plugins
from reme.app.scheduling import run_on_schedule, supervise
from reme.app.timezones import resolve_timezone
from reme.errors import Unavailable, UserError, kind_of
from reme.index.memory import keep_large_blocks_apart

log = logging.getLogger(__name__)


class ComponentError(Unavailable, RuntimeError):
    """A component could not be built or started."""


# The application whose job (or background loop) this context runs in: its jobs may start nested
# jobs while it closes, and may not call its `close()`, which would wait for them.
_INSIDE: ContextVar[Application | None] = ContextVar("reme_inside_application", default=None)
State = Literal["new", "started", "closing", "closed"]


class Application:
    """Holds components and jobs; `start()` brings them up, `close()` takes them down in reverse."""

    close_grace_s: float = 30.0
    """Seconds `close()` lets running jobs finish before it stops them. The workspace's default lock
    wait (30 s): a write queued behind another writer still lands. Long work that can end at a
    consistent point (a reindex) is asked to at once, so mostly model requests use it."""

    def __init__(self, config: dict[str, Any], *, step_modules: Sequence[str] | None = None) -> None:
        """`step_modules`: load only these step modules (`load_plugins`); the config's jobs must
        use no other step."""
        self.config = config
        self.step_modules = step_modules
        self.workspace_dir = Path(config.get("workspace_dir") or ".reme").expanduser().resolve()
        self.tz: tzinfo = resolve_timezone(config.get("timezone"))
        self.components = Components()
        self.jobs: dict[str, JobSpec] = {}
        self.job_runs: list[tuple[str, Response]] = []  # background/cron outcomes, newest last
        self._state: State = "new"
        self._loops: dict[asyncio.Task[None], anyio.CancelScope] = {}  # background and cron
        self._jobs: dict[asyncio.Task[Response], anyio.CancelScope] = {}  # jobs callers run
        self._closing: asyncio.Task[None] | None = None
        self._grace_s = self.close_grace_s  # the grace of the close in progress, for its answers

    @classmethod
    def from_config(cls, config: str | Path | None = None, **overrides: Any) -> Application:
        """Load `config` (a packaged name or a file) with overrides such as `workspace_dir=...`."""
        return cls(load_config(config, overrides))

    # lifecycle -----------------------------------------------------------------------------------

    async def start(self, *, background: bool = False) -> Application:
        """Build jobs, start components in dependency order; `background` also starts loops and cron.

        A closed application starts again from scratch; one still closing refuses."""
        if self._state == "started":
            return self
        if self._state == "closing":
            raise RuntimeError(
                "the application is closing; wait for close() to finish before starting it again"
            )
        if background:  # a long-running service: large blocks never pin the heap (reme.index.memory)
            keep_large_blocks_apart()
        load_plugins(self.step_modules)
        self.jobs = build_jobs(self.config.get("jobs", {}))
        try:
            self.workspace_dir.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise ConfigError(
                f"config key 'workspace_dir': {self.workspace_dir} exists but is not a folder"
            ) from None
        except OSError as exc:
            raise ConfigError(
                f"config key 'workspace_dir': cannot create {self.workspace_dir}: {exc}"
            ) from None
        for name in self._start_order():
            try:
                component = self._build_component(name)
                await component.start()
            except Exception as exc:  # whatever failed, a refused start leaves nothing running
                await self._close_components()
                if isinstance(exc, ConfigError):
                    raise
                # the message stays short (the CLI prints it); the log keeps the traceback
                if kind_of(exc) == "bug":
                    log.error("component %s failed to start", name, exc_info=exc)
                raise ComponentError(f"component {name!r} failed to start: {exc}") from exc
            self.components[name] = component
        self._state = "started"
        self._closing = None
        if background:
            self.start_background()
        return self

    def start_background(self) -> None:
        """Start supervised background jobs and cron schedules (the service does; one-shot runs don't).

        `scheduler.cron=false` starts no cron schedule (tests and one-shot runs control what fires).
        """
        cron = (self.config.get("scheduler") or {}).get("cron", True) is not False
        for job in self.jobs.values():
            if job.kind == "background":
                self._spawn_loop(f"background:{job.name}", supervise(self, job))
            elif job.kind == "cron" and cron:
                self._spawn_loop(f"cron:{job.name}", run_on_schedule(self, job))

    def _spawn_loop(self, name: str, loop: Coroutine[Any, Any, None]) -> None:
        """Run a loop in a task `close()` stops through a cancel scope: a step in a worker thread
        finishes its write first (`anyio.to_thread`), where a plain `Task.cancel` abandons it."""
        scope = anyio.CancelScope()

        async def body() -> None:
            _INSIDE.set(self)
            with scope:
                await loop

        self._loops[asyncio.create_task(body(), name=name)] = scope

    async def close(self, grace_s: float | None = None) -> None:
        """Refuse new jobs at once, then stop loops and let running jobs finish before components close.

        Components are asked to end long work at its next consistent point (`Component.interrupt`);
        background and cron loops stop; jobs callers started get `grace_s` seconds (default
        `close_grace_s`) to finish, then stop at their next safe point, a write in progress first
        finishing, and their callers are told. No component closes while a job runs. Calling it again,
        even while it runs, waits for the same close; calling it from inside a job is refused.
        """
        if _INSIDE.get() is self:  # a user error: the job that called it answers with this message
            raise UserError(
                "close() was called from inside a job of this application, and it waits for running jobs "
                "to finish: close the application from outside its jobs"
            )
        if self._closing is None:
            if self._state != "started":
                return
            self._state = "closing"  # before any await: a job started from now on is refused
            self._grace_s = self.close_grace_s if grace_s is None else max(0.0, grace_s)
            self._closing = asyncio.create_task(self._shut_down(), name="reme-close")
        await asyncio.shield(self._closing)

    async def _shut_down(self) -> None:
        for name, component in self.components.items():
            try:
                component.interrupt()
            except Exception:
                log.exception("interrupting component %s failed", name)
        await _stop(self._loops)
        await self._finish_jobs(self._grace_s)
        await self._close_components()
        self._state = "closed"

    async def _finish_jobs(self, grace_s: float) -> None:
        """Wait up to `grace_s` for the running jobs (and the nested jobs they start), then stop the rest."""
        deadline = asyncio.get_running_loop().time() + grace_s
        while self._jobs and (left := deadline - asyncio.get_running_loop().time()) > 0:
            await asyncio.wait(set(self._jobs), timeout=left)
        if self._jobs:
            names = sorted({task.get_name().removeprefix("job:") for task in self._jobs})
            log.warning("closing: stopping job(s) %s, still running after %gs", ", ".join(names), grace_s)
            await _stop(self._jobs)

    async def __aenter__(self) -> Application:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def state(self) -> State:
        """`new`, `started`, `closing` (refusing new jobs, waiting for running ones) or `closed`."""
        return self._state

    # components ----------------------------------------------------------------------------------

    def _component_configs(self) -> dict[str, dict[str, object]]:
        """The enabled components' config blocks (checked to be mappings by `load_config`)."""
        configs = {}
        for name, raw in (self.config.get("components") or {}).items():
            if raw is None or raw.get("enabled", True) is False:
                continue
            if not isinstance(raw.get("backend"), str):
                raise ConfigError(f"config key 'components.{name}.backend' is missing")
            configs[str(name)] = raw
        return configs

    def _requirements(
        self, name: str, raw: Mapping[str, object], configured: Mapping[str, object]
    ) -> list[str]:
        try:
            cls = COMPONENTS.get(str(raw["backend"]))
        except KeyError as exc:
            raise ConfigError(f"components.{name}.backend: {exc.args[0]}") from None
        requires = raw.get("requires", [])
        if not isinstance(requires, list) or not all(isinstance(other, str) for other in requires):
            raise ConfigError(f"config key 'components.{name}.requires' must be a list of component names")
        used = [other for other in cls.uses(raw) if other in configured]
        return [*cls.requires, *map(str, requires), *used]

    def _start_order(self) -> list[str]:
        """Topological order of the configured components by their `requires`."""
        configs = self._component_configs()
        order: list[str] = []
        visiting: set[str] = set()

        def visit(name: str, chain: tuple[str, ...]) -> None:
            if name in order:
                return
            if name in visiting:
                raise ComponentError(f"components form a dependency cycle: {' -> '.join((*chain, name))}")
            visiting.add(name)
            for dep in self._requirements(name, configs[name], configs):
                if dep not in configs:
                    raise ComponentError(f"component {name!r} requires {dep!r}, which is not configured")
                visit(dep, (*chain, name))
            visiting.discard(name)
            order.append(name)

        for name in configs:
            visit(name, ())
        return order

    def _build_component(self, name: str) -> Component:
        raw = self._component_configs()[name]
        given = {k: v for k, v in raw.items() if k not in ("backend", "requires", "enabled")}
        cls = COMPONENTS.get(str(raw["backend"]))
        settings: Mapping[str, object] = given
        # the table owns the defaults; the config shows the effective values
        if cls.settings_table is not None:
            settings = cls.settings_table.resolve(f"components.{name}", given)
            raw.update(settings)
        try:
            return cls(self, name, **settings)
        except TypeError as exc:
            raise ConfigError(f"components.{name}: {exc}") from None

    async def _close_components(self) -> None:
        for name in reversed(list(self.components)):
            try:
                await self.components[name].close()
            except Exception:
                log.exception("closing component %s failed", name)
        self.components.clear()

    def component(self, name: str) -> Component:
        """A started component by name (for embedding code and tests); steps use `components.need`."""
        return self.components.need(name, Component)

    # jobs ----------------------------------------------------------------------------------------

    def today(self) -> date:
        return datetime.now(self.tz).date()

    def served_jobs(self) -> list[JobSpec]:
        return [job for job in self.jobs.values() if job.served]

    def _job(self, name: str) -> JobSpec | Response | None:
        """The job by name, None when there is none, or the answer refusing it once close() began
        (a job's own nested jobs still run: close() waits for their job)."""
        if self._state == "new":
            raise RuntimeError("the application is not started; use `async with` or `await app.start()`")
        if self._state != "started" and _INSIDE.get() is not self:
            return Response(
                False,
                f"the application is {self._state}: job {name!r} was refused and did not run, nothing "
                "was written; run it on a started application",
                {},
                "unavailable",
            )
        return self.jobs.get(name)

    async def _tracked(self, name: str, work: Coroutine[Any, Any, Response]) -> Response:
        """Run a job in a task of its own that `close()` waits for and stops only through a cancel
        scope, so a step in a worker thread finishes its write before any component closes."""
        scope = anyio.CancelScope()

        async def body() -> Response:
            _INSIDE.set(self)
            with scope:
                return await work
            return Response(False, self._stopped(name), {}, "unavailable")

        task = asyncio.create_task(body(), name=f"job:{name}")
        self._jobs[task] = scope
        task.add_done_callback(lambda done: self._jobs.pop(done, None))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:  # the caller gave up: the job stops at its next safe point too
            scope.cancel()
            await asyncio.wait({task})
            raise

    def _stopped(self, name: str) -> str:
        return (
            f"job {name!r} was stopped: the application closed while it ran and it did not finish "
            f"within the {self._grace_s:g}s close() allows. A file write already under way was let "
            "finish, its remaining steps did not run, so it may be partly done: check its files, then "
            "run it again"
        )

    async def run(self, job: str, /, **params: object) -> Response:
        """Run a job by name; a stream job's chunks are collected into the answer."""
        spec = self._job(job)
        if isinstance(spec, Response):
            return spec
        if spec is None:
            return Response(False, f"unknown job {job!r}; run `reme help` to list the jobs", {}, "user")
        if spec.kind != "stream":
            return await self._tracked(spec.name, execute(self, spec, params))
        chunks: list[Chunk] = []

        async def collect(chunk: Chunk) -> None:
            chunks.append(chunk)

        response = await self._tracked(spec.name, execute(self, spec, params, emit=collect))
        if not response.answer:
            response.answer = "".join(str(chunk.get("text", "")) for chunk in chunks)
        response.metadata.setdefault("chunks", chunks)
        return response

    async def stream(self, job: str, /, **params: object) -> AsyncGenerator[Chunk, None]:
        """Chunks of a stream job as they come, then an error chunk on failure, always a done marker."""
        spec = self._job(job)
        if spec is None or isinstance(spec, Response) or spec.kind != "stream":
            if isinstance(spec, Response):
                message = str(spec.answer)
            else:
                message = f"unknown job {job!r}" if spec is None else f"job {job!r} is not a stream job"
            yield {"type": "error", "message": message}
            yield {"type": "done", "success": False}
            return
        queue: asyncio.Queue[Chunk | None] = asyncio.Queue()  # None: the job has finished

        async def produce() -> Response:
            try:
                return await self._tracked(spec.name, execute(self, spec, params, emit=queue.put))
            finally:
                await queue.put(None)

        task = asyncio.create_task(produce())
        try:
            while (chunk := await queue.get()) is not None:
                yield chunk
            response = await task
        finally:
            if not task.done():
                task.cancel()
        if not response.success:
            yield {"type": "error", "message": str(response.answer)}
        yield {"type": "done", "success": response.success, "metadata": response.metadata}


async def _stop(tasks: dict[asyncio.Task[Any], anyio.CancelScope]) -> None:
    """Cancel each task's scope and wait until every one has ended (those started meanwhile too)."""
    while tasks:
        for scope in tasks.values():
            scope.cancel()
        done, _ = await asyncio.wait(set(tasks))
        for task in done:
            tasks.pop(task, None)
            if not task.cancelled() and task.exception() is not None:  # a loop's failures are answers
                log.error("task %s failed", task.get_name(), exc_info=task.exception())

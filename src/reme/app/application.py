"""The application: configuration, started components and the job table.

Every interface (HTTP, MCP, CLI, embedded Python) is a thin shell around `Application.run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Any

from reme.app.component import Component, Components
from reme.app.config import ConfigError, load_config
from reme.app.jobs import Chunk, JobSpec, Response, build_jobs, execute
from reme.app.registry import COMPONENTS, load_plugins
from reme.app.scheduling import run_on_schedule, supervise
from reme.app.timezones import resolve_timezone
from reme.errors import Unavailable, kind_of
from reme.index.memory import keep_large_blocks_apart

log = logging.getLogger(__name__)


class ComponentError(Unavailable, RuntimeError):
    """A component could not be built or started."""


class Application:
    """Holds components and jobs; `start()` brings them up, `close()` takes them down in reverse."""

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
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False

    @classmethod
    def from_config(cls, config: str | Path | None = None, **overrides: Any) -> Application:
        """Load `config` (a packaged name or a file) with overrides such as `workspace_dir=...`."""
        return cls(load_config(config, overrides))

    # lifecycle -----------------------------------------------------------------------------------

    async def start(self, *, background: bool = False) -> Application:
        """Build jobs, start components in dependency order; `background` also starts loops and cron."""
        if self._started:
            return self
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
        self._started = True
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
                self._tasks.append(asyncio.create_task(supervise(self, job), name=f"background:{job.name}"))
            elif job.kind == "cron" and cron:
                self._tasks.append(asyncio.create_task(run_on_schedule(self, job), name=f"cron:{job.name}"))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                try:
                    await task
                except Exception:  # a loop's own failures are answers (`job_runs`); this is a bug in the loop
                    log.exception("background task %s failed", task.get_name())
        self._tasks.clear()
        await self._close_components()
        self._started = False

    async def __aenter__(self) -> Application:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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

    def _job(self, name: str) -> JobSpec | None:
        if not self._started:
            raise RuntimeError("the application is not started; use `async with` or `await app.start()`")
        return self.jobs.get(name)

    async def run(self, job: str, /, **params: object) -> Response:
        """Run a job by name; a stream job's chunks are collected into the answer."""
        spec = self._job(job)
        if spec is None:
            return Response(False, f"unknown job {job!r}; run `reme help` to list the jobs", {}, "user")
        if spec.kind != "stream":
            return await execute(self, spec, params)
        chunks: list[Chunk] = []

        async def collect(chunk: Chunk) -> None:
            chunks.append(chunk)

        response = await execute(self, spec, params, emit=collect)
        if not response.answer:
            response.answer = "".join(str(chunk.get("text", "")) for chunk in chunks)
        response.metadata.setdefault("chunks", chunks)
        return response

    async def stream(self, job: str, /, **params: object) -> AsyncGenerator[Chunk, None]:
        """Chunks of a stream job as they come, then an error chunk on failure, always a done marker."""
        spec = self._job(job)
        if spec is None or spec.kind != "stream":
            message = f"unknown job {job!r}" if spec is None else f"job {job!r} is not a stream job"
            yield {"type": "error", "message": message}
            yield {"type": "done", "success": False}
            return
        queue: asyncio.Queue[Chunk | None] = asyncio.Queue()  # None: the job has finished

        async def produce() -> Response:
            try:
                return await execute(self, spec, params, emit=queue.put)
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

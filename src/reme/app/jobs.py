"""Jobs: declared in config as a parameter schema plus an ordered list of steps.

A request is validated against the job's JSON Schema before any step runs; steps then share one
`JobContext`. Whatever goes wrong inside a step becomes `success=false` with a message — a job never
raises into the service.
"""

from __future__ import annotations

import copy
import inspect
import logging
import math
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property, partial
from typing import TYPE_CHECKING, Any, Protocol

import anyio.to_thread

from reme.app.component import Components, Host
from reme.app.config import ConfigError
from reme.app.recent_errors import recent_errors
from reme.app.registry import STEPS, check_step_settings, step_settings
from reme.errors import ErrorKind, ReMeError, UserError, bug_message, kind_of
from reme.jsontypes import JSONObject
from reme.llm import budget as llm_budget
from reme.llm.attempts import reported
from reme.llm.tools import ToolSpec
from reme.workspace.write_log import running

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

log = logging.getLogger(__name__)
Chunk = JSONObject  # one piece of a stream job's answer ({"type": "text", "text": ...}, ...)
Emit = Callable[[Chunk], Awaitable[None]]

JOB_KINDS = ("base", "stream", "background", "cron")
_JOB_KEYS = {
    "annotations",
    "kind",
    "description",
    "parameters",
    "steps",
    "enable_serve",
    "cron",
    "restart_delay",
    "max_restart_delay",
    "agent",
    "enabled",
}
ANNOTATION_KEYS = ("read_only", "destructive", "idempotent", "open_world")
_AGENT_KEYS = {"writes", "paths", "hide"}


@dataclass
class Response:
    """A job's outcome. `error` sorts a failure into the error tree (`reme.errors`) for the service
    (status codes, logs); it is not part of the answer a client receives (`to_dict`)."""

    success: bool = True
    answer: Any = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    error: ErrorKind | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"success": self.success, "answer": self.answer, "metadata": self.metadata}


JobError = ReMeError  # the name steps have always raised: a user error (`reme.errors`)


@dataclass(frozen=True)
class StepSpec:
    backend: str
    settings: dict[str, object]


@dataclass(frozen=True)
class JobSpec:
    name: str
    kind: str
    description: str
    parameters: dict[str, Any]
    steps: tuple[StepSpec, ...]
    enable_serve: bool = True
    cron: str | None = None
    restart_delay: float = 1.0
    max_restart_delay: float = 60.0
    agent: ToolSpec | None = None  # the agent's view of this job, when agents may call it
    annotations: dict[str, bool] = field(default_factory=dict)  # behaviour hints for MCP clients

    @property
    def read_only(self) -> bool:
        """Declared read-only, or an agent tool that does not write."""
        declared = self.annotations.get("read_only")
        if declared is not None:
            return declared
        return self.agent is not None and not self.agent.writes

    @cached_property
    def validator(self) -> Validator:
        """The compiled JSON-Schema validator of the parameters, built once per job."""
        from jsonschema import Draft202012Validator

        return _validator_class()(self.parameters, format_checker=Draft202012Validator.FORMAT_CHECKER)

    @property
    def served(self) -> bool:
        """Reachable over HTTP/MCP: background and cron jobs never are."""
        return self.enable_serve and self.kind in ("base", "stream")


class JobHost(Host, Protocol):
    """What a step sees of the application: a component `Host` that also runs jobs (`Application` is one)."""

    @property
    def jobs(self) -> Mapping[str, JobSpec]: ...

    def served_jobs(self) -> list[JobSpec]: ...

    async def run(self, job: str, /, **params: object) -> Response: ...


@dataclass
class JobContext:
    app: JobHost
    job: JobSpec
    params: dict[str, Any]
    response: Response = field(default_factory=Response)
    state: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, float] = field(default_factory=dict)
    _emit: Emit | None = None

    @property
    def components(self) -> Components:
        """The components the application started, typed (`components.need(name, cls)`)."""
        return self.app.components

    async def emit(self, chunk: Chunk) -> None:
        """Send one chunk to a stream client (ignored for non-stream runs)."""
        if self._emit is not None:
            await self._emit(chunk)

    def add_usage(self, usage: Mapping[str, object]) -> None:
        """Sum token usage (and request counts) over every LLM call of this run."""
        for key, value in usage.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.usage[key] = self.usage.get(key, 0) + value


def build_jobs(raw_jobs: Mapping[str, object]) -> dict[str, JobSpec]:
    """Every configured job except those switched off with `jobs.<name>.enabled: false`."""
    jobs = {}
    for name, raw in raw_jobs.items():
        if raw is not None and not isinstance(raw, dict):
            raise ConfigError(f"config key 'jobs.{name}' must be a mapping")
        enabled = (raw or {}).get("enabled", True)
        if not isinstance(enabled, bool):
            raise ConfigError(f"jobs.{name}.enabled: expected true or false, got {enabled!r}")
        if enabled:
            jobs[name] = build_job(name, raw)
    return jobs


def build_job(name: str, raw: Mapping[str, object] | None) -> JobSpec:
    """Check one job's config block; the error names the bad key."""
    raw = raw or {}
    where = f"jobs.{name}"
    for key in raw:
        if key not in _JOB_KEYS:
            raise ConfigError(f"unknown config key '{where}.{key}' (known: {', '.join(sorted(_JOB_KEYS))})")
    kind = raw.get("kind", "base")
    if not isinstance(kind, str) or kind not in JOB_KINDS:
        raise ConfigError(f"{where}.kind: {kind!r} is not one of {', '.join(JOB_KINDS)}")
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise ConfigError(f"{where}.steps: a job needs a non-empty list of steps")
    steps = []
    for i, step in enumerate(steps_raw):
        backend = step.get("backend") if isinstance(step, dict) else None
        if not isinstance(step, dict) or not isinstance(backend, str):
            raise ConfigError(f"{where}.steps[{i}]: each step needs a 'backend'")
        if backend not in STEPS:
            raise ConfigError(
                f"{where}.steps[{i}].backend: unknown step {backend!r} (known: {', '.join(STEPS.names())})"
            )
        settings = {str(k): v for k, v in step.items() if k != "backend"}
        accepted = step_settings(STEPS.get(backend))
        for key in settings:
            if key not in accepted:
                raise ConfigError(
                    f"unknown config key '{where}.steps[{i}].{key}': step {backend!r} takes "
                    f"{', '.join(accepted) or 'no settings'}"
                )
        check_step_settings(STEPS.get(backend), backend, settings)
        steps.append(StepSpec(backend, settings))
    raw_cron = raw.get("cron")
    cron = raw_cron if isinstance(raw_cron, str) else None
    if kind == "cron":
        from croniter import croniter

        if cron is None or not croniter.is_valid(cron):
            raise ConfigError(f"{where}.cron: {raw_cron!r} is not a valid cron expression")
    parameters = _normalise_schema(where, raw.get("parameters"))
    description = str(raw.get("description", "")).strip()
    agent = _agent_tool(where, name, description, parameters, raw.get("agent"))
    return JobSpec(
        name=name,
        kind=kind,
        description=description,
        parameters=parameters,
        steps=tuple(steps),
        enable_serve=bool(raw.get("enable_serve", True)),
        cron=cron,
        restart_delay=_seconds(where, "restart_delay", raw.get("restart_delay", 1.0)),
        max_restart_delay=_seconds(where, "max_restart_delay", raw.get("max_restart_delay", 60.0)),
        agent=agent,
        annotations=_annotations(where, raw.get("annotations")),
    )


def _seconds(where: str, key: str, value: object) -> float:
    """A delay in seconds from the job's block; the error names the key."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"{where}.{key} must be a number of seconds, got {value!r}")
    return float(value)


def _annotations(where: str, raw: object) -> dict[str, bool]:
    """`annotations: {read_only, destructive, idempotent, open_world}`, each a boolean."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}.annotations must be a mapping of {', '.join(ANNOTATION_KEYS)}")
    known = ", ".join(ANNOTATION_KEYS)
    for key, value in raw.items():
        if key not in ANNOTATION_KEYS:
            raise ConfigError(f"unknown config key '{where}.annotations.{key}' (known: {known})")
        if not isinstance(value, bool):
            raise ConfigError(f"{where}.annotations.{key} must be true or false, got {value!r}")
    return {str(key): bool(value) for key, value in raw.items()}


def _agent_tool(
    where: str, name: str, description: str, parameters: dict[str, Any], raw: object
) -> ToolSpec | None:
    """The job's `agent:` block (`writes`, `paths`, `hide`) as a tool spec; names must be parameters."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}.agent must be a mapping with keys {', '.join(sorted(_AGENT_KEYS))}")
    for key in raw:
        if key not in _AGENT_KEYS:
            raise ConfigError(
                f"unknown config key '{where}.agent.{key}' (known: {', '.join(sorted(_AGENT_KEYS))})"
            )
    properties = parameters.get("properties", {})
    default_paths = ["path"] if "path" in properties else []
    lists = {key: raw.get(key, default_paths if key == "paths" else []) for key in ("paths", "hide")}
    for key, names in lists.items():
        if not isinstance(names, list) or any(n not in properties for n in names):
            raise ConfigError(
                f"{where}.agent.{key}: must list parameters of the job (known: {', '.join(properties)})"
            )
    return ToolSpec.of_job(
        name,
        description,
        parameters,
        hide=lists["hide"],
        paths=lists["paths"],
        writes=bool(raw.get("writes")),
    )


def _normalise_schema(where: str, raw: object) -> dict[str, Any]:
    """The job's parameter schema, an object whose unknown properties are refused unless it says otherwise."""
    from jsonschema import Draft202012Validator, SchemaError

    if raw and not isinstance(raw, dict):
        raise ConfigError(f"{where}.parameters must be a JSON Schema mapping")
    schema: dict[str, Any] = copy.deepcopy(raw) if isinstance(raw, dict) else {}
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema.setdefault("additionalProperties", False)
    for name, prop in (schema["properties"] or {}).items():
        stray = [key for key, value in prop.items() if value is None] if isinstance(prop, dict) else []
        if stray:  # YAML's `{description: a, b}` silently makes `b` a key with no value
            raise ConfigError(
                f"{where}.parameters.properties.{name}: key {stray[0]!r} has no value"
                " (quote a description that contains a comma)"
            )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ConfigError(f"{where}.parameters: invalid JSON Schema: {exc.message}") from None
    return schema


# In a `pattern`: an escape, a [class] (both kept as they are), or a `$` (the end anchor).
_PATTERN_PARTS = re.compile(r"\\.|\[(?:\\.|[^\]\\])*\]|\$")


@cache
def _validator_class() -> type[Validator]:
    """Draft 2020-12 reading `$` in a `pattern` as ECMA-262 (JSON Schema's regex dialect) does: the
    end of the text. Python's `$` also matches before a final newline, so `^[0-9a-f]{64}$` took a
    hash pasted with its newline, which then failed later with a misleading message."""
    from jsonschema import Draft202012Validator, validators

    return validators.extend(Draft202012Validator, {"pattern": _pattern})


def _pattern(
    validator: Validator, pattern: str, instance: object, schema: object
) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not re.search(_ecma_pattern(pattern), str(instance)):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _ecma_pattern(pattern: str) -> str:
    """`pattern` with each end anchor `$` as Python's `\\Z`."""
    return _PATTERN_PARTS.sub(lambda part: r"\Z" if part[0] == "$" else part[0], pattern)


class ParameterError(UserError, ValueError):
    """The request does not match the job's parameter schema."""


MAX_PARAM_DEPTH = 100  # nesting of arrays and objects in one parameter value (as the HTTP body's)


def validate_params(job: JobSpec, params: Mapping[str, object]) -> dict[str, Any]:
    """Params checked against the schema, with schema defaults filled in; raise ParameterError.

    Before the schema: values nested too deeply (the schema checker would recurse out of the
    stack), numbers that are not finite (NaN passes every `minimum`) and text that is not Unicode
    (an unpaired surrogate, which no file or process can take) are refused by name. After it, a
    whole-number float given for an `integer` parameter (`5.0`, which JSON Schema accepts) is an int."""
    if not isinstance(params, dict):
        raise ParameterError(f"parameters of job {job.name!r} must be a JSON object")
    for key, value in params.items():
        _check_value(str(key), value)
    errors = sorted(job.validator.iter_errors(params), key=lambda e: (len(e.path), str(e.path)))
    if errors:
        raise ParameterError("; ".join(_describe(job, e) for e in errors[:5]))
    filled = dict(params)
    for key, prop in job.parameters.get("properties", {}).items():
        if not isinstance(prop, dict):
            continue
        if key not in filled and "default" in prop:
            filled[key] = copy.deepcopy(prop["default"])
        value = filled.get(key)
        if isinstance(value, float) and value.is_integer() and "integer" in _types(prop):
            filled[key] = int(value)
    return filled


def _types(prop: Mapping[str, Any]) -> list[str]:
    kind = prop.get("type")
    return [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else []


def _check_value(name: str, value: object) -> None:
    """Refuse, naming the parameter, a value nested deeper than MAX_PARAM_DEPTH, a number that is
    not finite or text with an unpaired surrogate (walked without recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise ParameterError(
                        f"parameter {name!r} holds an unpaired surrogate ({item[exc.start]!r}), which is "
                        "not Unicode text; send valid UTF-8"
                    ) from None
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ParameterError(f"parameter {name!r} must be a finite number (got {item})")
        elif isinstance(item, dict | list):
            if depth >= MAX_PARAM_DEPTH:
                raise ParameterError(
                    f"parameter {name!r} is nested more than {MAX_PARAM_DEPTH} levels deep; flatten it"
                )
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def _describe(job: JobSpec, error: ValidationError) -> str:
    properties = job.parameters.get("properties", {})
    where = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "additionalProperties" and not where:
        unknown = sorted(set(error.instance) - set(properties))
        allowed = ", ".join(sorted(properties)) or "none"
        return f"unknown parameter {', '.join(map(repr, unknown))} for job {job.name!r} (allowed: {allowed})"
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in error.instance]
        prefix = f"{where}: " if where else ""
        return f"{prefix}missing required parameter {', '.join(map(repr, missing))} for job {job.name!r}"
    if error.validator == "type":
        return f"parameter {where!r} must be of type {error.validator_value} (got {type(error.instance).__name__})"
    if error.validator in ("maxLength", "maxItems", "maxProperties"):
        unit = {"maxLength": "characters", "maxItems": "items", "maxProperties": "keys"}[error.validator]
        return (
            f"parameter {where!r} is too long: {len(error.instance)} {unit}, at most "
            f"{error.validator_value} allowed; shorten it"
        )
    if error.validator == "format":
        return f"parameter {where!r}: {error.instance!r} is not a valid {error.validator_value}"
    return f"parameter {where!r}: {error.message}" if where else error.message


async def execute(
    app: JobHost,
    job: JobSpec,
    params: Mapping[str, object],
    emit: Emit | None = None,
    *,
    scheduled: bool = False,
) -> Response:
    """Validate, then run the job's steps in order; always return a Response. `scheduled`: a
    background or cron run, which no caller waits for."""
    try:
        checked = validate_params(job, params)
    except ParameterError as exc:
        return Response(False, exc.message, {}, "user")
    return await run_steps(app, job, checked, emit, scheduled=scheduled)


async def run_steps(
    app: JobHost,
    job: JobSpec,
    checked: dict[str, Any],
    emit: Emit | None = None,
    *,
    scheduled: bool = False,
) -> Response:
    """Run the steps on parameters `validate_params` already accepted; always return a Response."""
    ctx = JobContext(app=app, job=job, params=checked, _emit=emit)
    try:
        # files written are this job's (sync); model requests share one budget
        with running(job.name), llm_budget.job_run():
            for step in job.steps:
                fn = STEPS.get(step.backend)
                if inspect.iscoroutinefunction(fn):
                    await fn(ctx, **step.settings)
                else:
                    await anyio.to_thread.run_sync(partial(fn, ctx, **step.settings))
        response = ctx.response
    except Exception as exc:  # a failing step must never crash the service: every failure becomes an answer
        response = failed(job.name, exc, ctx.response.metadata)
    if not response.success:  # for the status view (`recent_errors` job)
        mistake = response.error == "user" and not scheduled  # the caller was told, and can fix it
        recent_errors(app).add(job.name, str(response.answer), caller_mistake=mistake)
    if ctx.usage:
        response.metadata.setdefault("usage", dict(ctx.usage))
    if isinstance(response.metadata.get("usage"), dict):
        response.metadata["usage"] = reported(response.metadata["usage"])
    return response


def failed(job: str, exc: Exception, metadata: Mapping[str, object]) -> Response:
    """The answer for a job that raised `exc`, by its place in the error tree (docs/architecture.md).

    A user error or an unavailable resource answers with its message, no traceback; a bug logs its
    traceback and says it is a bug.
    """
    kind = kind_of(exc)
    if isinstance(exc, ReMeError):
        return Response(False, exc.message, {**metadata, **exc.metadata}, kind)
    if kind != "bug":
        return Response(False, str(exc) or type(exc).__name__, dict(metadata), kind)
    log.error("job %s failed (a bug)", job, exc_info=exc)
    return Response(False, bug_message(exc), dict(metadata), kind)

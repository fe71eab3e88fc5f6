"""System jobs: version, help, health_check, status, app_config."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from reme import __version__
from reme.app.component import Report
from reme.app.config import redact
from reme.app.jobs import JobContext, JobError
from reme.app.local_jobs import is_local, local_command
from reme.app.registry import COMPONENTS, register_step
from reme.app.spelling import did_you_mean
from reme.errors import kind_of

log = logging.getLogger(__name__)


@register_step("version")
def version(ctx: JobContext) -> None:
    ctx.response.answer = __version__
    ctx.response.metadata["version"] = __version__


@register_step("help")
def help_(ctx: JobContext) -> None:
    if ctx.params.get("component"):
        _component_help(ctx, ctx.params["component"])
        return
    name = ctx.params.get("job")
    jobs = list(ctx.app.jobs.values())
    if name:
        jobs = [job for job in jobs if job.name == name]
        if not jobs:
            hint = did_you_mean(name, (job.name for job in ctx.app.served_jobs()))
            raise JobError(f"unknown job {name!r}{hint}; run `reme help` to list the jobs")
    entries: list[dict[str, Any]] = [
        {
            "name": job.name,
            "kind": job.kind,
            "description": job.description,
            "parameters": job.parameters,
            "served": job.served,
            **({"local_command": local_command(job, ctx.app.workspace_dir)} if is_local(job) else {}),
        }
        for job in sorted(jobs, key=lambda j: j.name)
    ]
    ctx.response.metadata["jobs"] = entries
    lines = []
    for entry in entries:
        params = entry["parameters"].get("properties", {})
        required = set(entry["parameters"].get("required", []))
        signature = " ".join(f"{p}=" if p in required else f"[{p}=]" for p in params)
        kind = "" if entry["kind"] == "base" else f" ({entry['kind']})"
        kind += " (local: not served)" if "local_command" in entry else ""
        lines.append(f"{entry['name']}{kind} {signature}".rstrip())
        if entry["description"]:
            lines.append(f"    {entry['description']}")
        if "local_command" in entry:
            lines.append(f"    run it here with `{entry['local_command']}`")
        if name:
            lines += _parameter_lines(entry["name"], entry["parameters"])
    ctx.response.answer = "\n".join(lines)


def _component_help(ctx: JobContext, name: str) -> None:
    """A component's settings from its class's table: one owner for defaults, checks and this help."""
    blocks = ctx.app.config.get("components")
    blocks = blocks if isinstance(blocks, dict) else {}
    block = blocks.get(name)
    backend = block.get("backend") if isinstance(block, dict) else None
    if not isinstance(backend, str):
        raise JobError(f"no component {name!r} is configured{did_you_mean(name, blocks)}")
    table = COMPONENTS.get(backend).settings_table
    if table is None:
        ctx.response.answer = (
            f"{name} (backend {backend}) declares no settings table: see components.{name} in the config"
        )
        ctx.response.metadata["settings"] = []
        return
    rows = [
        {"name": row.name, "type": row.expected, "default": row.default, "help": row.help} for row in table
    ]
    ctx.response.metadata["settings"] = rows
    lines = [f"components.{name} (backend {backend}):", *(f"  {line}" for line in table.help().splitlines())]
    ctx.response.answer = "\n".join(lines)


def _type_text(schema: dict[str, Any]) -> str:
    """`string`, `integer >= 1`, `one of forward, backward`, `string | list of string`, ..."""
    if "enum" in schema:
        return "one of " + ", ".join(str(value) for value in schema["enum"])
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return " | ".join(_type_text(option) for option in options)
    kinds = schema.get("type", "any")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    text = " | ".join(
        f"list of {_type_text(schema['items'])}" if kind == "array" and "items" in schema else str(kind)
        for kind in kinds
    )
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f"{text} {low}..{high}"
    if low is not None or high is not None:
        return f"{text} >= {low}" if low is not None else f"{text} <= {high}"
    return text


def _parameter_lines(job: str, parameters: dict[str, Any]) -> list[str]:
    """One line per parameter: name, type, required or default, description."""
    properties = parameters.get("properties", {})
    if not properties:
        return ["  (no parameters)"]
    required = parameters.get("required", [])
    lines = ["", "parameters:"]
    for param, schema in properties.items():
        need = (
            "required"
            if param in required
            else f"default {json.dumps(schema['default'])}"
            if "default" in schema
            else "optional"
        )
        about = f" — {schema['description']}" if schema.get("description") else ""
        lines.append(f"  {param} ({_type_text(schema)}; {need}){about}")
    if required:
        lines.append(f"on the CLI a bare value fills {required[0]}: `reme {job} VALUE`")
    return lines


@register_step("health_check")
async def health_check(ctx: JobContext) -> None:
    """Each component's health, asked live where a component can (`probe()`: the LLM endpoint)."""
    report: dict[str, Report] = {}
    for name, component in ctx.app.components.items():
        try:
            await component.repair()
            report[name] = await component.probe()
        except Exception as exc:  # one broken component must not hide the others' health
            if kind_of(exc) == "bug":
                log.error("health of component %s failed (a bug)", name, exc_info=exc)
            report[name] = {"status": "error", "reason": f"{type(exc).__name__}: {exc}"}
    # "unconfigured" (e.g. no LLM credentials) is a legitimate state: only errors make the service unhealthy.
    healthy = all(entry.get("status") != "error" for entry in report.values())
    ctx.response.success = healthy
    ctx.response.metadata["components"] = report
    ctx.response.answer = "\n".join(_health_line(name, entry) for name, entry in report.items()) or "ok"


def _health_line(name: str, entry: Report) -> str:
    """`llm: error (cannot reach ...)`: the status, and its reason when it is not ok."""
    missing = entry.get("missing")
    reason = entry.get("reason") or entry.get("error") or entry.get("message")
    if not reason and missing:
        reason = "missing " + (", ".join(map(str, missing)) if isinstance(missing, list) else str(missing))
    return f"{name}: {entry.get('status')}" + (
        f" ({reason})" if reason and entry.get("status") != "ok" else ""
    )


def _folder_size(root: Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _dirnames, filenames in os.walk(root):
        for filename in filenames:
            try:
                size += os.stat(os.path.join(dirpath, filename)).st_size
                files += 1
            except OSError:
                continue
    return files, size


@register_step("status")
def status(ctx: JobContext) -> None:
    import psutil

    root = ctx.app.workspace_dir
    folders = {}
    for child in sorted(root.iterdir()) if root.is_dir() else []:
        if child.is_dir():
            files, size = _folder_size(child)
            folders[child.name] = {"files": files, "bytes": size}
    memory = psutil.Process().memory_info()
    components = {
        name: stats for name, component in ctx.app.components.items() if (stats := component.stats())
    }
    ctx.response.metadata.update(
        {"workspace_dir": str(root), "folders": folders, "rss_bytes": memory.rss, "components": components}
    )
    lines = [f"workspace: {root}", f"memory: {memory.rss / 2**20:.1f} MiB resident"]
    lines += [f"{name}/: {info['files']} files, {info['bytes']} bytes" for name, info in folders.items()]
    for name, stats in components.items():
        lines.append(f"{name}: " + ", ".join(f"{k}={v}" for k, v in stats.items()))
    ctx.response.answer = "\n".join(lines)


@register_step("app_config")
def app_config(ctx: JobContext) -> None:
    import yaml

    redacted = {key: redact(value, key) for key, value in ctx.app.config.items()}
    config = {**{k: v for k, v in redacted.items() if k != "jobs"}, "jobs": redacted.get("jobs", {})}
    ctx.response.metadata["config"] = config
    ctx.response.answer = yaml.safe_dump(config, sort_keys=False, allow_unicode=True)

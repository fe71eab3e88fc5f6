"""The `reme` command: start the service, run one job in-process, or call a job on a running service.

Start-up time is part of the interface: calling a job imports only the standard library and a
few small reme modules; the application, FastAPI, uvicorn and the MCP SDK load only for
`reme start`, and rich only when printing to a terminal.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from reme.app.values import parse_assignments

USAGE = """\
usage:
  reme start [config=NAME|PATH] [workspace_dir=DIR] [section.key=VALUE ...]
        start the configured service (service.backend=http|mcp, service.transport=stdio|sse|streamable-http,
        service.host=, service.port=, service.auth_token=)
  reme start job=NAME [config=...] [workspace_dir=DIR] [param=VALUE ...]
        run one job in-process and exit with its status
  reme JOB [param=VALUE ...] [--json] [host=H port=P | workspace_dir=DIR]
        call JOB on the running service (`reme help` lists the jobs, `reme JOB --help` shows one)

values: JSON arrays/objects, numbers and booleans are typed; `007` and everything else stay strings.
--json prints the whole Response; the exit status is 0 when success is true, 1 otherwise.
"""
DISCOVERY_KEYS = ("host", "port", "workspace_dir")
START_CONFIG_KEYS = ("config", "workspace_dir", "timezone")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    asks_help = any(arg in ("-h", "--help") for arg in args)
    words = [arg for arg in args if arg not in ("--json", "-h", "--help")]
    if not words:
        print(USAGE, file=sys.stdout if asks_help else sys.stderr, end="")
        return 0 if asks_help else 2
    command, rest = words[0], words[1:]
    if command in ("--version", "-V"):
        from reme import __version__

        print(__version__)
        return 0
    if asks_help:
        if command == "start":
            print(USAGE, end="")
            return 0
        command, rest = "help", [f"job={command}", *rest]
    try:
        assignments = parse_assignments(rest)
    except ValueError as exc:
        print(f"reme: {exc}\n\n{USAGE}", file=sys.stderr, end="")
        return 2
    try:
        return start(assignments, as_json) if command == "start" else call(command, assignments, as_json)
    except KeyboardInterrupt:
        return 130


# calling a running service ---------------------------------------------------------------------


def _token() -> str | None:
    """`REME_API_TOKEN` from the environment, else from a `.env` file here (as the service reads it)."""
    token = os.environ.get("REME_API_TOKEN")
    if token is None and os.path.isfile(".env"):
        from dotenv import dotenv_values

        token = dotenv_values(".env").get("REME_API_TOKEN")
    return token or None


def call(job: str, assignments: dict[str, Any], as_json: bool) -> int:
    from reme.service.client import ServiceUnreachable, call_job
    from reme.service.service_info import discover

    where = {key: assignments.pop(key) for key in DISCOVERY_KEYS if key in assignments}
    try:
        info = discover(
            host=None if where.get("host") is None else str(where["host"]),
            port=where.get("port"),
            workspace_dir=None if where.get("workspace_dir") is None else str(where["workspace_dir"]),
        )
    except ValueError as exc:
        print(f"reme: {exc}", file=sys.stderr)
        return 2
    try:
        if info.backend == "mcp":
            import asyncio

            from reme.service.mcp_client import call_tool

            return render(asyncio.run(call_tool(info, job, assignments, _token())), as_json, job)
        reply = call_job(info, job, assignments, _token())
    except ServiceUnreachable as exc:
        print(
            f"reme: {exc}\n"
            "start a service with `reme start` (add workspace_dir=DIR for another workspace), "
            f"or run the job in-process with `reme start job={job} ...`",
            file=sys.stderr,
        )
        return 1
    except (OSError, ValueError) as exc:
        print(f"reme: calling {job!r} on {info.url} failed: {exc}", file=sys.stderr)
        return 1
    if reply.chunks is None:
        return render(reply.response or {}, as_json, job)
    try:
        return render_stream(reply.chunks, as_json)
    except OSError as exc:
        print(f"\nreme: the stream from {info.url} broke off: {exc}", file=sys.stderr)
        return 1


# running in-process ----------------------------------------------------------------------------


def start(assignments: dict[str, Any], as_json: bool) -> int:
    """`reme start`: the service, or with `job=` one job in-process."""
    import asyncio
    import logging

    from reme.app.application import ComponentError
    from reme.app.config import ConfigError, load_config
    from reme.service.security import ServiceConfigError

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    job = assignments.pop("job", None)
    config_name = assignments.pop("config", None)
    if job is None:
        overrides = assignments
    else:
        overrides = {k: v for k, v in assignments.items() if "." in k or k in START_CONFIG_KEYS}
    params = {k: v for k, v in assignments.items() if k not in overrides}
    try:
        config = load_config(None if config_name is None else str(config_name), overrides)
        if job is None:
            from reme.service.settings import service_settings

            service_settings(config)  # refuse an unsafe or unknown setting before the heavy imports
            from reme.service.runner import run_service

            asyncio.run(run_service(config))
            return 0
        return asyncio.run(run_once(config, str(job), params, as_json))
    except (ConfigError, ServiceConfigError, ComponentError) as exc:
        print(f"reme: {exc}", file=sys.stderr)
        return 2


async def run_once(config: dict[str, Any], job: str, params: dict[str, Any], as_json: bool) -> int:
    from reme.app.application import Application

    async with Application(config) as app:
        spec = app.jobs.get(job)
        if spec is not None and spec.kind == "stream":
            success = False
            async for chunk in app.stream(job, **params):
                success = show_chunk(chunk, as_json)
            return 0 if success else 1
        return render((await app.run(job, **params)).to_dict(), as_json, job)


# output ----------------------------------------------------------------------------------------


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def render(response: dict[str, Any], as_json: bool, job: str | None = None) -> int:
    """Print a Response (the answer, or all of it with --json); return the exit status."""
    success = bool(response.get("success"))
    if as_json:
        print(_dumps(response))
        return 0 if success else 1
    answer = response.get("answer", "")
    stream = sys.stdout if success else sys.stderr
    if stream.isatty():
        from rich.console import Console

        from reme.service.readable import readable

        answer = readable(job, answer) or answer

        console = Console(file=stream, highlight=False)
        if not success:
            console.print("error:", style="bold red", end=" ")
        if isinstance(answer, str):
            console.print(answer, markup=False, soft_wrap=True)  # text stays byte-exact
        else:
            console.print_json(data=answer, default=str)
    else:
        text = answer if isinstance(answer, str) else _dumps(answer)
        print(text if success else f"error: {text}", file=stream)
    return 0 if success else 1


def render_stream(chunks: Any, as_json: bool) -> int:
    """Print chunks as they arrive; the exit status comes from the final `done` chunk."""
    success = False
    for chunk in chunks:
        success = show_chunk(chunk, as_json)
    return 0 if success else 1


def show_chunk(chunk: Any, as_json: bool) -> bool:
    """Print one chunk (text chunks as text, others as JSON lines); True only for a successful `done`."""
    if not isinstance(chunk, dict):
        chunk = {"type": "data", "value": chunk}
    kind = chunk.get("type")
    if as_json:
        print(json.dumps(chunk, ensure_ascii=False, default=str), flush=True)
    elif kind == "error":
        print(f"\nerror: {chunk.get('message', '')}", file=sys.stderr, flush=True)
    elif kind == "done":
        print(flush=True)
    elif isinstance(chunk.get("text"), str):
        print(chunk["text"], end="", flush=True)
    else:
        print(json.dumps(chunk, ensure_ascii=False, default=str), flush=True)
    return kind == "done" and bool(chunk.get("success"))

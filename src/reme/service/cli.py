"""The `reme` command: start the service, run one job in-process, or call a job on a running service.

Start-up time is part of the interface: calling a job imports only the standard library and a
few small reme modules; the application, FastAPI, uvicorn and the MCP SDK load only for
`reme start`, and rich only when printing to a terminal.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from reme.app.values import parse_value
from reme.jsontypes import JSONObject, JSONValue
from reme.service.cli_values import ArgumentError, job_params, repeated_key, split_words
from reme.service.client import dig

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from reme.service.client import Reply
    from reme.service.service_info import ServiceInfo

USAGE = """\
usage:
  reme start [config=NAME|PATH] [workspace_dir=DIR] [section.key=VALUE ...]
        start the configured service (service.backend=http|mcp, service.transport=stdio|sse|streamable-http,
        service.host=, service.port=, service.auth_token=)
  reme stop [workspace_dir=DIR]
        stop the service of this workspace (the one its metadata/service.json names)
  reme start job=NAME [config=...] [workspace_dir=DIR] [param=VALUE ...]
        run one job in-process and exit with its status
  reme JOB [VALUE] [param=VALUE ...] [--json] [host=H port=P | workspace_dir=DIR]
        call JOB on the running service (`reme help` lists the jobs, `reme JOB --help` shows one);
        a bare VALUE fills the job's first required parameter (`reme search solar`)
  reme hook EVENT [workspace_dir=DIR]
        a Claude Code hook (SessionStart, UserPromptSubmit, Stop, PreCompact, SessionEnd) reading its JSON on
        stdin, or `capture source=codex transcript_path=FILE`; see docs/integrations.md
  reme install claude-code [--project] [--uninstall] [--prompt-recall] [workspace_dir=DIR]
        write (or remove) reme's MCP server, hooks and skill into Claude Code's settings
  reme doctor [config=...] [workspace_dir=DIR]
        check the install, workspace, service, index and LLM, and say what to do about each problem
  reme import claude-code|codex|chatgpt|mem0|obsidian PATH [folder=...] [dry_run=true] [workspace_dir=DIR]
        import past agent sessions, a memory file, export or vault in-process (docs/imports.md); a second
        import creates nothing (claude-code, codex without PATH: every project's sessions)
  reme export [format=markdown|json] [bucket=NAME] [out=FILE] [workspace_dir=DIR]
        the digest as one Markdown bundle or JSON, to FILE or stdout

values are typed by the job's parameter schema: `query=2024` stays a string, `limit=3` is a number
where the schema wants one, JSON for list and object parameters; config overrides are typed
generically (JSON arrays/objects, numbers, booleans; `007` stays a string).
the workspace: workspace_dir=, else $REME_WORKSPACE_DIR, else the nearest .reme/ of this folder or a
parent, else ~/.reme (`reme start` alone serves ./.reme); the CLI talks only to that workspace's
service, never to another one, and names it after each change (docs/workspaces.md).
--json prints the whole Response; the exit status is 0 when success is true, 1 otherwise.
"""
DISCOVERY_KEYS = ("host", "port", "workspace_dir")
START_CONFIG_KEYS = ("config", "workspace_dir", "timezone")


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # an ascii terminal shows `caf\xe9`, not a traceback
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    try:
        status = _main(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # inside the try: a closed pipe shows up here for short answers
        return status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `reme status | head`: the reader left; end quietly, as cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
        return 141
    except (
        Exception
    ) as exc:  # a bug (expected failures are answered where they happen): traceback, then say so
        import traceback

        from reme.errors import bug_message

        traceback.print_exc()
        print(f"reme: {bug_message(exc)}", file=sys.stderr)
        return 1


def _main(args: list[str]) -> int:
    as_json = "--json" in args
    asks_help = any(arg in ("-h", "--help") for arg in args)
    words = [arg for arg in args if arg not in ("--json", "-h", "--help")]
    if not words:
        print(USAGE, file=sys.stdout if asks_help else sys.stderr, end="")
        return 0 if asks_help else 2
    command, rest = words[0], words[1:]
    if "=" in command:  # `reme port=1234 status`: the value would be taken for the job's name
        print(f"reme: the job (or command) comes first, got {command!r}\n\n{USAGE}", file=sys.stderr, end="")
        return 2
    if command == "hook":  # Claude Code's hooks: JSON on stdin, always fast, never blocking
        from reme.service.hooks import main as hook_main

        return hook_main(args[args.index(command) + 1 :])
    if command == "install":
        from reme.service.install import main as install_main

        return install_main(args[args.index(command) + 1 :])
    if command in ("--version", "-V"):
        from reme import __version__

        print(__version__)
        return 0
    if command == "help" and rest and "=" not in rest[0]:  # `reme help search` is `reme search --help`
        command, rest, asks_help = rest[0], rest[1:], True
    if asks_help:
        if command in ("start", "stop", "doctor", "import", "export", "hook", "install"):
            print(USAGE, end="")
            return 0
        where = [word for word in rest if word.partition("=")[0] in DISCOVERY_KEYS]  # not the job's values
        command, rest = "help", [f"job={command}", *where]
    twice = repeated_key(rest) if command != "start" else None  # config overrides: the last one wins
    if twice is not None:
        print(f"reme: {twice}= is given twice; give it once", file=sys.stderr)
        return 2
    assigned, bare = split_words(rest)
    if "workspace_dir" in assigned and not assigned["workspace_dir"].strip():
        # `workspace_dir=$UNSET`: the default workspace would be used, perhaps ./.reme of this folder
        print(
            "reme: workspace_dir= is empty; name the workspace folder or leave the key out", file=sys.stderr
        )
        return 2
    if bare and command in ("start", "doctor"):
        print(f"reme: expected key=value, got {bare[0]!r}\n\n{USAGE}", file=sys.stderr, end="")
        return 2
    if command in ("doctor", "import", "export") and not {"workspace_dir", "config"} & set(assigned):
        from reme.service.service_info import default_workspace

        assigned["workspace_dir"] = default_workspace()  # the workspace a job call would reach
    if command == "doctor":
        from reme.service.doctor import doctor

        return doctor({key: parse_value(value) for key, value in assigned.items()}, as_json)
    if command == "start":
        return start(assigned, as_json)
    if command == "stop":
        return stop(assigned, bare)
    if command in ("import", "export"):
        return transfer(command, assigned, bare, as_json)
    return call(command, assigned, bare, as_json)


# calling a running service ---------------------------------------------------------------------


class Refused(Exception):
    """The call cannot go ahead; the message says why and what to do (exit status 1)."""


class Remote:
    """One service, as found: calls a job over its transport, checking which workspace answers."""

    def __init__(self, info: ServiceInfo, token: str | None, workspace: str | None) -> None:
        self.info = info
        self.token = token
        self.workspace = workspace  # absolute; the service must serve exactly this folder

    def call(self, job: str, params: JSONObject) -> Reply:
        """A client Reply; raises ServiceUnreachable, Refused, OSError or ValueError."""
        from reme.service.client import Reply, call_job

        if self.info.backend == "mcp":  # the service refuses another workspace itself (409)
            import asyncio

            from reme.service.mcp_client import call_tool

            response = asyncio.run(call_tool(self.info, job, params, self.token, self.workspace))
            return Reply(200, response=response)
        reply = call_job(self.info, job, params, self.token, self.workspace)
        if self.workspace is not None:
            self._check(reply)
        return reply

    def _check(self, reply: Reply) -> None:
        from reme.service.identity import same_workspace

        if reply.status == 409 and reply.response is not None:
            raise Refused(str(reply.response.get("answer")))
        if reply.workspace is None or not same_workspace(reply.workspace, str(self.workspace)):
            raise Refused(
                f"the service at {self.info.url} serves {reply.workspace or 'an unnamed workspace'}, "
                f"not {self.workspace}; its answer is not shown. "
                f"Start a service for this workspace with `reme start workspace_dir={self.workspace}`"
            )

    def parameters(self, job: str) -> JSONObject | None:
        """The job's parameter schema from the service's `help`; None when the service has no help."""
        reply = self.call("help", {"job": job})
        response = reply.response or {}
        if response.get("success"):
            entries = dig(response, "metadata", "jobs")
            first = entries[0] if isinstance(entries, list) and entries else None
            parameters = dig(first, "parameters")
            return parameters if isinstance(parameters, dict) else None
        answer = str(response.get("answer", ""))
        if answer.startswith(f"unknown job {job!r}"):
            raise Refused(answer)
        return None


def call(job: str, assigned: dict[str, str], bare: list[str], as_json: bool) -> int:
    from reme.service.client import ServiceUnreachable
    from reme.service.identity import resolve
    from reme.service.service_info import ENV_SERVICE_INFO, NoService, default_workspace, discover

    where = {key: assigned.pop(key) for key in DISCOVERY_KEYS if key in assigned}
    addressed = "host" in where or "port" in where or bool(os.environ.get(ENV_SERVICE_INFO))
    folder = where.get("workspace_dir") or (None if addressed else default_workspace())
    try:
        info = discover(host=where.get("host"), port=where.get("port"), workspace_dir=folder)
    except NoService as exc:
        start_here = (
            "`reme start`" if folder and _is_local(folder) else f"`reme start workspace_dir={folder}`"
        )
        print(
            f"reme: {exc}; nothing was done.\n"
            f"start one with {start_here}, pass workspace_dir=DIR for another workspace, "
            f"or run the job in-process with `reme start job={job} workspace_dir={folder} ...`",
            file=sys.stderr,
        )
        return 1
    except ValueError as exc:
        print(f"reme: {exc}", file=sys.stderr)
        return 2
    from reme.service.client import client_token

    remote = Remote(info, client_token(), None if folder is None else resolve(folder))
    try:
        params: JSONObject = {}
        if assigned or bare:
            params = job_params(assigned, bare, remote.parameters(job), job)
        if job == "reindex" and sys.stderr.isatty() and not as_json:
            from reme.service.cli_progress import with_bar

            reply = with_bar(remote, lambda: remote.call(job, params))
        else:
            reply = remote.call(job, params)
    except ServiceUnreachable as exc:
        print(
            f"reme: {exc}\n"
            "start a service with `reme start` (add workspace_dir=DIR for another workspace), "
            f"or run the job in-process with `reme start job={job} ...`",
            file=sys.stderr,
        )
        return 1
    except Refused as exc:
        print(f"reme: {exc}", file=sys.stderr)
        return 1
    except ArgumentError as exc:  # the words, not the service: say how to write them
        print(f"reme: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"reme: calling {job!r} on {info.url} failed: {exc}", file=sys.stderr)
        return 1
    if reply.chunks is None:
        return render(reply.response or {}, as_json, job)
    try:
        return render_stream(reply.chunks, as_json)
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        print(f"\nreme: the stream from {info.url} broke off: {exc}", file=sys.stderr)
        return 1


def _is_local(folder: str) -> bool:
    """Whether `folder` is the `.reme/` of the current folder, which a plain `reme start` serves."""
    return os.path.abspath(os.path.expanduser(folder)) == os.path.abspath(".reme")


# running in-process ----------------------------------------------------------------------------


def stop(assigned: dict[str, str], bare: list[str]) -> int:
    """`reme stop`: the service of `workspace_dir=` (default: this folder's workspace), by its service file."""
    from reme.service.lifecycle import stop as stop_service
    from reme.service.service_info import default_workspace

    extra = bare or [key for key in assigned if key != "workspace_dir"]
    if extra:
        print(f"reme: usage: reme stop [workspace_dir=DIR] (got {extra[0]!r})", file=sys.stderr)
        return 2
    status, message = stop_service(assigned.get("workspace_dir") or default_workspace())
    print(f"reme: {message}", file=sys.stderr if status else sys.stdout)
    return status


def start(assigned: dict[str, str], as_json: bool, out: OutFile | None = None) -> int:
    """`reme start`: the service, or with `job=` one job in-process (its parameters typed by its schema).

    With `out`, a successful job's answer goes to that file instead of stdout (`reme export`).
    """
    import asyncio
    import logging

    from reme.app.application import ComponentError
    from reme.app.config import ConfigError, load_config
    from reme.service.security import ServiceConfigError

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("reme.index.progress").setLevel(logging.INFO)  # start-up and reindex progress lines
    job = assigned.pop("job", None)
    config_name = assigned.pop("config", None)
    if job is None:
        raw_overrides = assigned
    else:
        raw_overrides = {k: v for k, v in assigned.items() if "." in k or k in START_CONFIG_KEYS}
    overrides = {k: parse_value(v) for k, v in raw_overrides.items()}
    params = {k: v for k, v in assigned.items() if k not in raw_overrides}
    try:
        config = load_config(None if config_name is None else str(config_name), overrides)
        if job is None:
            from reme.service.settings import service_settings

            service_settings(config)  # refuse an unsafe or unknown setting before the heavy imports
            from reme.service.runner import run_service

            with progress_drawn():
                asyncio.run(run_service(config))
            return 0
        with progress_drawn():
            return asyncio.run(run_once(config, job, params, as_json, out))
    except (ConfigError, ServiceConfigError, ComponentError) as exc:
        print(f"reme: {exc}", file=sys.stderr)
        return 2


def progress_drawn() -> AbstractContextManager[object]:
    """Steps' progress (dream units, bars) drawn on stderr when it is a terminal, else dropped."""
    if not sys.stderr.isatty():
        return nullcontext()
    from reme.app.progress import reporting
    from reme.service.cli_progress import TerminalProgress

    return reporting(TerminalProgress())


async def run_once(
    config: JSONObject, job: str, raw: Mapping[str, JSONValue], as_json: bool, out: OutFile | None = None
) -> int:
    from reme.app.application import Application

    async with Application(config) as app:
        if out is not None and (problem := out.problem(app.workspace_dir)):
            print(f"reme: {problem}", file=sys.stderr)
            return 2
        spec = app.jobs.get(job)
        params = job_params(raw, [], None if spec is None else spec.parameters, job)
        if spec is not None and spec.kind == "stream":
            success = False
            async for chunk in app.stream(job, **params):
                success = show_chunk(chunk, as_json)
            return 0 if success else 1
        response = (await app.run(job, **params)).to_dict()
        if spec is not None and not spec.read_only:
            response["metadata"] = {**response.get("metadata", {}), "workspace": str(app.workspace_dir)}
        if out is not None and response.get("success"):
            answer = response["answer"]
            try:
                out.write(answer if isinstance(answer, str) else _dumps(answer) + "\n")
            except OSError as exc:
                response = {**response, "success": False, "answer": f"cannot write {out.path}: {exc}"}
            else:
                response["answer"] = f"wrote {out.path}"
        return render(response, as_json, job)


def transfer(command: str, assigned: dict[str, str], bare: list[str], as_json: bool) -> int:
    """`reme import KIND PATH` and `reme export`: in-process runs of the import jobs and `export_digest`.

    The import jobs read host paths, so they are never served; the CLI runs them here, as
    `reme start job=...` would, whether or not a service is running for the workspace.
    """
    if command == "import":
        kinds = {"claude-code": "import_claude_code", "claude": "import_claude_code"}
        kinds.update({kind: f"import_{kind}" for kind in ("codex", "chatgpt", "mem0", "obsidian")})
        optional = ("claude-code", "claude", "codex")  # their transcripts have a default home
        if not 1 <= len(bare) <= 2 or bare[0] not in kinds or (len(bare) == 1 and bare[0] not in optional):
            print(
                f"reme: usage: reme import {'|'.join(k for k in kinds if k != 'claude')} PATH [key=value ...]"
                " (PATH optional for claude-code and codex: every project's sessions)",
                file=sys.stderr,
            )
            return 2
        assigned = {**assigned, "job": kinds[bare[0]]}
        if len(bare) == 2:
            assigned["source"] = os.path.abspath(os.path.expanduser(bare[1]))
        return start(assigned, as_json)
    if bare:
        print(f"reme: expected key=value, got {bare[0]!r}", file=sys.stderr)
        return 2
    path, overwrite = assigned.pop("out", None), assigned.pop("overwrite", "false")
    if overwrite not in ("true", "false"):
        print(f"reme: overwrite= takes true or false, got {overwrite!r}", file=sys.stderr)
        return 2
    out = None if path is None else OutFile(os.path.abspath(os.path.expanduser(path)), overwrite == "true")
    return start({**assigned, "job": "export_digest"}, as_json, out=out)


class OutFile:
    """Where `reme export out=` writes: outside the workspace (an export over a note or a catalog
    destroyed it), an existing file only with `overwrite=true`, whole or not at all. (A plain class:
    the CLI starts without dataclasses and pathlib, for the hooks.)"""

    def __init__(self, path: str, overwrite: bool) -> None:
        self.path = path
        self.overwrite = overwrite

    def problem(self, workspace: str | os.PathLike[str]) -> str | None:
        """Why the export may not go there, or None."""
        target, root = os.path.realpath(self.path), os.path.realpath(workspace)
        if os.path.commonpath([target, root]) == root:
            return f"out={self.path} is inside the workspace ({workspace}); write the export outside it"
        if os.path.isdir(target):
            return f"out={self.path} is a folder; name a file"
        if os.path.exists(target) and not self.overwrite:
            return f"out={self.path} exists; add overwrite=true to replace it"
        return None

    def write(self, text: str) -> None:
        """Written to a temporary file beside the target, then renamed over it: a failure midway
        leaves the old file whole. Through a symlink, the file it names is replaced."""
        import tempfile

        target = os.path.realpath(self.path)
        descriptor, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".reme-export-")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


# output ----------------------------------------------------------------------------------------


def _dumps(value: object, ascii_only: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ascii_only, indent=2, default=str)


def _ascii_stdout() -> bool:
    """Whether stdout's encoding may lack characters (PYTHONIOENCODING=ascii): JSON escapes them
    then (`\\u00e9`), so it stays valid JSON and nothing is lost."""
    return not (sys.stdout.encoding or "").lower().startswith("utf")


def render(response: JSONObject, as_json: bool, job: str | None = None) -> int:
    """Print a Response (the answer, or all of it with --json); return the exit status."""
    success = bool(response.get("success"))
    if as_json:
        print(_dumps(response, _ascii_stdout()))
        return 0 if success else 1
    answer = response.get("answer", "")
    stream = sys.stdout if success else sys.stderr
    if success:  # text a person reads (--json above keeps the object)
        from reme.service.readable import readable

        text = readable(job, response, stream.isatty())
        answer = answer if text is None else text
    if stream.isatty():
        from rich.console import Console

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
    changed = dig(response, "metadata", "workspace")
    if success and changed:  # a job that may change files names the workspace it acted on
        print(f"reme: workspace {changed}", file=sys.stderr)
    return 0 if success else 1


def render_stream(chunks: Iterable[object], as_json: bool) -> int:
    """Print chunks as they arrive; the exit status comes from the final `done` chunk."""
    success = False
    for chunk in chunks:
        success = show_chunk(chunk, as_json)
    return 0 if success else 1


def show_chunk(chunk: object, as_json: bool) -> bool:
    """Print one chunk (text as text, agent tool calls as a note on stderr, other chunks as JSON
    lines); True only for a successful `done`."""
    if not isinstance(chunk, dict):
        chunk = {"type": "data", "value": chunk}
    kind = chunk.get("type")
    if as_json:
        print(json.dumps(chunk, ensure_ascii=_ascii_stdout(), default=str), flush=True)
    elif kind == "error":
        print(f"\nerror: {chunk.get('message', '')}", file=sys.stderr, flush=True)
    elif kind == "done":
        print(flush=True)
        meta = chunk.get("metadata")
        unverified = meta.get("unverified_citations") if isinstance(meta, dict) else None
        for citation in unverified if isinstance(unverified, list) else []:
            if isinstance(citation, dict):  # chat: the text streamed before it was checked
                reason = citation.get("reason", "")
                print(f"reme: [[{citation.get('target')}]] is unverified ({reason})", file=sys.stderr)
    elif isinstance(chunk.get("text"), str):
        print(chunk["text"], end="", flush=True)
    elif kind == "tool_call":  # an agent's progress: to stderr, so stdout holds just the answer
        args = json.dumps(chunk.get("args") or {}, ensure_ascii=False, default=str)
        print(f"· {chunk.get('tool')} {args}", file=sys.stderr, flush=True)
    elif kind == "tool_result":
        pass
    else:
        print(json.dumps(chunk, ensure_ascii=False, default=str), flush=True)
    return kind == "done" and bool(chunk.get("success"))

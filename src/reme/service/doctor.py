"""`reme doctor`: check the install, workspace, service, index and LLM, and say what to do about each.

Every check ends as `ok`, `warn` (works, but something a user should know) or `fail` (something
they asked for cannot work); a problem comes with the command or setting that fixes it. Nothing in
the workspace is changed except what opening its index repairs; the LLM probe sends a few short
requests (`probe=false` skips it).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reme.jsontypes import JSONObject
from reme.service.client import dig

if TYPE_CHECKING:
    from reme.app.diagnostics import IndexState, ModeReport, RoleModel, RoundTrip

DOCTOR_KEYS = ("config", "probe")
SERVICE_TIMEOUT = 10.0  # seconds a service has to answer `status`: a stuck one is a finding, not a hang


@dataclass(frozen=True)
class Check:
    area: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


def doctor(assigned: JSONObject, as_json: bool) -> int:
    """Run every check, print them, exit 1 when one failed."""
    import asyncio

    checks = asyncio.run(run_checks(assigned))
    if as_json:
        print(json.dumps([asdict(check) for check in checks], ensure_ascii=False, indent=2))
    else:
        print(render(checks))
    return 1 if any(check.status == "fail" for check in checks) else 0


def render(checks: list[Check]) -> str:
    lines, area = [], None
    for check in checks:
        if check.area != area:
            area = check.area
            lines.append(area)
        lines.append(f"  {check.status:<5} {check.detail}")
        if check.fix:
            lines.append(f"        → {check.fix}")
    failed = sum(check.status == "fail" for check in checks)
    warned = sum(check.status == "warn" for check in checks)
    lines.append(f"{failed} problem(s), {warned} warning(s)")
    return "\n".join(lines)


async def run_checks(assigned: JSONObject) -> list[Check]:
    from reme.app.config import ConfigError, load_config

    options = {key: assigned.pop(key) for key in DOCTOR_KEYS if key in assigned}
    checks = install_checks()
    try:
        config = load_config(None if options.get("config") is None else str(options["config"]), assigned)
    except ConfigError as exc:
        return [*checks, Check("config", "fail", str(exc), "fix the setting named above")]
    workspace = Path(str(config.get("workspace_dir") or ".reme")).expanduser().resolve()
    checks += workspace_checks(workspace, config)
    checks += service_checks(workspace)
    checks += capture_checks(workspace)
    from reme.service.doctor_sync import sync_checks  # the sync area's own checks

    checks += sync_checks(workspace, config)
    if os.path.isdir(workspace):  # never raises (Path.is_dir does on a folder it may not enter)
        checks += await index_checks(config)
    else:
        checks.append(
            Check("index", "warn", "no workspace yet, so no index", f"reme start workspace_dir={workspace}")
        )
    llm = dig(config, "components", "llm")
    if isinstance(llm, dict):
        modes_file = str(workspace / "metadata" / "llm_output_modes.json") if os.path.isdir(workspace) else ""
        checks += await llm_checks(llm, probe=options.get("probe", True) is not False, modes_file=modes_file)
    return checks


# install ---------------------------------------------------------------------------------------


def install_checks() -> list[Check]:
    from reme import __version__

    in_venv = sys.prefix != sys.base_prefix
    python = f"reme {__version__}, Python {sys.version.split()[0]} ({sys.executable})"
    checks = [
        Check("install", "ok", f"{python} in a virtual environment")
        if in_venv
        else Check(
            "install",
            "warn",
            f"{python}, not in a virtual environment",
            "python3 -m venv .venv && .venv/bin/pip install -e .",
        )
    ]
    here = Path(sys.executable).with_name("reme")
    found = shutil.which("reme")
    if found is None:
        fix = f"activate the environment (source {here.parent}/activate) or run {here}"
        checks.append(Check("install", "warn", "`reme` is not on PATH", fix))
    elif here.exists() and os.path.realpath(found) != os.path.realpath(here):
        fix = f"activate this environment (source {here.parent}/activate) or run {here}"
        checks.append(
            Check("install", "warn", f"the `reme` on PATH ({found}) is another install than {here}", fix)
        )
    else:
        checks.append(Check("install", "ok", f"`reme` on PATH is {found}"))
    return checks


# workspace -------------------------------------------------------------------------------------


def workspace_checks(workspace: Path, config: JSONObject) -> list[Check]:
    from reme.app.diagnostics import workspace_layout

    existing = next(p for p in (workspace, *workspace.parents) if os.path.exists(p))
    if not os.path.isdir(existing):  # the workspace, or a folder it would be created in
        return [
            Check("workspace", "fail", f"{existing} is a file, not a folder", "choose another workspace_dir=")
        ]
    if not _writable(existing):
        return [
            Check("workspace", "fail", f"{existing} is not writable", f"check the permissions of {existing}")
        ]
    if existing != workspace:
        return [Check("workspace", "warn", f"{workspace} does not exist yet", "`reme start` creates it")]
    layout = workspace_layout(workspace, _dirs(config))
    folders, missing = layout.folders, layout.missing
    if missing:
        return [
            Check("workspace", "ok", f"{workspace} is writable"),
            Check("workspace", "warn", f"folders missing: {', '.join(missing)}", "`reme start` creates them"),
        ]
    return [
        Check(
            "workspace",
            "ok",
            f"{workspace} is writable, layout complete ({', '.join(sorted(folders.values()))})",
        )
    ]


def _dirs(config: JSONObject) -> dict[str, str]:
    """The configured workspace folder names (`components.workspace.dirs`), the config checked them."""
    dirs = dig(config, "components", "workspace", "dirs")
    return {role: str(name) for role, name in dirs.items()} if isinstance(dirs, dict) else {}


def _writable(folder: Path) -> bool:
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".reme-doctor-"):
            return True
    except OSError:
        return False


# agent captures --------------------------------------------------------------------------------


def capture_checks(workspace: Path) -> list[Check]:
    """Agent session captures (Claude Code / Codex hooks): ones that failed (with the reason and how
    to retry or drop them), ones waiting too long, and sessions saved with records skipped."""
    from reme.app.captures import capture_state, drop_command, retry_command

    try:
        state = capture_state(str(workspace))
    except (OSError, ValueError) as exc:  # a folder in the way, no permission, a marker not UTF-8
        folder = workspace / "metadata" / "agent" / "captures"
        fix = f"check the permissions of {folder}; move files there that are not a capture's JSON aside"
        return [Check("agents", "fail", f"the agent capture queue cannot be read: {exc}", fix)]
    checks = []
    retry = f"retry with `{retry_command(str(workspace))}`"
    for queued in state.failed:
        assert queued.failure is not None
        detail = (
            f"capture of session {queued.session_id} failed {queued.failure.attempts} time(s), last at "
            f"{queued.failure.at}: {queued.failure.reason}"
        )
        drop = drop_command(str(workspace), queued.session_id)
        checks.append(Check("agents", "warn", detail, f"{retry}, or give it up with `{drop}`"))
    if stale := state.stale():
        detail = (
            f"{len(stale)} agent session capture(s) not saved yet, the oldest "
            f"{int(max(q.age_s for q in stale) // 60)} min old (metadata/agent/captures; why: "
            "metadata/agent/drain.log)"
        )
        fix = f"run `{retry_command(str(workspace))}`, or start a service for the workspace"
        checks.append(Check("agents", "warn", detail, fix))
    for damaged in state.damaged:
        listed = ", ".join(f"{n} {reason}" for reason, n in sorted(damaged.skipped.items()))
        checks.append(
            Check(
                "agents",
                "ok",
                f"session {damaged.session_id} saved; {sum(damaged.skipped.values())} record(s) of its "
                f"transcript could not be used and were skipped ({listed}); every other turn is kept",
            )
        )
    return checks


# service ---------------------------------------------------------------------------------------


def service_checks(workspace: Path) -> list[Check]:
    from reme.service.client import ServiceUnreachable, call_job
    from reme.service.service_info import NoService, discover

    start = f"reme start workspace_dir={workspace}"
    try:
        info = discover(workspace_dir=workspace)
    except NoService as exc:
        return [Check("service", "warn", str(exc), f"start one with `{start}` (the CLI needs it)")]
    except ValueError as exc:  # REME_SERVICE_INFO names no service
        return [Check("service", "fail", str(exc), "fix REME_SERVICE_INFO or unset it")]
    where = f"{info.backend} service on {info.url}{info.path or ''} (pid {info.pid})"
    if info.backend != "http":
        return [Check("service", "ok", f"{where}, recorded in this workspace")]
    try:
        token = os.environ.get("REME_API_TOKEN")
        reply = call_job(info, "status", {}, token, str(workspace), timeout=SERVICE_TIMEOUT)
    except (ServiceUnreachable, OSError) as exc:  # OSError: it stopped answering mid-reply
        return [Check("service", "fail", str(exc), f"stop the process {info.pid} and run `{start}`")]
    answer = reply.response or {}
    if reply.status == 401:
        return [Check("service", "warn", f"{where} wants an access token", "set REME_API_TOKEN")]
    if not answer.get("success"):
        return [Check("service", "fail", f"{where}: {answer.get('answer')}", start)]
    checks = [Check("service", "ok", f"{where} serves this workspace")]
    index = dig(answer, "metadata", "components", "index")
    if not isinstance(index, dict):
        return checks
    if index.get("ready") is False:
        detail = "the service's index is still catching up with the files (searches say so)"
        checks.append(
            Check("index", "warn", detail, "wait, or follow the progress lines in the service's log")
        )
    elif index.get("ready"):
        checks.append(
            Check(
                "index",
                "ok",
                f"ready in the service ({index.get('files')} files, {index.get('chunks')} chunks)",
            )
        )
    return checks


# index (opened in this process) and LLM --------------------------------------------------------


async def index_checks(config: JSONObject) -> list[Check]:
    from reme.app.diagnostics import index_state

    try:
        state = await index_state(config)
    except Exception as exc:  # whatever keeps it from opening is the finding
        fix = "fix the setting named above, or `reme reindex`"
        return [Check("index", "fail", f"the index does not open: {exc}", fix)]
    return [] if state is None else index_report(state)


def index_report(state: IndexState) -> list[Check]:
    about = f"{state.files} files, {state.chunks} chunks, tokenizer {state.tokenizer}"
    if state.rebuild_due:
        return [Check("index", "warn", f"{about}: settings changed, a rebuild is due", "reme reindex")]
    if state.added or state.changed or state.gone:
        detail = (
            f"{about}; behind the files: {state.added} new, {state.changed} changed, {state.gone} deleted"
        )
        return [Check("index", "warn", detail, "catches up at the next start or search (or `reme reindex`)")]
    return [Check("index", "ok", f"{about}; consistent with the files")]


async def llm_checks(component: JSONObject, probe: bool, modes_file: str = "") -> list[Check]:
    """Each role's model once (a memory model that is the chat model is not probed twice)."""
    from reme.app.diagnostics import ModelSettingsError, role_models

    try:
        models = role_models(component, modes_file)
    except ModelSettingsError as exc:
        return [Check("llm", "fail", str(exc), "fix that setting (docs/llm.md)")]
    checks: list[Check] = []
    for model in models:
        checks += await model_checks(model, probe)
    return checks


async def model_checks(model: RoleModel, probe: bool) -> list[Check]:
    role = model.role
    if model.scripted:
        return [Check("llm", "ok", f"{role}: the scripted test double")]
    missing = model.missing()
    if missing:
        fix = "LLM jobs (auto_memory, auto_resource, chat) need it; see docs/llm.md"
        return [Check("llm", "warn", f"{role}: not configured, set {missing}", fix)]
    name = model.name()
    why = await model.unreachable()
    if why:
        return [Check("llm", "fail", f"{name}: {why}", "start the server or fix LLM_BASE_URL / LLM_API_KEY")]
    checks = [Check("llm", "ok", f"{name} answers")]
    if probe:
        found = await model.probe()
        checks.append(round_trip_check(role, found.round_trip))
        checks += mode_checks(role, model.output_mode, found.modes)
    return checks


def round_trip_check(role: str, trip: RoundTrip) -> Check:
    if trip.failed_step is None:
        return Check(
            "llm",
            "ok",
            f"{role}: tool round trip works (the model called the tool, the server took its result)",
        )
    detail = f"{role}: tool round trip failed at the {trip.failed_step}: {trip.error}"
    if trip.failed_step == "tool call" and trip.error == "the model answered without calling the tool":
        fix = (
            "agents read and write cards through tools: use a model and chat template with tool calling "
            "(llama-cpp-python: --chat_format chatml-function-calling; docs/llm.md)"
        )
    elif trip.failed_step == "tool call":
        fix = "the server refuses a request with tools: check its tool-calling options (docs/llm.md)"
    else:
        fix = "the server refuses the request that carries the tool's result: see its reason above (docs/llm.md)"
    return Check("llm", "fail", detail, fix)


def mode_checks(role: str, configured: str, reports: list[ModeReport]) -> list[Check]:
    works = [r.mode for r in reports if r.works]
    refused = {r.mode: r.error for r in reports if not r.works}
    summary = f"{role}: output modes that work: {', '.join(works) or 'none'}"
    summary += "".join(
        f"; {mode} failed ({error or 'no structured answer'})" for mode, error in refused.items()
    )
    if not works:
        return [Check("llm", "fail", summary, "use a model that can answer JSON (docs/llm.md)")]
    if configured not in works:
        fix = f"set LLM_OUTPUT_MODE={works[0]} (else reme falls back to prompted after one refused request)"
        return [Check("llm", "warn", summary, fix)]
    return [Check("llm", "ok", summary)]

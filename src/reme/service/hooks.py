"""`reme hook <event>`: Claude Code's hooks (and a generic capture for Codex CLI), fast and never in the way.

Claude Code runs a hook with the event's JSON on stdin (`session_id`, `transcript_path`, `cwd`,
`hook_event_name`, plus `source` / `prompt` / `trigger` / `reason` by event) and waits for it. So:

- every hook exits 0, whatever happens (exit 2 would block the user's prompt or stop), and prints
  problems to stderr only;
- no model is called; capture hooks (`Stop`, `PreCompact`, `SessionEnd`, `capture`,
  `codex-notify`) first leave a marker `metadata/agent/captures/<session_id>.json` naming the
  transcript, then send the lines it gained since the last saved capture to the running service
  with a short timeout; with no service they start a detached `drain` process and return. A marker is removed only once its transcript is saved, so a capture missed
  while reme was down is picked up by the next one (append is idempotent: re-sending is safe);
- `SessionStart` (and `UserPromptSubmit`, off unless `prompt_recall=true` or
  `REME_HOOK_PROMPT_RECALL=1`) print `hookSpecificOutput.additionalContext` with the recall block.

The capture state (markers, failure notes, how far each transcript is saved) and the reading of a
transcript in parts are `reme.app.captures`, shared with the `capture_*` jobs and `reme doctor`;
this module only parses hook input and talks to the service. Only the standard library, that module
and the small client modules load unless the hook must run a job in-process.
"""

from __future__ import annotations

import glob
import io
import json
import os
import re
import sys
import time
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, cast

from reme.app import captures
from reme.app.captures import (
    Capture,
    Part,
    append_params,
    draining,
    markers,
    plain_session_id,
    read_failure,
    saved_up_to,
    skipped_counts,
)
from reme.jsontypes import JSONObject, JSONValue

if TYPE_CHECKING:
    from reme.service.service_info import ServiceInfo

CAPTURE_EVENTS = ("Stop", "PreCompact", "SessionEnd", "capture", "codex-notify")
RECALL_EVENTS = ("SessionStart", "UserPromptSubmit")
SOURCES = ("claude_code", "codex", "reme")  # the transcript formats `agent_session_append` reads
EVENTS = (*RECALL_EVENTS, *CAPTURE_EVENTS, "drain", "drop")
MAX_STDIN_BYTES = 1 << 20
CAPTURE_BUDGET = 0.8  # seconds a capture hook may spend talking to the service (`REME_HOOK_BUDGET`)
RECALL_TIMEOUT = 5.0
MAX_PACE = 5.0  # seconds a background drain waits at most between two parts of one transcript
PROMPT_RECALL = {"limit": 3, "max_chars": 1500}
SESSION_RECALL = {"limit": 5, "max_chars": 4000}
USAGE = (
    "usage: reme hook SessionStart|UserPromptSubmit|Stop|PreCompact|SessionEnd [workspace_dir=DIR]  (JSON on stdin)\n"
    "       reme hook capture source=codex|claude_code transcript_path=FILE [session_id=ID] [workspace_dir=DIR]\n"
    "       reme hook codex-notify [workspace_dir=DIR] JSON  (Codex CLI's `notify` program)\n"
    "       reme hook drain|drop [session_id=ID] [workspace_dir=DIR]  (retry the queued captures / give one up)\n"
    "transcripts are read only under ~/.claude/projects, ~/.codex/sessions or a folder of\n"
    "transcript_dirs=DIR[:DIR...] / $REME_TRANSCRIPT_DIRS"
)
ROLLOUT_ID = re.compile(r"rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$")


def _note(message: str) -> None:
    print(f"reme hook: {message}", file=sys.stderr)


def workspace_of(assigned: dict[str, str]) -> str | None:
    """The workspace as an absolute path: `workspace_dir=`, else `$REME_WORKSPACE_DIR`, else None.

    Never `./.reme`: a hook runs in whatever project is open, and would write captures into it."""
    chosen = assigned.get("workspace_dir") or os.environ.get("REME_WORKSPACE_DIR")
    return os.path.abspath(os.path.expanduser(chosen)) if chosen else None


def read_payload(stream: IO[str] | None) -> JSONObject:
    """The hook's JSON object from stdin (at most 1 MiB); empty when there is none."""
    raw = stream.read(MAX_STDIN_BYTES + 1) if stream is not None and not stream.isatty() else ""
    if len(raw) > MAX_STDIN_BYTES:
        raise ValueError(f"hook input is larger than {MAX_STDIN_BYTES} bytes")
    data = json.loads(raw) if raw.strip() else {}
    if not isinstance(data, dict):
        raise ValueError("hook input must be a JSON object")
    return data


def _utf8_stdin() -> IO[str] | None:
    """stdin decoded as UTF-8, as the agents write their JSON, whatever the locale says
    (`LANG=...ISO-8859-1`, `PYTHONIOENCODING=ascii`)."""
    if isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(encoding="utf-8")
    return sys.stdin


def capture_budget() -> float:
    try:
        return float(os.environ.get("REME_HOOK_BUDGET") or CAPTURE_BUDGET)
    except ValueError:
        return CAPTURE_BUDGET


def failed(marker: str, reason: str) -> None:
    """Note why a capture failed beside its marker (which stays queued), and say so on stderr."""
    reason = captures.failed(marker, reason)
    _note(f"capture {os.path.basename(marker)} not saved ({reason}); it stays queued")


# talking to the service ----------------------------------------------------------------------


def http_service(workspace: str) -> ServiceInfo | None:
    """The HTTP service recorded for this workspace, or None (none runs, or it speaks only MCP)."""
    from reme.service.service_info import NoService, discover

    try:
        info = discover(workspace_dir=workspace)
    except (NoService, ValueError):
        return None
    return info if info.backend == "http" else None


def call_service(
    info: ServiceInfo, workspace: str, job: str, params: Mapping[str, object], timeout: float
) -> JSONObject:
    """A job's Response from the service; raises OSError/ServiceUnreachable when it does not answer in time."""
    from reme.service.client import call_job, client_token

    reply = call_job(
        info, job, cast("JSONObject", dict(params)), client_token(), workspace, timeout=max(timeout, 0.05)
    )
    return {
        **(reply.response or {"success": False, "answer": f"HTTP {reply.status}"}),
        "status": reply.status,
    }


# statuses that refuse the input itself (a body or parameters the job never accepts): resending it
# fails again, so its marker goes. Anything else (401 token mismatch, 409 another workspace, a 5xx,
# a job that failed on a conflict) is about the service: the marker stays for the next try.
INPUT_REFUSED = (400, 422)


def _capture(path: str, raw: str) -> Capture | None:
    """The capture a marker names; None (and a failure note) when the marker is damaged."""
    capture = captures.parse_capture(raw)
    if capture is None:
        failed(path, "the marker is damaged (not a capture's JSON); drop it")
    return capture


def _skipped(response: JSONObject, part: Part) -> dict[str, int]:
    metadata = response.get("metadata")
    counts = skipped_counts(metadata.get("skipped")) if isinstance(metadata, dict) else None
    return part.skipped if counts is None else counts


def _send(info: ServiceInfo, workspace: str, path: str, raw: str, timeout: float, pace: bool = False) -> bool:
    """Send one capture, part by part; False when the service did not take it or time ran out
    (the marker stays queued). A capture the service refuses, or whose transcript is gone, keeps
    its marker with a failure note and the drain goes on with the others. `pace`: after each part
    of a long transcript, wait as long as the service took for it (a background drain, which no one
    waits for), so other sessions' captures find the service idle at least half the time."""
    deadline = time.monotonic() + timeout
    capture = _capture(path, raw)
    if capture is None:
        return True
    while True:
        try:
            params, part = append_params(workspace, capture)
        except OSError as exc:
            failed(path, f"its transcript cannot be read: {exc.strerror or exc}")
            return True
        sent_at = time.monotonic()
        response: JSONObject = (
            call_service(info, workspace, "agent_session_append", params, deadline - sent_at)
            if params["messages"]
            else {"success": True}  # nothing new since the last capture
        )
        if response.get("success"):
            saved_up_to(workspace, capture, part, _skipped(response, part))
            if part.more and pace:
                time.sleep(min(time.monotonic() - sent_at, MAX_PACE, max(0.0, deadline - time.monotonic())))
            if part.more and time.monotonic() < deadline:
                continue
            if part.more:
                return False  # the rest in the next drain: the marker stays
            captures.done(path, raw)
            return True
        status = response.get("status")
        failed(path, f"the service answered HTTP {status}: {response.get('answer')}")
        return status in INPUT_REFUSED  # resending the same input fails again: go on with the others


def drain_through(
    info: ServiceInfo,
    workspace: str,
    budget: float,
    first: str | None = None,
    others: bool = True,
    pace: bool = False,
) -> bool:
    """Send the waiting captures (`first` first, then the others unless `others` is False) to the
    service within `budget` seconds (`pace`: see `_send`); True when none is left to this call."""
    from reme.service.client import ServiceUnreachable

    deadline = time.monotonic() + budget
    waiting = markers(workspace, first)
    if not others:
        own = captures.marker_path(workspace, first or "")
        waiting = [item for item in waiting if item[0] == own]
    for path, raw in waiting:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            if not _send(info, workspace, path, raw, left, pace):
                return False
        except (ServiceUnreachable, OSError) as exc:  # slow, not failed: the marker waits as it is
            _note(f"the service did not take the capture in time ({exc}); it stays queued")
            return False
    return not others or all(read_failure(p) for p, _ in markers(workspace))  # only failed ones left


def spawn_drain(workspace: str) -> None:
    """Start `reme hook drain` detached (its own session, no terminal); `REME_HOOK_SPAWN=0` turns it off."""
    if os.environ.get("REME_HOOK_SPAWN", "1") == "0":
        return
    import subprocess

    log_dir = os.path.join(workspace, "metadata", "agent")
    os.makedirs(log_dir, exist_ok=True)
    log_path = os.path.join(log_dir, "drain.log")
    too_long = os.path.exists(log_path) and os.path.getsize(log_path) > MAX_STDIN_BYTES
    with open(log_path, "wb" if too_long else "ab") as log:  # a log that keeps only recent runs
        subprocess.Popen(
            [sys.executable, "-m", "reme.service.hooks", "drain", f"workspace_dir={workspace}"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )


# events ----------------------------------------------------------------------------------------


def _capture_of(event: str, payload: JSONObject, assigned: dict[str, str]) -> Capture | None:
    if event == "codex-notify":
        rollout = codex_rollout(payload)
        if rollout is None:
            _note("codex-notify: no Codex rollout file found under $CODEX_HOME/sessions; nothing captured")
            return None
        payload = {**payload, "session_id": rollout[0], "transcript_path": rollout[1]}
        assigned = {**assigned, "source": "codex"}
    source = (
        (assigned.get("source") or payload.get("source"))
        if event in ("capture", "codex-notify")
        else "claude_code"
    )
    source = source if isinstance(source, str) and source else "claude_code"
    if source not in SOURCES:  # queued, it would fail at every drain
        _note(f"{event}: source {source!r} is not one of {', '.join(SOURCES)}; nothing captured")
        return None
    transcript = payload.get("transcript_path") or assigned.get("transcript_path")
    session_id: JSONValue = payload.get("session_id") or assigned.get("session_id")
    if not isinstance(transcript, str) or not transcript:
        _note(f"{event}: no transcript_path in the hook input; nothing captured")
        return None
    from reme.service.transcript_dirs import NotATranscript, allowed_transcript

    try:
        transcript = allowed_transcript(transcript, assigned)  # agent transcripts only, links resolved
    except NotATranscript as exc:
        _note(f"{event}: {exc}; nothing captured")
        return None
    if not session_id:  # Claude Code names the file after its session; Codex its first line
        session_id = captures.session_id_of(source, transcript)
    if not plain_session_id(session_id):
        _note(f"{event}: session_id {session_id!r} is missing or not a plain name; nothing captured")
        return None
    assert isinstance(session_id, str)  # plain_session_id said so
    return Capture(
        session_id=session_id,
        transcript_path=os.path.abspath(transcript),
        source=source,
        event=event,
        cwd=payload.get("cwd"),
        at=time.time(),
    )


def codex_rollout(payload: JSONObject, codex_home: str | None = None) -> tuple[str, str] | None:
    """(session id, rollout file) for a Codex `notify` payload: the rollout named by its thread id (any day),
    else the newest rollout of the last two days (Codex writes `sessions/YYYY/MM/DD/rollout-…-<id>.jsonl`)."""
    home = codex_home or os.environ.get("CODEX_HOME") or os.path.expanduser("~/.codex")
    wanted = next(
        (
            str(payload[k])
            for k in ("thread-id", "thread_id", "session_id", "conversation_id")
            if payload.get(k)
        ),
        None,
    )
    sessions = os.path.join(home, "sessions")
    found = []
    if wanted is not None:  # the rollout named by its thread id, however old (a resumed thread)
        pattern = os.path.join(glob.escape(sessions), "**", f"rollout-*-{glob.escape(wanted)}.jsonl")
        for path in glob.glob(pattern, recursive=True):
            match = ROLLOUT_ID.search(os.path.basename(path))
            if match and match.group(1) == wanted:
                found.append((os.path.getmtime(path), wanted, path))
    else:
        days = sorted(os.path.join(root, "") for root, dirs, _ in os.walk(sessions) if not dirs)
        for folder in days[-2:]:
            for name in os.listdir(folder):
                match = ROLLOUT_ID.search(name)
                if match:
                    found.append((os.path.getmtime(folder + name), match.group(1), folder + name))
    if not found:
        return None
    _, session_id, path = max(found)
    return session_id, path


def capture(event: str, payload: JSONObject, assigned: dict[str, str], workspace: str) -> None:
    found = _capture_of(event, payload, assigned)
    if found is None:
        return
    captures.write_marker(workspace, found)
    info = http_service(workspace)
    # a drain already at work (a huge transcript in parts) keeps the others: this hook sends its own
    others = not draining(workspace)
    if info is None or not drain_through(info, workspace, capture_budget(), found["session_id"], others):
        spawn_drain(workspace)


def recall(event: str, payload: JSONObject, assigned: dict[str, str], workspace: str) -> None:
    """Print the recall block as Claude Code's `additionalContext` (nothing when there is none)."""
    if event == "UserPromptSubmit":
        wanted = assigned.get("prompt_recall") or os.environ.get("REME_HOOK_PROMPT_RECALL") or ""
        prompt = payload.get("prompt")
        if (
            wanted.lower() not in ("1", "true", "yes", "on")
            or not isinstance(prompt, str)
            or not prompt.strip()
        ):
            return
        params: JSONObject = {"query": prompt[:2000], **PROMPT_RECALL}
    else:
        params = {"cwd": str(payload.get("cwd") or os.getcwd()), **SESSION_RECALL}
    info = http_service(workspace)
    pending = markers(workspace)  # captures missed while reme was down: pick them up now
    if pending and (info is None or not drain_through(info, workspace, capture_budget())):
        spawn_drain(workspace)
    if info is not None:
        response = call_service(info, workspace, "agent_memory_recall", params, RECALL_TIMEOUT)
    elif event == "SessionStart":  # once per session: worth starting reme in-process
        response = run_in_process(workspace, "agent_memory_recall", params)
    else:
        return
    block = response.get("answer") if response.get("success") else None
    if not isinstance(block, str) or not block:
        if not response.get("success"):
            _note(f"recall failed: {response.get('answer')}")
        return
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": block}}
    print(json.dumps(output, ensure_ascii=True))  # any console encoding reads it


# in-process runs ------------------------------------------------------------------------------


# what recall runs (itself and the jobs its port calls), and the step modules that define them
RECALL_JOBS = ("agent_memory_recall", "search", "node_search", "list", "load", "frontmatter_read")
RECALL_STEPS = ("recall", "index", "files")


def run_in_process(workspace: str, job: str, params: JSONObject) -> JSONObject:
    """Run recall in this process on the workspace (no cron, no background loops): only the jobs
    recall runs are built and only their step modules loaded, so a session starts sooner."""
    import asyncio

    from reme.app.application import Application
    from reme.app.config import load_config

    async def run() -> JSONObject:
        config = load_config(None, {"workspace_dir": workspace, "scheduler.cron": False})
        config["jobs"] = {name: spec for name, spec in config.get("jobs", {}).items() if name in RECALL_JOBS}
        async with Application(config, step_modules=RECALL_STEPS) as app:
            return (await app.run(job, **params)).to_dict()

    return asyncio.run(run())


def drain(workspace: str) -> None:
    """Save every waiting capture: through the service when one runs now, else in this process.

    One drain at a time per workspace (a lock file); a drain that finds the lock taken leaves the
    work to the running one, which looks for new markers before it ends.
    """
    import asyncio

    from filelock import Timeout

    lock = captures.drain_lock(workspace)
    try:
        lock.acquire()
    except Timeout:
        return
    try:
        info = http_service(workspace)
        if info is not None and drain_through(info, workspace, 600, pace=True):
            return
        asyncio.run(_drain_in_process(workspace))
    finally:
        lock.release()


async def _drain_in_process(workspace: str) -> None:
    from reme.app.application import Application
    from reme.app.config import load_config

    config = load_config(None, {"workspace_dir": workspace, "scheduler.cron": False})
    async with Application(config) as app:
        report = await captures.drain_in_app(app, workspace)
    for session, reason in report.failed.items():
        _note(f"capture {session}.json not saved ({reason}); it stays queued")


# entry -----------------------------------------------------------------------------------------


def main(args: list[str], stdin: IO[str] | None = None) -> int:
    """Run one hook; always 0 (a hook must never block Claude Code), usage errors aside."""
    from reme.service.cli_values import split_words

    notice = args[-1] if args and args[-1].lstrip().startswith("{") else None  # codex-notify's JSON argument
    assigned, bare = split_words(args[:-1] if notice is not None else args)
    if not bare or bare[0] not in EVENTS:
        print(USAGE, file=sys.stderr)
        return 1  # never 2: Claude Code reads 2 as "block"
    event = bare[0]
    try:
        workspace = workspace_of(assigned)
        if workspace is None:  # quietly: a hook must never disturb the session
            _note(f"{event}: no workspace_dir= and no REME_WORKSPACE_DIR; nothing done")
            return 0
        if event == "drain":
            drain(workspace)
            return 0
        if event == "drop":  # the user gives up a capture that keeps failing (`reme doctor` names it)
            session_id = assigned.get("session_id", "")
            print(
                f"dropped the capture of {session_id}"
                if captures.drop(workspace, session_id)
                else f"no capture of {session_id!r} is queued"
            )
            return 0
        if event == "codex-notify":
            payload = read_payload(io.StringIO(notice or "{}"))
        else:
            payload = read_payload(_utf8_stdin() if stdin is None else stdin)
        event_name = payload.get("hook_event_name")
        if event[0].isupper() and isinstance(event_name, str) and event_name != event:
            _note(f"installed for {event} but called for {event_name}; answering as {event}")
        if event in CAPTURE_EVENTS:
            capture(event, payload, assigned, workspace)
        else:
            recall(event, payload, assigned, workspace)
    except Exception as exc:  # whatever it is, the user's session goes on
        _note(f"{event}: {type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

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

Only the standard library and the small client modules load unless the hook must run a job in-process.
"""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any

CAPTURE_EVENTS = ("Stop", "PreCompact", "SessionEnd", "capture", "codex-notify")
RECALL_EVENTS = ("SessionStart", "UserPromptSubmit")
EVENTS = (*RECALL_EVENTS, *CAPTURE_EVENTS, "drain", "drop")
MAX_STDIN_BYTES = 1 << 20
MAX_TRANSCRIPT_BYTES = 16 << 20  # the tail of a longer transcript: earlier turns were captured before
MAX_LINE_BYTES = 8 << 20  # one record (a turn with a pasted image); a longer line is skipped, counted
MAX_PART_BYTES = 1 << 20  # one request to the service: a long transcript goes in parts, others between
MAX_ENTRIES = 50000  # = agent_session_append's maxItems
MAX_REASON = 300  # characters of a failure's reason kept beside its marker
CAPTURE_BUDGET = 0.8  # seconds a capture hook may spend talking to the service (`REME_HOOK_BUDGET`)
RECALL_TIMEOUT = 5.0
PROMPT_RECALL = {"limit": 3, "max_chars": 1500}
SESSION_RECALL = {"limit": 5, "max_chars": 4000}
CAPTURES = os.path.join("metadata", "agent", "captures")
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


def read_payload(stream: Any) -> dict[str, Any]:
    """The hook's JSON object from stdin (at most 1 MiB); empty when there is none."""
    raw = stream.read(MAX_STDIN_BYTES + 1) if stream is not None and not stream.isatty() else ""
    if len(raw) > MAX_STDIN_BYTES:
        raise ValueError(f"hook input is larger than {MAX_STDIN_BYTES} bytes")
    data = json.loads(raw) if raw.strip() else {}
    if not isinstance(data, dict):
        raise ValueError("hook input must be a JSON object")
    return data


@dataclass
class Part:
    """What one read of a transcript gives: entries to send, where they end, lines left out by reason."""

    entries: list[Any] = field(default_factory=list)
    end: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    more: bool = False  # a bound was reached: the rest follows in the next part

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def read_transcript(path: str, start: int = 0) -> Part:
    """The JSON lines of a transcript from byte `start` (at most its last 16 MiB), read line by line
    in bounded memory, up to MAX_PART_BYTES / MAX_ENTRIES (`more` says the rest waits for the next
    part). A line still being written is left for later; a line that is not JSON or longer than
    MAX_LINE_BYTES is skipped and counted, never the turns around it."""
    part = Part()
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        start = start if 0 <= start <= size else 0  # a shorter file was rewritten: read it all
        handle.seek(max(start, size - MAX_TRANSCRIPT_BYTES))
        if handle.tell() > start:
            _skip_line(handle)  # a partial line
        part.end = handle.tell()
        taken = 0
        while part.end < size:
            if len(part.entries) >= MAX_ENTRIES or taken >= MAX_PART_BYTES:
                part.more = True
                break
            line = handle.readline(MAX_LINE_BYTES + 1)
            if not line.endswith(b"\n"):
                if len(line) <= MAX_LINE_BYTES:
                    break  # still being written: the next capture takes it
                _skip_line(handle)
                part.skip("over_size")
                part.end = handle.tell()
                continue
            part.end += len(line)
            taken += len(line)
            try:
                entry = json.loads(line)
            except ValueError:
                if line.strip():
                    part.skip("not_json")
                continue
            if isinstance(entry, dict):
                part.entries.append(entry)
            else:
                part.skip("not_an_object")
    return part


def _skip_line(handle: Any) -> None:
    """Read past the end of the current line without holding it (it may be huge)."""
    while (chunk := handle.readline(1 << 20)) and not chunk.endswith(b"\n"):
        pass


# markers --------------------------------------------------------------------------------------


def _marker_dir(workspace: str) -> str:
    return os.path.join(workspace, CAPTURES)


def write_marker(workspace: str, capture: dict[str, Any]) -> str:
    """Record a capture to do (atomically); a newer capture of the session replaces the older one."""
    folder = _marker_dir(workspace)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{capture['session_id']}.json")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(capture, handle)
    os.replace(tmp, path)
    return path


def capture_budget() -> float:
    try:
        return float(os.environ.get("REME_HOOK_BUDGET") or CAPTURE_BUDGET)
    except ValueError:
        return CAPTURE_BUDGET


def markers(workspace: str, first: str | None = None) -> list[tuple[str, str]]:
    """(path, raw text) of every capture still to do: `first` (a session id) first, then oldest first."""
    folder = _marker_dir(workspace)
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".json")]
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            with open(path, encoding="utf-8") as handle:
                found.append((os.path.getmtime(path), path, handle.read()))
        except OSError:
            continue
    ordered = [(path, raw) for _, path, raw in sorted(found)]
    lead = os.path.join(folder, f"{first}.json")
    # the session that called first, then captures that never failed, then failed ones (retried last)
    return sorted(ordered, key=lambda item: (item[0] != lead, os.path.exists(failure_path(item[0]))))


def _done(path: str, raw: str) -> None:
    """Remove a marker (and its failure note) unless a newer capture rewrote it meanwhile."""
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == raw:
                os.unlink(path)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(failure_path(path))
    except OSError:
        pass


def failure_path(marker: str) -> str:
    return marker[: -len(".json")] + ".failed"


def failed(marker: str, reason: str) -> None:
    """Note why a capture failed beside its marker, which stays: the next drain tries it again,
    `reme doctor` shows the reason, `reme hook drop` gives it up."""
    reason = reason[:MAX_REASON]  # answers name parameters, not their values; bounded all the same
    path = failure_path(marker)
    attempts = (read_failure(marker) or {}).get("attempts", 0)
    note = {"reason": reason, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "attempts": int(attempts) + 1}
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(note, handle)
    os.replace(tmp, path)
    _note(f"capture {os.path.basename(marker)} not saved ({reason}); it stays queued")


def read_failure(marker: str) -> dict[str, Any] | None:
    try:
        with open(failure_path(marker), encoding="utf-8") as handle:
            note = json.load(handle)
        return note if isinstance(note, dict) else None
    except (OSError, ValueError):
        return None


def drop(workspace: str, session_id: str) -> bool:
    """Give up a queued capture (`reme hook drop session_id=...`); False when there is none."""
    from reme.workspace.transcript import is_session_id  # the job's own rule: names files here too

    if not is_session_id(session_id):
        return False
    marker = os.path.join(_marker_dir(workspace), f"{session_id}.json")
    found = os.path.exists(marker)
    for path in (marker, failure_path(marker)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    return found


def _sent_path(workspace: str, session_id: str) -> str:
    return os.path.join(_marker_dir(workspace), f"{session_id}.sent")


def _sent(workspace: str, session_id: str) -> dict[str, Any]:
    try:
        with open(_sent_path(workspace, session_id), encoding="utf-8") as handle:
            sent = json.load(handle)
        return sent if isinstance(sent, dict) else {}
    except (OSError, ValueError):
        return {}


def append_params(workspace: str, capture: dict[str, Any]) -> tuple[dict[str, Any], Part]:
    """The `agent_session_append` parameters for a capture: the next part of the lines its
    transcript gained since the last part that was saved (from the start for a new file)."""
    sent = _sent(workspace, capture["session_id"])
    start = 0
    if sent.get("transcript_path") == capture["transcript_path"]:
        try:
            start = int(sent.get("offset") or 0)
        except (TypeError, ValueError):
            start = 0
    part = read_transcript(capture["transcript_path"], start)
    params: dict[str, Any] = {
        "session_id": capture["session_id"],
        "source": capture["source"],
        "messages": part.entries,
    }
    if part.skipped:
        params["skipped"] = part.skipped
    return params, part


def saved_up_to(
    workspace: str, capture: dict[str, Any], offset: int, skipped: dict[str, int] | None = None
) -> None:
    """Remember how far a transcript is saved, so the next capture sends only what follows, and
    the records skipped so far (by reason) for `reme doctor`."""
    path = _sent_path(workspace, capture["session_id"])
    before = _sent(workspace, capture["session_id"])
    total = before.get("skipped") if before.get("transcript_path") == capture["transcript_path"] else None
    counts = dict(total) if isinstance(total, dict) else {}
    for reason, count in (skipped or {}).items():
        counts[reason] = int(counts.get(reason) or 0) + int(count)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(
            {"transcript_path": capture["transcript_path"], "offset": offset, "skipped": counts}, handle
        )
    os.replace(tmp, path)


# talking to the service ----------------------------------------------------------------------


def http_service(workspace: str) -> Any:
    """The HTTP service recorded for this workspace, or None (none runs, or it speaks only MCP)."""
    from reme.service.service_info import NoService, discover

    try:
        info = discover(workspace_dir=workspace)
    except (NoService, ValueError):
        return None
    return info if info.backend == "http" else None


def call_service(
    info: Any, workspace: str, job: str, params: dict[str, Any], timeout: float
) -> dict[str, Any]:
    """A job's Response from the service; raises OSError/ServiceUnreachable when it does not answer in time."""
    from reme.service.client import call_job, client_token

    reply = call_job(info, job, params, client_token(), workspace, timeout=max(timeout, 0.05))
    return {
        **(reply.response or {"success": False, "answer": f"HTTP {reply.status}"}),
        "status": reply.status,
    }


# statuses that refuse the input itself (a body or parameters the job never accepts): resending it
# fails again, so its marker goes. Anything else (401 token mismatch, 409 another workspace, a 5xx,
# a job that failed on a conflict) is about the service: the marker stays for the next try.
INPUT_REFUSED = (400, 422)


def _capture(path: str, raw: str) -> dict[str, Any] | None:
    """The capture a marker names; None (and a failure note) when the marker is damaged."""
    try:
        capture = json.loads(raw)
        if isinstance(capture, dict) and all(
            isinstance(capture.get(k), str) for k in ("session_id", "transcript_path", "source")
        ):
            return capture
    except ValueError:
        pass
    failed(path, "the marker is damaged (not a capture's JSON); drop it")
    return None


def _skipped(response: dict[str, Any], part: Part) -> dict[str, int]:
    counts = (response.get("metadata") or {}).get("skipped")
    return counts if isinstance(counts, dict) else part.skipped


def _send(info: Any, workspace: str, path: str, raw: str, timeout: float) -> bool:
    """Send one capture, part by part; False when the service did not take it or time ran out
    (the marker stays queued). A capture the service refuses, or whose transcript is gone, keeps
    its marker with a failure note and the drain goes on with the others."""
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
        response = (
            call_service(info, workspace, "agent_session_append", params, deadline - time.monotonic())
            if params["messages"]
            else {"success": True}  # nothing new since the last capture
        )
        if response.get("success"):
            saved_up_to(workspace, capture, part.end, _skipped(response, part))
            if part.more and time.monotonic() < deadline:
                continue
            if part.more:
                return False  # the rest in the next drain: the marker stays
            _done(path, raw)
            return True
        status = response.get("status")
        failed(path, f"the service answered HTTP {status}: {response.get('answer')}")
        return status in INPUT_REFUSED  # resending the same input fails again: go on with the others


def drain_through(
    info: Any, workspace: str, budget: float, first: str | None = None, others: bool = True
) -> bool:
    """Send the waiting captures (`first` first, then the others unless `others` is False) to the
    service within `budget` seconds; True when none is left to this call."""
    from reme.service.client import ServiceUnreachable

    deadline = time.monotonic() + budget
    waiting = markers(workspace, first)
    if not others:
        own = os.path.join(_marker_dir(workspace), f"{first}.json")
        waiting = [item for item in waiting if item[0] == own]
    for path, raw in waiting:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            if not _send(info, workspace, path, raw, left):
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


def _capture_of(event: str, payload: dict[str, Any], assigned: dict[str, str]) -> dict[str, Any] | None:
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
    transcript = payload.get("transcript_path") or assigned.get("transcript_path")
    session_id = payload.get("session_id") or assigned.get("session_id")
    if not isinstance(transcript, str) or not transcript:
        _note(f"{event}: no transcript_path in the hook input; nothing captured")
        return None
    from reme.service.transcript_dirs import NotATranscript, allowed_transcript

    try:
        transcript = allowed_transcript(transcript, assigned)  # agent transcripts only, links resolved
    except NotATranscript as exc:
        _note(f"{event}: {exc}; nothing captured")
        return None
    if not session_id and source == "codex":
        from reme.pipelines.capture.transcripts import codex_session_id

        session_id = codex_session_id(read_transcript(transcript).entries[:5])
    elif not session_id:  # Claude Code names the file after its session; its entries name it too
        from reme.pipelines.capture.transcripts import claude_session_id

        session_id = claude_session_id(transcript, read_transcript(transcript).entries)
    from reme.workspace.transcript import is_session_id

    if not isinstance(session_id, str) or not is_session_id(session_id):
        _note(f"{event}: session_id {session_id!r} is missing or not a plain name; nothing captured")
        return None
    return {
        "session_id": session_id,
        "transcript_path": os.path.abspath(transcript),
        "source": source or "claude_code",
        "event": event,
        "cwd": payload.get("cwd"),
        "at": time.time(),
    }


def codex_rollout(payload: dict[str, Any], codex_home: str | None = None) -> tuple[str, str] | None:
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


def capture(event: str, payload: dict[str, Any], assigned: dict[str, str], workspace: str) -> None:
    found = _capture_of(event, payload, assigned)
    if found is None:
        return
    write_marker(workspace, found)
    info = http_service(workspace)
    # a drain already at work (a huge transcript in parts) keeps the others: this hook sends its own
    others = not draining(workspace)
    if info is None or not drain_through(info, workspace, capture_budget(), found["session_id"], others):
        spawn_drain(workspace)


def _drain_lock(workspace: str) -> Any:
    """The lock one `reme hook drain` per workspace holds (taken without waiting)."""
    from filelock import FileLock

    return FileLock(os.path.join(_marker_dir(workspace), ".drain.lock"), timeout=0)


def draining(workspace: str) -> bool:
    """Whether a `reme hook drain` holds the workspace's drain lock now."""
    from filelock import Timeout

    lock = _drain_lock(workspace)
    try:
        lock.acquire()
    except Timeout:
        return True
    lock.release()
    return False


def recall(event: str, payload: dict[str, Any], assigned: dict[str, str], workspace: str) -> None:
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
        params: dict[str, Any] = {"query": prompt[:2000], **PROMPT_RECALL}
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


def run_in_process(workspace: str, job: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run recall in this process on the workspace (no cron, no background loops): only the jobs
    recall runs are built and only their step modules loaded, so a session starts sooner."""
    import asyncio

    from reme.app.application import Application
    from reme.app.config import load_config

    async def run() -> dict[str, Any]:
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

    lock = _drain_lock(workspace)
    try:
        lock.acquire()
    except Timeout:
        return
    try:
        info = http_service(workspace)
        if info is not None and drain_through(info, workspace, 600):
            return
        asyncio.run(_drain_in_process(workspace))
    finally:
        lock.release()


async def _drain_in_process(workspace: str) -> None:
    from reme.app.application import Application
    from reme.app.config import load_config
    from reme.app.jobs import ParameterError, validate_params

    config = load_config(None, {"workspace_dir": workspace, "scheduler.cron": False})
    async with Application(config) as app:
        handled: set[tuple[str, str]] = set()  # a marker rewritten meanwhile is a new capture
        while pending := [item for item in markers(workspace) if item not in handled]:
            for path, raw in pending:
                handled.add((path, raw))
                capture = _capture(path, raw)
                while capture is not None:
                    try:
                        params, part = append_params(workspace, capture)
                    except OSError as exc:
                        failed(path, f"its transcript cannot be read: {exc.strerror or exc}")
                        break
                    if params["messages"]:
                        try:
                            validate_params(app.jobs["agent_session_append"], params)
                        except ParameterError as exc:  # the input itself is refused: resending fails again
                            failed(path, f"refused: {exc}")
                            break
                        response = await app.run("agent_session_append", **params)
                        if not response.success:  # a conflict, a failing store: tried again next time
                            failed(path, str(response.answer))
                            break
                        saved_up_to(workspace, capture, part.end, response.metadata.get("skipped"))
                    else:
                        saved_up_to(workspace, capture, part.end, part.skipped)
                    if not part.more:
                        _done(path, raw)
                        break


# entry -----------------------------------------------------------------------------------------


def main(args: list[str], stdin: Any = None) -> int:
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
                if drop(workspace, session_id)
                else f"no capture of {session_id!r} is queued"
            )
            return 0
        if event == "codex-notify":
            payload = read_payload(io.StringIO(notice or "{}"))
        else:
            payload = read_payload(sys.stdin if stdin is None else stdin)
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

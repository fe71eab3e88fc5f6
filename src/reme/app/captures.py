"""Queued agent-session captures: the markers capture hooks leave, why one failed, how far each
transcript is saved, and sending the rest through the application (docs/capture-safety.md).

One reading of that state for every client: the hooks write and drain it, the `capture_status`,
`capture_retry` and `capture_drop` jobs show and act on it (Studio's status view, HTTP, MCP, CLI),
`reme doctor` reports it. Files, under `metadata/agent/captures/`:

- `<session>.json`: a capture to do (the transcript, its source); removed once the transcript is saved;
- `<session>.failed`: why the last try failed (reason, time, attempts); the marker stays;
- `<session>.sent`: how far the transcript is saved and the records skipped so far, by reason.

Only the standard library is imported here at load time: a hook imports this module and must start fast.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, TypedDict

from reme.jsontypes import JSONObject, JSONValue, json_depth, parse_json

if TYPE_CHECKING:
    from filelock import BaseFileLock

    from reme.app.jobs import JobHost

CAPTURES = os.path.join("metadata", "agent", "captures")
MAX_TRANSCRIPT_BYTES = 16 << 20  # the tail of a longer transcript: earlier turns were captured before
MAX_LINE_BYTES = 8 << 20  # one record (a turn with a pasted image); a longer line is skipped, counted
MAX_PART_BYTES = 1 << 20  # one request to the service: a long transcript goes in parts, others between
MAX_ENTRIES = 50000  # = agent_session_append's maxItems
MAX_ENTRY_DEPTH = 90  # a record nested deeper is skipped: agent_session_append refuses over 100 levels
MARK_BYTES = 256  # the bytes before a saved offset, hashed: a replaced transcript is read again whole
MAX_REASON = 300  # characters of a failure's reason kept beside its marker
# what Claude Code and Codex name sessions by (`reme.pipelines.capture.redaction.UUID`, not loaded here)
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
STALE_CAPTURE_SECONDS = 120  # a hook's marker lives for a moment; older ones were not picked up


class Capture(TypedDict):
    """A marker's content: which transcript of which session to save, and what asked for it."""

    session_id: str
    transcript_path: str
    source: str
    event: str
    cwd: JSONValue
    at: float


class AppendParams(TypedDict, total=False):
    """`agent_session_append`'s parameters for one part of a transcript."""

    session_id: str
    source: str
    messages: list[JSONObject]
    skipped: dict[str, int]


def plain_session_id(session_id: object) -> bool:
    """Whether `session_id` can name a marker file: the jobs' own rule (`reme.workspace.transcript`)."""
    from reme.workspace.transcript import is_session_id  # imported here: this module stays stdlib-only

    return isinstance(session_id, str) and is_session_id(session_id)


# reading a transcript in parts ----------------------------------------------------------------


@dataclass
class Part:
    """What one read of a transcript gives: entries to send, where they end, lines left out by reason."""

    entries: list[JSONObject] = field(default_factory=list)
    end: int = 0
    end_mark: str = ""  # `end_mark(the file, end)`: what the next read checks before trusting `end`
    skipped: dict[str, int] = field(default_factory=dict)
    more: bool = False  # a bound was reached: the rest follows in the next part

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def read_transcript(path: str, start: int = 0, mark: str = "") -> Part:
    """The JSON lines of a transcript from byte `start` (at most its last 16 MiB), read line by line
    in bounded memory, up to MAX_PART_BYTES / MAX_ENTRIES (`more` says the rest waits for the next
    part). A line still being written is left for later; a line that is not JSON, longer than
    MAX_LINE_BYTES or nested deeper than MAX_ENTRY_DEPTH is skipped and counted, never the turns
    around it. `mark` (the `end_mark` of the read that ended at `start`) tells a file that grew from
    one that was replaced: a replaced file is read from its start. A path that is no longer the
    regular file its capture queued (a link put there since, a FIFO) raises OSError, read nothing."""
    part = Part()
    with _open_transcript(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if not 0 <= start <= size or (mark and start and _mark_at(handle, start) != mark):
            start = 0  # a shorter file, or another one at the same path: read it all
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
                entry = parse_json(line)
            except ValueError:
                if line.strip():
                    part.skip("not_json")
                continue
            if not isinstance(entry, dict):
                part.skip("not_an_object")
            elif json_depth(entry, MAX_ENTRY_DEPTH) > MAX_ENTRY_DEPTH:
                part.skip("over_depth")
            else:
                part.entries.append(entry)
        part.end_mark = _mark_at(handle, part.end)
    return part


def _open_transcript(path: str) -> IO[bytes]:
    """`path` opened to read, when it is still the file a hook checked: a hook queues a transcript
    with its links resolved, so a link at or above it now was put there since (it could lead out of
    the transcript folders), and a FIFO or a device could block or never end."""
    if os.path.realpath(path) != os.path.abspath(path):
        raise OSError(
            f"{path} is reached through a symbolic link now, not as its capture was queued; "
            "put the transcript file back or drop the capture"
        )
    return open_regular(path, follow_links=False)  # a link swapped in since the check above is refused


def open_regular(path: str | os.PathLike[str], *, follow_links: bool = True) -> IO[bytes]:
    """`path` opened to read in binary when it is a regular file; else OSError saying what it is.
    Opened without waiting: a FIFO named like a transcript would block the reader for good."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    handle = os.fdopen(os.open(path, flags), "rb")
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        handle.close()
        raise OSError(f"{path} is not a regular file (a folder, a FIFO, a device or a socket)")
    return handle


def _mark_at(handle: IO[bytes], offset: int) -> str:
    """A hash of the MARK_BYTES before `offset` in the file."""
    handle.seek(max(0, offset - MARK_BYTES))
    return hashlib.sha256(handle.read(min(offset, MARK_BYTES))).hexdigest()[:32]


def _skip_line(handle: IO[bytes]) -> None:
    """Read past the end of the current line without holding it (it may be huge)."""
    while (chunk := handle.readline(1 << 20)) and not chunk.endswith(b"\n"):
        pass


def session_id_of(source: str, transcript: str) -> str | None:
    """The session a transcript records, when the hook input names none (Codex: its `session_meta`
    line; Claude Code: the file name, or the id its entries name)."""
    from reme.pipelines.capture.transcripts import claude_session_id, codex_session_id

    if source == "codex":
        return codex_session_id(read_transcript(transcript).entries[:5])
    return claude_session_id(transcript, read_transcript(transcript).entries)


# markers --------------------------------------------------------------------------------------


def marker_dir(workspace: str) -> str:
    return os.path.join(workspace, CAPTURES)


def file_name(session_id: str) -> str:
    """The name a session's capture files take: the session id as its transcript is stored
    (`safe_id`: none holding a secret). A UUID, what Claude Code and Codex name sessions by, is kept
    without loading the redactor, so a hook starts as fast as before."""
    if UUID.fullmatch(session_id):
        return session_id
    from reme.pipelines.capture.redaction import safe_id  # loaded only for an id that needs a scan

    return safe_id(session_id)


def marker_path(workspace: str, session_id: str) -> str:
    return os.path.join(marker_dir(workspace), f"{file_name(session_id)}.json")


def _write_json(path: str, value: Mapping[str, object]) -> None:
    """Replace `path` with `value` as JSON atomically (a reader sees the old file or the new one)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
    os.replace(tmp, path)


def _read_json(path: str) -> JSONObject | None:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def write_marker(workspace: str, capture: Capture) -> str:
    """Record a capture to do (atomically); a newer capture of the session replaces the older one.
    The session is named as it is stored (`file_name`): `agent_session_append` maps it to itself."""
    os.makedirs(marker_dir(workspace), exist_ok=True)
    path = marker_path(workspace, capture["session_id"])
    _write_json(path, {**capture, "session_id": file_name(capture["session_id"])})
    return path


def markers(workspace: str, first: str | None = None) -> list[tuple[str, str]]:
    """(path, raw text) of every capture still to do: `first` (a session id) first, then the ones
    that never failed, oldest first, then failed ones (retried last)."""
    folder = marker_dir(workspace)
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".json")]
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        path = os.path.join(folder, name)
        try:  # bytes that are not UTF-8 read as damaged JSON: the marker is reported, not fatal
            with open(path, encoding="utf-8", errors="replace") as handle:
                found.append((os.path.getmtime(path), path, handle.read()))
        except OSError:
            continue
    ordered = [(path, raw) for _, path, raw in sorted(found)]
    lead = marker_path(workspace, first) if first else None
    return sorted(ordered, key=lambda item: (item[0] != lead, os.path.exists(failure_path(item[0]))))


def done(path: str, raw: str) -> None:
    """Remove a marker (and its failure note) unless a newer capture rewrote it meanwhile."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:  # as `markers` read it
            if handle.read() == raw:
                os.unlink(path)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(failure_path(path))
    except OSError:
        pass


def parse_capture(raw: str) -> Capture | None:
    """The capture a marker's text names; None when it is damaged."""
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    session_id, transcript, source = (
        value.get("session_id"),
        value.get("transcript_path"),
        value.get("source"),
    )
    if not (isinstance(session_id, str) and isinstance(transcript, str) and isinstance(source, str)):
        return None
    event, at = value.get("event"), value.get("at")
    return Capture(
        session_id=session_id,
        transcript_path=transcript,
        source=source,
        event=event if isinstance(event, str) else "capture",
        cwd=value.get("cwd"),
        at=float(at) if isinstance(at, (int, float)) else 0.0,
    )


# failures -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    """Why the last try of a capture failed (kept beside its marker)."""

    reason: str
    at: str
    attempts: int


def failure_path(marker: str) -> str:
    return marker[: -len(".json")] + ".failed"


def read_failure(marker: str) -> Failure | None:
    note = _read_json(failure_path(marker))
    if note is None:
        return None
    attempts = note.get("attempts")
    return Failure(
        reason=str(note.get("reason") or "unknown"),
        at=str(note.get("at") or ""),
        attempts=attempts if isinstance(attempts, int) and attempts > 0 else 1,
    )


def failed(marker: str, reason: str) -> str:
    """Note why a capture failed beside its marker, which stays: the next drain tries it again,
    `capture_status` and `reme doctor` show the reason, `capture_drop` gives it up. Returns the
    bounded reason, redacted: an answer may quote the input it refused, and the note stays on disk."""
    from reme.pipelines.capture.redaction import redact_head  # only when a capture failed

    reason = redact_head(reason, MAX_REASON)[0]
    before = read_failure(marker)
    note = {
        "reason": reason,
        "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "attempts": (before.attempts if before else 0) + 1,
    }
    _write_json(failure_path(marker), note)
    return reason


def drop(workspace: str, session_id: str) -> bool:
    """Give up a queued capture (`reme hook drop`, `capture_drop`); False when there is none."""
    if not plain_session_id(session_id):
        return False
    marker = marker_path(workspace, session_id)
    found = os.path.exists(marker)
    for path in (marker, failure_path(marker)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    return found


# how far a transcript is saved ----------------------------------------------------------------


@dataclass(frozen=True)
class Sent:
    """How far a session's transcript is saved, and the records skipped so far, by reason."""

    transcript: str = ""  # `path_key` of the transcript the offset belongs to
    offset: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    mark: str = ""  # the read's `end_mark` ("" from a reme that did not write one: the offset is trusted)


def path_key(transcript_path: str) -> str:
    """A transcript's path as `.sent` keeps it, a hash: the note outlives the capture, and a path can
    hold a secret (Claude Code names a transcript after its session)."""
    return hashlib.sha256(transcript_path.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _sent_path(workspace: str, session_id: str) -> str:
    return os.path.join(marker_dir(workspace), f"{file_name(session_id)}.sent")


def _counts(value: JSONValue) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}


def read_sent(path: str) -> Sent:
    note = _read_json(path) or {}
    transcript, offset, mark = note.get("transcript"), note.get("offset"), note.get("mark")
    named = note.get("transcript_path")  # an earlier reme wrote the path itself
    if not isinstance(transcript, str):
        transcript = path_key(named) if isinstance(named, str) else ""
    return Sent(
        transcript=transcript,
        offset=offset if isinstance(offset, int) and offset >= 0 else 0,
        skipped=_counts(note.get("skipped")),
        mark=mark if isinstance(mark, str) else "",
    )


def append_params(workspace: str, capture: Capture) -> tuple[AppendParams, Part]:
    """The `agent_session_append` parameters for a capture: the next part of the lines its
    transcript gained since the last part that was saved (from the start for a new file)."""
    sent = read_sent(_sent_path(workspace, capture["session_id"]))
    same = sent.transcript == path_key(capture["transcript_path"])
    part = read_transcript(capture["transcript_path"], sent.offset if same else 0, sent.mark if same else "")
    params = AppendParams(session_id=capture["session_id"], source=capture["source"], messages=part.entries)
    if part.skipped:
        params["skipped"] = part.skipped
    return params, part


def saved_up_to(
    workspace: str, capture: Capture, part: Part, skipped: Mapping[str, int] | None = None
) -> None:
    """Remember how far a transcript is saved (the end of `part`, with its mark), so the next
    capture sends only what follows, and the records skipped so far (by reason) for
    `capture_status` and `reme doctor`."""
    path = _sent_path(workspace, capture["session_id"])
    before = read_sent(path)
    transcript = path_key(capture["transcript_path"])
    counts = dict(before.skipped) if before.transcript == transcript else {}
    for reason, count in (skipped or {}).items():
        counts[reason] = counts.get(reason, 0) + int(count)
    note = {
        "transcript": transcript,
        "offset": part.end,
        "skipped": counts,
        "mark": part.end_mark,
    }
    _write_json(path, note)


def skipped_counts(value: JSONValue) -> dict[str, int] | None:
    """The per-reason counts in a job answer's `skipped` metadata, when it has them."""
    return _counts(value) if isinstance(value, dict) else None


# one drain at a time per workspace ------------------------------------------------------------


def drain_lock(workspace: str) -> BaseFileLock:
    """The lock one drain per workspace holds (taken without waiting)."""
    from filelock import FileLock

    os.makedirs(marker_dir(workspace), exist_ok=True)
    return FileLock(os.path.join(marker_dir(workspace), ".drain.lock"), timeout=0)


def draining(workspace: str) -> bool:
    """Whether a drain (a `reme hook drain`, a `capture_retry`) holds the workspace's drain lock now."""
    from filelock import Timeout

    lock = drain_lock(workspace)
    try:
        lock.acquire()
    except Timeout:
        return True
    lock.release()
    return False


# the state a user sees ------------------------------------------------------------------------


@dataclass(frozen=True)
class Queued:
    """A capture not saved yet: waiting (no try failed) or failed (with the last failure)."""

    session_id: str
    transcript_path: str
    source: str
    age_s: float
    failure: Failure | None


@dataclass(frozen=True)
class Damaged:
    """A session saved with records of its transcript skipped because they could not be used."""

    session_id: str
    skipped: dict[str, int]


@dataclass(frozen=True)
class CaptureState:
    failed: list[Queued]
    pending: list[Queued]  # waiting without a failure; `stale` ones were not picked up in time
    damaged: list[Damaged]

    def stale(self) -> list[Queued]:
        return [q for q in self.pending if q.age_s > STALE_CAPTURE_SECONDS]


def capture_state(workspace: str, now: float | None = None) -> CaptureState:
    """Every queued capture (failed ones with their reason) and every session saved with damaged
    records skipped, read from `metadata/agent/captures/`."""
    from reme.pipelines.capture.session import DAMAGED

    now = time.time() if now is None else now
    failed_ones: list[Queued] = []
    pending: list[Queued] = []
    for path, raw in markers(workspace):
        capture = parse_capture(raw)
        try:
            age = max(0.0, now - os.path.getmtime(path))
        except OSError:
            continue  # saved meanwhile
        session = os.path.basename(path)[: -len(".json")]
        failure = read_failure(path)
        if capture is None and failure is None:
            failure = Failure("the marker is damaged (not a capture's JSON); drop it", "", 1)
        queued = Queued(
            session_id=session,
            transcript_path=capture["transcript_path"] if capture else "",
            source=capture["source"] if capture else "",
            age_s=round(age, 1),
            failure=failure,
        )
        (failed_ones if failure else pending).append(queued)
    damaged = []
    with contextlib.suppress(FileNotFoundError):
        for name in sorted(os.listdir(marker_dir(workspace))):
            if name.endswith(".sent"):
                counts = read_sent(os.path.join(marker_dir(workspace), name)).skipped
                kept = {k: v for k, v in counts.items() if k in DAMAGED and v}
                if kept:
                    damaged.append(Damaged(name[: -len(".sent")], kept))
    return CaptureState(failed_ones, pending, damaged)


def retry_command(workspace: str) -> str:
    return f"reme hook drain workspace_dir={workspace}"


def drop_command(workspace: str, session_id: str) -> str:
    return f"reme hook drop session_id={session_id} workspace_dir={workspace}"


# saving queued captures through an application -------------------------------------------------


@dataclass
class DrainReport:
    """What one drain through an application did."""

    saved: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # session -> reason


async def drain_in_app(app: JobHost, workspace: str, only: str | None = None) -> DrainReport:
    """Save every queued capture (or only session `only`) by running `agent_session_append` on
    `app`, part by part. A capture that fails keeps its marker with the reason; the others go on.
    Markers written meanwhile are taken too (a rewritten marker is a new capture)."""
    from reme.app.jobs import ParameterError, validate_params

    report = DrainReport()
    handled: set[tuple[str, str]] = set()
    own = marker_path(workspace, only) if only else None
    while pending := [i for i in markers(workspace) if i not in handled and own in (None, i[0])]:
        for path, raw in pending:
            handled.add((path, raw))
            session = os.path.basename(path)[: -len(".json")]
            capture = parse_capture(raw)
            if capture is None:
                report.failed[session] = failed(path, "the marker is damaged (not a capture's JSON); drop it")
                continue
            while True:
                try:
                    params, part = append_params(workspace, capture)
                except OSError as exc:
                    report.failed[session] = failed(
                        path, f"its transcript cannot be read: {exc.strerror or exc}"
                    )
                    break
                if params["messages"]:
                    try:
                        validate_params(app.jobs["agent_session_append"], dict(params))
                    except ParameterError as exc:  # the input itself is refused: resending fails again
                        report.failed[session] = failed(path, f"refused: {exc}")
                        break
                    response = await app.run("agent_session_append", **params)
                    if not response.success:  # a conflict, a failing store: tried again next time
                        report.failed[session] = failed(path, str(response.answer))
                        break
                    counts = skipped_counts(response.metadata.get("skipped"))
                    saved_up_to(workspace, capture, part, part.skipped if counts is None else counts)
                else:
                    saved_up_to(workspace, capture, part, part.skipped)
                if not part.more:
                    done(path, raw)
                    report.saved.append(session)
                    break
    return report

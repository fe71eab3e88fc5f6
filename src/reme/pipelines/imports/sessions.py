"""Past agent sessions imported: Claude Code transcripts and Codex CLI rollouts, saved exactly as the
hooks save them (`agent_session_append`: secrets redacted, idempotent by message id, distillation
queued), with a summary per project.

The session id comes from the transcript (`claude_session_id`, `codex_session_id`); the project is
the folder the session ran in (its entries' `cwd`), else the transcript's folder (Claude Code keeps
one folder per project under `~/.claude/projects`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from reme.errors import ReMeError
from reme.jsontypes import JSONObject
from reme.pipelines.capture.messages import Occurrences
from reme.pipelines.capture.session import agent_session_append
from reme.pipelines.capture.transcripts import claude_session_id, codex_session_id
from reme.pipelines.port import MemoryPort
from reme.workspace.transcript import is_session_id

BATCH_ENTRIES = 5000  # entries per append: a long transcript is saved in parts (appends merge by id)
_ROLLOUT = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$")
SOURCE_NAMES = {"claude_code": "Claude Code", "codex": "Codex"}


@dataclass(frozen=True)
class SessionFile:
    """One transcript as read from the host: where it is and its parsed JSON lines."""

    path: str
    entries: list[object]  # parsed JSON lines
    unreadable: int = 0  # lines that were not JSON
    problem: str | None = None  # why the file could not be read at all


@dataclass
class ProjectTally:
    sessions: int = 0
    new: int = 0  # sessions that gained messages
    messages: int = 0  # messages added


@dataclass
class SessionsReport:
    source: str
    origin: str
    projects: dict[str, ProjectTally] = field(default_factory=dict)
    queued: list[str] = field(default_factory=list)  # sessions queued for distillation
    skipped: list[dict[str, str]] = field(default_factory=list)

    def answer(self) -> str:
        tallies = self.projects.values()
        sessions, new = sum(t.sessions for t in tallies), sum(t.new for t in tallies)
        lines = [
            f"imported {SOURCE_NAMES[self.source]} sessions from {self.origin}: {sessions} session(s) in "
            f"{len(self.projects)} project(s), {new} with new messages, {sessions - new} unchanged; "
            f"{sum(t.messages for t in tallies)} message(s) added, {len(self.queued)} session(s) queued "
            f"for distillation, {len(self.skipped)} skipped"
        ]
        for name, tally in sorted(self.projects.items()):
            lines.append(
                f"  {name}: {tally.sessions} session(s), {tally.new} with new messages, "
                f"{tally.messages} message(s) added"
            )
        lines += [f"- {entry['item']}: {entry['reason']}" for entry in self.skipped]
        return "\n".join(lines)

    def metadata(self) -> JSONObject:
        return {
            "kind": self.source,
            "source": self.origin,
            "projects": {name: {**vars(tally)} for name, tally in sorted(self.projects.items())},
            "queued": [*self.queued],
            "skipped": [{**entry} for entry in self.skipped],
        }


def session_id_of(source: str, item: SessionFile) -> str | None:
    if source == "claude_code":
        return claude_session_id(item.path, item.entries)
    found = codex_session_id(item.entries)
    match = _ROLLOUT.search(item.path)
    if found and is_session_id(found):
        return found
    return match.group(1) if match else found  # a `session_meta` id no file can be named after: the file's


def project_of(item: SessionFile) -> str:
    """The folder name the session ran in (`cwd`), else the transcript's folder name."""
    for entry in item.entries[:50]:
        if not isinstance(entry, Mapping):
            continue
        payload = entry.get("payload") if isinstance(entry.get("payload"), Mapping) else entry
        cwd = payload.get("cwd") if isinstance(payload, Mapping) else None
        if isinstance(cwd, str) and cwd.strip("/\\"):
            return re.split(r"[\\/]", cwd.rstrip("/\\"))[-1]
    return posixpath.basename(posixpath.dirname(item.path.replace("\\", "/"))) or "(none)"


async def import_sessions(
    port: MemoryPort,
    files: Sequence[Callable[[], SessionFile]],
    *,
    source: str,
    origin: str,
    max_message_chars: int,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> SessionsReport:
    """Save every session of `files` (each read only when its turn comes) through the capture path."""
    report = SessionsReport(source, origin)
    for number, read in enumerate(files, 1):
        item = read()
        progress(number - 1, len(files))
        if item.problem:
            report.skipped.append({"item": item.path, "reason": item.problem})
            continue
        session_id = session_id_of(source, item)
        if item.unreadable:
            report.skipped.append(
                {"item": item.path, "reason": f"{item.unreadable} line(s) not JSON, left out"}
            )
        if not item.entries:
            report.skipped.append({"item": item.path, "reason": "no JSON lines: not a transcript"})
            continue
        if session_id is None:
            report.skipped.append({"item": item.path, "reason": "no session id in the file or its name"})
            continue
        tally = report.projects.setdefault(project_of(item), ProjectTally())
        tally.sessions += 1
        added, queued = 0, False
        seen: Occurrences = {}  # one count over the parts: a turn repeated in a later part keeps its own id
        try:
            for start in range(0, len(item.entries), BATCH_ENTRIES):
                outcome = await agent_session_append(
                    port,
                    session_id=session_id,
                    messages=item.entries[start : start + BATCH_ENTRIES],
                    source=source,
                    max_message_chars=max_message_chars,
                    seen=seen,
                )
                count = outcome.metadata.get("added")
                added += count if isinstance(count, int) else 0
                queued = queued or bool(outcome.metadata.get("queued"))
        except (ReMeError, ValueError) as exc:
            tally.sessions -= 1
            report.skipped.append({"item": item.path, "reason": str(exc)})
            continue
        tally.messages += added
        tally.new += added > 0
        if queued:
            report.queued.append(session_id)
    progress(len(files), len(files))
    return report

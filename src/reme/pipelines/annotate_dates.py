"""`annotate_dates`: resolve relative dates in notes written by hand, on request (docs/spec.md §17.1).

What reme writes itself is annotated as it is written; a person's notes only when asked, for one
file or a folder. Each file's reference date is the `date` given, else the date of its path
(`daily/2026-06-01/…`), else its front matter's `date`; a file with none is skipped and said so.
Transcripts (`session/`), the journal and `metadata/` stay as recorded. All changed files and the
run's record go in one file transaction under the `dream` lock, journaled like a dream run, so
`dream_revert` undoes it; a second run over the same files changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime

from reme.errors import ReMeError
from reme.jsontypes import JSONObject
from reme.pipelines.journal.records import (
    Modified,
    RunRecord,
    append_day_log,
    new_run_id,
    record_path,
    record_text,
)
from reme.pipelines.outcome import Outcome
from reme.pipelines.port import MemoryPort
from reme.workspace import frontmatter, relative_dates
from reme.workspace.dates import is_date, path_day
from reme.workspace.textio import sha256_of
from reme.workspace.transaction import Change

KIND = "annotate"
RECORDED_ROLES = ("session", "journal", "metadata")
# A front matter `date`, a day or a moment (`2024-03-14 10:00`, `2024-03-14T23:30:00+09:00`): the day
# as written, in the writer's own zone, is the day their "yesterday" counts from.
_WRITTEN_DAY = re.compile(
    r"(\d{4}-\d{2}-\d{2})(?:[Tt ][ \t]*\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?[ \t]*(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?)?"
)


@dataclass(frozen=True)
class Annotated:
    """A file whose relative dates a run resolved: how many, against which day."""

    path: str
    reference_date: str
    annotations: int


@dataclass
class _Run:
    """What an annotate run looked at, changed and skipped (the response metadata, docs/spec.md §17.1)."""

    files: int
    dry_run: bool
    changed: list[Annotated] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    run_id: str | None = None
    journal_path: str | None = None

    def metadata(self) -> JSONObject:
        return {
            "run_id": self.run_id,
            "files": self.files,
            "changed": [{**vars(c)} for c in self.changed],
            "annotations": sum(c.annotations for c in self.changed),
            "skipped": [{**s} for s in self.skipped],
            "dry_run": self.dry_run,
            "journal_path": self.journal_path,
        }

    def summary(self) -> str:
        changed, annotations = self.changed, sum(c.annotations for c in self.changed)
        if not changed:
            head = f"annotate_dates: {self.files} file(s) looked at; nothing to resolve"
        elif self.dry_run:
            head = f"annotate_dates (dry run): would resolve {annotations} date(s) in {len(changed)} file(s)"
        else:
            head = (
                f"annotate_dates run {self.run_id}: resolved {annotations} date(s) in {len(changed)} "
                "file(s); undo with dream_revert"
            )
        lines = [head]
        lines += [f"ANNOTATED {c.path} — {c.annotations} as of {c.reference_date}" for c in changed]
        lines += [f"SKIPPED {s['path']} — {s['reason']}" for s in self.skipped]
        return "\n".join(lines)


async def _files(port: MemoryPort, path: str, max_files: int) -> list[str]:
    """The Markdown files at `path` (a file, or a folder walked recursively), at most `max_files`."""
    cleaned = path.strip().rstrip("/")
    try:
        relative = port.check_path(cleaned) if cleaned not in ("", ".") else ""
    except ValueError as exc:
        raise ReMeError(f"path: {exc}") from None
    recorded = {port.folder(role) for role in RECORDED_ROLES}
    if relative.split("/", 1)[0] in recorded:
        raise ReMeError(
            f"{relative!r} is under {relative.split('/', 1)[0]}/, which stays as recorded; annotate notes "
            "elsewhere (daily/, digest/, resource/ or your own folders)"
        )
    if relative.endswith(".md"):
        if not port.exists(relative):
            raise ReMeError(f"no file {relative!r}; give a workspace-relative Markdown file or folder")
        return [relative]
    entries = await port.list_files(relative, extensions=(".md",), recursive=True)
    found = [  # `_name.md` pages are generated (`digest/_buckets.md`): rewritten by reme, not notes
        e.path
        for e in entries
        if e.path.split("/", 1)[0] not in recorded and not e.path.rsplit("/", 1)[-1].startswith("_")
    ]
    if not found and relative and not port.exists(relative):
        raise ReMeError(f"no file or folder {relative!r} in the workspace")
    if len(found) > max_files:
        raise ReMeError(
            f"{relative or 'the workspace'} holds {len(found)} Markdown files, more than max_files "
            f"{max_files}; annotate a smaller folder or raise max_files"
        )
    return found


def _reference(path: str, text: str, given: date | None) -> date | None:
    if given is not None:
        return given
    day = path_day(path)
    if day is not None:
        return day
    value = frontmatter.parse(text).metadata.get("date")
    written = _WRITTEN_DAY.fullmatch(value.strip()) if isinstance(value, str) else None
    return date.fromisoformat(written.group(1)) if written and is_date(written.group(1)) else None


async def annotate_dates(
    port: MemoryPort, *, path: str, day: date | None, dry_run: bool, max_files: int
) -> Outcome:
    files = await _files(port, path, max_files)
    started = datetime.now(port.tz)
    record = RunRecord(new_run_id(started), KIND, started.isoformat(timespec="seconds"), [])
    run = _Run(files=len(files), dry_run=dry_run)
    changes: list[Change] = []
    async with port.exclusive("dream", KIND):
        for name in files:
            loaded = await port.load(name)
            if loaded is None:
                continue
            reference = _reference(name, loaded.content, day)
            if reference is None:
                run.skipped.append({"path": name, "reason": "no reference date (give date)"})
                continue
            annotated, added = relative_dates.resolve(loaded.content, reference)
            if not added:
                continue
            run.changed.append(Annotated(name, reference.isoformat(), added))
            record.modified.append(Modified(name, loaded.sha256, loaded.content, sha256_of(annotated)))
            record.actions.append(
                {
                    "unit": "",
                    "action": "ANNOTATE",
                    "target_path": name,
                    "reason": f"{added} date(s) as of {reference}",
                }
            )
            changes.append(Change(name, annotated, loaded.sha256))
        if changes and not dry_run:
            now = datetime.now(port.tz)
            record.finished_at = now.isoformat(timespec="seconds")
            await port.commit([*changes, Change(record_path(port, record.run_id), record_text(record), None)])
            run.run_id = record.run_id
            run.journal_path = await append_day_log(
                port, record, now.date().isoformat(), now.strftime("%H:%M:%S")
            )
    return Outcome(run.summary(), run.metadata())

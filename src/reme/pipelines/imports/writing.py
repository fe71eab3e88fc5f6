"""Writing imported material into the workspace: plan everything first, then write, then report.

Every importer (one module per format) turns its source into `ImportedNote`s (Markdown notes under
the `imports/` folder), `ImportedFile`s (attachments, bytes) and `ImportedTranscript`s (session
transcripts, merged by message id with the writer auto_memory uses). `write_import` checks all of
them before the first write — a note in the way that this import did not write refuses the whole
import — then writes only what changed, so a second import of the same source creates nothing.

A note's provenance sits in its front matter: `source` (the format), `imported_from` (where it was
read), `import_id` (the original id: a section, a memory id, a vault path) and `import_sha256` (the
hash of the note as rendered from the source). A note whose `import_sha256` still matches is left
alone, so edits a person made after the import survive a re-import of an unchanged source. Where
each source item was written is kept in `metadata/` (`IMPORTED_NOTES`); when a note is no longer
there (moved inside reme), the workspace's notes are searched for its provenance and a re-import
updates it where it now lives instead of writing a second copy.
Attachments carry no front matter: the hash of what an import wrote sits in `metadata/`, and an
attachment whose bytes differ from it (changed by hand, or never imported) is never overwritten but
reported as skipped; one another source's import wrote (`FILE_ORIGINS`: two vaults under one folder
name) is in the way as a note of another source is. Two paths that differ only in case are one file
on macOS and Windows: such a pair within the import, or with a file in the workspace, refuses it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from reme.errors import ReMeError
from reme.jsontypes import JSONObject, JSONValue
from reme.pipelines.capture.messages import TranscriptRecord
from reme.pipelines.capture.redaction import redact, redact_object
from reme.pipelines.capture.transcript_merge import merge, parse_transcript
from reme.pipelines.memory.auto_memory import choose_date, ensure_card, session_path
from reme.pipelines.memory.distil import mark_pending
from reme.pipelines.port import MemoryPort
from reme.workspace import frontmatter
from reme.workspace.fmsplit import split
from reme.workspace.paths import check_relative, first_segment
from reme.workspace.textio import check_text
from reme.workspace.transcript import check_session_id, render_records

IMPORTS_FOLDER = "imports"
FILES_STATE = "imported_files"  # attachment path -> sha256 of the bytes an import wrote there
FILE_ORIGINS = "imported_file_origins"  # attachment path -> the source (`imported_from`) of its import
IMPORTED_NOTES = "imported_notes"  # "<imported_from>\n<import_id>" -> the path the note was written to
MAX_ATTACHMENT_BYTES = 50_000_000
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,100}")  # an id from a source usable as a file name
_PLAIN = re.compile(r"[A-Za-z0-9_/][\w./#@+~-]*")  # read back as the same string (checked anyway)
ROLE_FOLDERS = ("metadata", "session", "daily", "digest", "resource", "journal")
NO_MOVED_NOTES = ("metadata", "session", "journal")  # folders a moved imported note never lives in


@dataclass(frozen=True)
class ImportedNote:
    """A Markdown note to write: its whole text (its own front matter included) and where it came from."""

    path: str
    text: str
    import_id: str
    name: str | None = None  # a `name` to give the note when its own front matter has none

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass(frozen=True)
class ImportedFile:
    """An attachment copied byte for byte."""

    path: str
    data: bytes
    import_id: str


@dataclass(frozen=True)
class ImportedTranscript:
    """Normalised transcript records of one conversation, saved as `session/dialog/<session_id>.jsonl`.
    `superseded`: ids of messages the source now keeps on a branch the user left (an edited or
    regenerated turn), taken out of the saved transcript so that it reads as the conversation does."""

    session_id: str
    records: list[TranscriptRecord]
    superseded: frozenset[str] = frozenset()


@dataclass
class ImportBatch:
    """Everything one import would write, plus the source items it leaves out and why."""

    notes: list[ImportedNote] = field(default_factory=list)
    files: list[ImportedFile] = field(default_factory=list)
    transcripts: list[ImportedTranscript] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    links: dict[str, int] = field(default_factory=lambda: {"kept": 0, "rewritten": 0, "unresolved": 0})
    # import ids unique only within one source (paths in a vault): a note another source wrote is foreign
    ids_per_source: bool = False

    def skip(self, item: str, reason: str) -> None:
        self.skipped.append({"item": item, "reason": reason})

    def objects(self, items: Sequence[JSONValue], what: str, noun: str) -> Iterator[tuple[str, JSONObject]]:
        """(`what[i]`, item) for each JSON object among `items`; anything else is skipped as no `noun`."""
        for index, item in enumerate(items):
            if isinstance(item, dict):
                yield f"{what}[{index}]", item
            else:
                self.skip(f"{what}[{index}]", f"not a {noun} object")


@dataclass
class ImportReport:
    """What an import created, updated, left unchanged and skipped (paths; skipped items with a reason)."""

    kind: str
    source: str
    dry_run: bool = False
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    links: dict[str, int] = field(default_factory=dict)  # kept / rewritten / unresolved wikilinks

    def metadata(self) -> JSONObject:
        found: JSONObject = {
            "kind": self.kind,
            "source": self.source,
            "dry_run": self.dry_run,
            "created": [*self.created],
            "updated": [*self.updated],
            "unchanged": [*self.unchanged],
            "skipped": [{**entry} for entry in self.skipped],
        }
        return {**found, "links": {**self.links}} if self.links else found

    def answer(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        lines = [
            f"{verb} {self.kind} from {self.source}: {len(self.created)} created, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.skipped)} skipped"
        ]
        if self.links:
            kept, rewritten, unresolved = (self.links[k] for k in ("kept", "rewritten", "unresolved"))
            lines.append(
                f"links: {kept + rewritten} resolved ({kept} kept as written, {rewritten} respelled "
                f"to resolve in the workspace), {unresolved} unresolved (left as written)"
            )
        lines += [f"+ {path}" for path in self.created]
        lines += [f"~ {path}" for path in self.updated]
        lines += [f"- {entry['item']}: {entry['reason']}" for entry in self.skipped]
        return "\n".join(lines)


def provenance(kind: str, origin: str, import_id: str, existing: Mapping[str, object]) -> dict[str, str]:
    """The provenance keys of a note; a `source` key the note already has (an Obsidian user's) is kept."""
    keys = {} if "source" in existing else {"source": kind}
    keys.update({"imported_from": origin, "import_id": import_id})
    return keys


def stamped(note: ImportedNote, kind: str, origin: str) -> str:
    """The note's text with its provenance merged into the front matter (its own keys keep their bytes)."""
    document = frontmatter.parse(note.text)
    named = {"name": note.name} if note.name and "name" not in document.metadata else {}
    keys = {
        **named,
        **provenance(kind, origin, note.import_id, document.metadata),
        "import_sha256": note.sha256,
    }
    return _appended(note.text, document, keys) or frontmatter.update(note.text, keys)


def _scalar(value: str) -> str:
    """A path, id or hash as a plain YAML scalar, anything else as a double-quoted (JSON) one."""
    return value if _PLAIN.fullmatch(value) else json.dumps(value, ensure_ascii=False)


def _appended(text: str, document: frontmatter.Document, keys: dict[str, str]) -> str | None:
    """`text` with new string `keys` as the last front-matter lines — what `frontmatter.update` would
    write, without its YAML emitter (the cost of an import of thousands of notes) — or None when
    that is not certain: a key already there, CRLF lines, or a result that does not read back right."""
    if document.error or any(key in document.metadata for key in keys) or "\r" in document.head:
        return None
    lines = "".join(f"{key}: {_scalar(value)}\n" for key, value in keys.items())
    parts = split(text)
    if parts.has_front_matter:
        result = text[: parts.yaml_end] + lines + text[parts.yaml_end :]
    else:
        result = f"---\n{lines}---\n{text}"
    check = frontmatter.parse(result)
    return result if check.metadata == {**document.metadata, **keys} and check.body == document.body else None


def _batch_paths(batch: ImportBatch) -> list[str]:
    return [n.path for n in batch.notes] + [f.path for f in batch.files]


def _check_unique(batch: ImportBatch) -> None:
    """Two items to one path, or to paths differing only in case (one file on macOS and Windows)."""
    seen: dict[str, str] = {}
    for path in _batch_paths(batch):
        other = seen.get(path.casefold())
        if other is None:
            seen[path.casefold()] = path
            continue
        case = (
            f" and {other}, which differ only in case (one file on macOS and Windows)"
            if other != path
            else ""
        )
        raise ReMeError(f"the import maps two source items to {path}{case}; rename one of them in the source")


def _elsewhere(batch: ImportBatch) -> str:
    """How to import into a place of its own (a vault's folder is named after it: `name=`)."""
    vault = " (or, for a vault, give it another name=)" if batch.ids_per_source else ""
    return f"import into another folder={vault}"


async def _check_case_twins(port: MemoryPort, batch: ImportBatch) -> None:
    """Refuse an item whose path a workspace file spells with other case: on macOS and Windows
    writing it would replace that file (on Linux the two would not survive a checkout there)."""
    paths = _batch_paths(batch)
    existing: dict[str, list[str]] = {}
    for folder in sorted({first_segment(path) for path in paths}):
        for entry in await port.list_files(folder, recursive=True):
            existing.setdefault(entry.path.casefold(), []).append(entry.path)
    twins = [(path, other) for path in paths for other in existing.get(path.casefold(), []) if other != path]
    if twins:
        shown = "; ".join(f"{path} (the workspace has {other})" for path, other in twins[:5])
        more = f" and {len(twins) - 5} more" if len(twins) > 5 else ""
        raise ReMeError(
            f"nothing imported: {shown}{more} — names that differ only in case are one file on macOS and "
            f"Windows; rename one of them, move the workspace's away or {_elsewhere(batch)}",
            {"conflicts": [other for _path, other in twins]},
        )


async def _classify_note(port: MemoryPort, note: ImportedNote, origin: str | None) -> tuple[str, str | None]:
    """('create' | 'update' | 'unchanged' | 'foreign', sha256 of the file on disk); with `origin`, a
    note imported from elsewhere is foreign even with the same import id (two vaults called `Notes`)."""
    current = await port.load(note.path)
    if current is None:
        return "create", None
    front = frontmatter.parse(current.content).metadata
    if front.get("import_id") != note.import_id or "import_sha256" not in front:
        return "foreign", current.sha256
    if origin is not None and front.get("imported_from") != origin:
        return "foreign", current.sha256
    return ("unchanged" if front.get("import_sha256") == note.sha256 else "update"), current.sha256


@dataclass
class _Written:
    """The attachments earlier imports wrote: the hash of each one's bytes and the source it came from."""

    hashes: JSONObject
    origins: JSONObject

    @classmethod
    def read(cls, port: MemoryPort) -> _Written:
        return cls(port.read_state(FILES_STATE), port.read_state(FILE_ORIGINS))

    def save(self, port: MemoryPort) -> None:
        port.write_state(FILES_STATE, self.hashes)
        port.write_state(FILE_ORIGINS, self.origins)


async def _classify_file(port: MemoryPort, item: ImportedFile, written: _Written, origin: str) -> str:
    """'create', 'unchanged', 'update' (the file is as an earlier import of `origin` wrote it),
    'theirs' (an import of another source wrote it) or 'foreign' (changed by hand, or not imported)."""
    if not port.exists(item.path):
        return "create"
    try:
        current = await port.read_bytes(item.path, max_bytes=max(len(item.data), MAX_ATTACHMENT_BYTES))
    except ReMeError:
        return "foreign"
    if current == item.data:
        return "unchanged"
    if written.origins.get(item.path, origin) != origin:  # none recorded: written before origins were
        return "theirs"
    return "update" if written.hashes.get(item.path) == hashlib.sha256(current).hexdigest() else "foreign"


async def _classify_transcript(port: MemoryPort, item: ImportedTranscript) -> tuple[str, str, str | None]:
    """(action, the merged transcript text, sha256 of the saved one) — merged as auto_memory merges."""
    saved = await port.load(session_path(port, item.session_id))
    text = saved.content if saved else ""
    kept = [r for r in parse_transcript(text, port.tz) if r["id"] not in item.superseded]
    rendered = render_records(merge(kept, item.records, port.tz))
    if rendered == text:
        return "unchanged", rendered, None
    return ("create" if saved is None else "update"), rendered, saved.sha256 if saved else None


@dataclass
class _Plan:
    """What an import will do: an action per path, the texts to save with the versions they replace."""

    actions: list[tuple[str, str]] = field(default_factory=list)  # (create | update | unchanged, path)
    texts: list[tuple[str, str, str | None]] = field(default_factory=list)  # (path, text, expected sha256)
    files: list[ImportedFile] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)

    def add(self, action: str, path: str, text: str | None = None, version: str | None = None) -> None:
        self.actions.append((action, path))
        if text is not None and action != "unchanged":
            self.texts.append((path, text, version))


def _identity(origin: str, import_id: str) -> str:
    return f"{origin}\n{import_id}"


async def relocated(port: MemoryPort, origin: str, planned: Mapping[str, str]) -> dict[str, str]:
    """Where the notes an earlier import of `origin` wrote live now, for those no longer at their
    `planned` path (import id -> path): found by their `imported_from` and `import_id`."""
    recorded = port.read_state(IMPORTED_NOTES)
    missing = {
        _identity(origin, import_id): import_id
        for import_id, path in planned.items()
        if _identity(origin, import_id) in recorded and not port.exists(path)
    }
    found: dict[str, str] = {}
    if not missing:
        return found
    skipped = {port.folder(role) for role in NO_MOVED_NOTES}
    for entry in await port.list_files("", extensions=(".md",), recursive=True):
        if first_segment(entry.path) in skipped:
            continue
        current = await port.load(entry.path)
        if current is None or "import_id" not in current.content:
            continue
        front = frontmatter.parse(current.content).metadata
        import_id = missing.get(_identity(str(front.get("imported_from")), str(front.get("import_id"))))
        if import_id is not None:
            found.setdefault(import_id, entry.path)
    return found


async def _plan(port: MemoryPort, batch: ImportBatch, report: ImportReport, written: _Written) -> _Plan:
    """Read what is on disk for every item and decide; nothing is written here."""
    plan = _Plan()
    origin = report.source if batch.ids_per_source else None
    for note in batch.notes:
        port.check_path(note.path)
        action, version = await _classify_note(port, note, origin)
        if action == "foreign":
            plan.foreign.append(note.path)
            continue
        try:  # what the write would refuse (NUL, a lone surrogate, over the size cap): before any write
            check_text(note.text, "the note")
            text = check_text(stamped(note, report.kind, report.source), "the note")
        except frontmatter.FrontMatterError as exc:
            report.skipped.append({"item": note.import_id, "reason": f"front matter cannot be kept: {exc}"})
            continue
        except ValueError as exc:
            report.skipped.append({"item": note.import_id, "reason": str(exc)})
            continue
        plan.add(action, note.path, text, version)
    for item in batch.files:
        port.check_path(item.path)
        action = await _classify_file(port, item, written, report.source)
        if action == "theirs":  # another source's attachment: in the way, as its notes are
            plan.foreign.append(item.path)
            continue
        if action == "foreign":  # changed by hand, or not ours: never overwritten
            report.skipped.append(
                {"item": item.import_id, "reason": f"{item.path} exists with other content"}
            )
            continue
        plan.add(action, item.path)
        if action != "unchanged":
            plan.files.append(item)
    for transcript in batch.transcripts:
        check_session_id(transcript.session_id)
        action, text, version = await _classify_transcript(port, transcript)
        plan.add(action, session_path(port, transcript.session_id), text, version)
    return plan


async def write_import(
    port: MemoryPort, batch: ImportBatch, *, kind: str, origin: str, dry_run: bool = False
) -> ImportReport:
    """Check every item, refuse the whole import when a note in the way is not this import's, then write."""
    report = ImportReport(kind, origin, dry_run, skipped=list(batch.skipped))
    if any(batch.links.values()):
        report.links = dict(batch.links)
    moved = await relocated(port, origin, {note.import_id: note.path for note in batch.notes})
    if moved:
        notes = [replace(note, path=moved.get(note.import_id, note.path)) for note in batch.notes]
        batch = replace(batch, notes=notes)
    _check_unique(batch)
    await _check_case_twins(port, batch)
    written = _Written.read(port)
    plan = await _plan(port, batch, report, written)
    if plan.foreign:
        shown = ", ".join(plan.foreign[:5]) + (
            f" and {len(plan.foreign) - 5} more" if len(plan.foreign) > 5 else ""
        )
        raise ReMeError(
            f"nothing imported: {shown} already exist(s) and were not written by this import "
            f"(another source, or the file was moved); move them away or {_elsewhere(batch)}",
            {"conflicts": plan.foreign},
        )
    listed = {"create": report.created, "update": report.updated, "unchanged": report.unchanged}
    for action, path in plan.actions:
        listed[action].append(path)
    if dry_run:
        return report
    for item in plan.files:
        await port.save_bytes(item.path, item.data)
        written.hashes[item.path] = hashlib.sha256(item.data).hexdigest()
        written.origins[item.path] = origin
    if plan.files:
        written.save(port)
    # Compare-and-set against the versions read above: a transcript auto_memory merged meanwhile,
    # or a note someone edited, stops the batch with a conflict instead of being overwritten.
    await port.save_batch(plan.texts)
    if batch.notes:
        recorded = port.read_state(IMPORTED_NOTES)
        recorded.update({_identity(origin, note.import_id): note.path for note in batch.notes})
        port.write_state(IMPORTED_NOTES, recorded)
    return report


def note_text(metadata: Mapping[str, JSONValue], body: str) -> str:
    """A fresh note: front matter (name and description first) and the body, secrets redacted."""
    return frontmatter.render_new(redact_object(metadata)) + redact(body)


def check_items(
    items: Sequence[object], *, limit: int, what: str, recognised: Callable[[object], bool], refusal: str
) -> None:
    """Refuse a source with more items than the cap, or none an importer of this format recognises."""
    if len(items) > limit:
        raise ValueError(
            f"the source holds {len(items)} {what}, more than the limit of {limit}; raise max_items"
        )
    if items and not any(recognised(item) for item in items):
        raise ValueError(refusal)


def import_folder(port: MemoryPort, folder: str) -> str:
    """The folder imported notes go to; never a folder with a role of its own (digest/, daily/, ...)."""
    relative = check_relative(folder.strip().strip("/"))
    port.check_path(relative)
    taken = {port.folder(role) for role in ROLE_FOLDERS}
    if first_segment(relative) in taken:
        raise ReMeError(
            f"folder {relative!r} is inside {first_segment(relative)}/, which reme's own pipelines own; "
            f"import into {IMPORTS_FOLDER}/ or another folder"
        )
    return relative


async def queue_distillation(port: MemoryPort, transcripts: Sequence[ImportedTranscript]) -> list[str]:
    """Mark each conversation's card (created when missing) pending, so `auto_memory_pending` distils it."""
    cards = []
    for transcript in transcripts:
        async with port.keyed_lock(f"session:{transcript.session_id}"):
            saved = await port.load(session_path(port, transcript.session_id))
            records = parse_transcript(saved.content if saved else "", port.tz)
            day = choose_date(None, records, port).isoformat()
            path, _front, _created = await ensure_card(port, transcript.session_id, day)
            await mark_pending(port, path)
            cards.append(path)
        await port.refresh_day(day)
    return cards

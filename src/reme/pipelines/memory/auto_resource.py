"""auto_resource (docs/spec.md §11): one card `daily/<date>/<stem>.md` per resource file, kept in step with it.

Added or modified resources are read (text formats, HTML, PDF text layer) and turned into a card by
the memory agent; unchanged ones (same sha256, not pending) are skipped; deleted ones lose their
card. The card carries `source_resource: '[[resource/...]]'`, a stable agent `session_id` (UUID5 of
the resource path) and the `source_sha256` it was written from.

The material is redacted before the model sees it (docs/spec.md §14), and what the model leaves is
checked in code, not trusted to the prompt: a card without a body, or citing a resource the
material does not name, is a failed run, and the card's front matter is what it was plus
`name`/`description` and the keys above (keys the model added or changed are put back). A failed
run leaves the files as they were.

A secret in the resource's path (a file named after a token) is the user's, but it goes no further
than the `source_resource` link, which must name the file to resolve: the model is shown the path
redacted, and the card's file name and first title are made from the redacted stem.

A resource with no readable text (a hostile PDF stopped after `extract_seconds`, an encrypted one, a
binary file) would cost its parse at every full scan: `metadata/resource_unreadable.json` remembers
its content hash and why, and it is skipped unread until its content (or a limit) changes. That record
is a bounded cache: deleted, it costs one parse more.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from reme.errors import LLMUnavailable, ReMeError
from reme.jsontypes import JSONObject
from reme.llm.runner import AgentFailed
from reme.pipelines.capture.redaction import redact
from reme.pipelines.memory.card_names import short_hash, slugify
from reme.pipelines.memory.cards import cards_of_day, daily_days
from reme.pipelines.memory.distil import distil_card, restore
from reme.pipelines.memory.resource_text import SUPPORTED, ResourceText, Unreadable, text_of
from reme.pipelines.outcome import AddUsage
from reme.pipelines.port import MemoryPort
from reme.workspace import frontmatter
from reme.workspace.dates import is_date
from reme.workspace.wikilinks import parse_body_links

log = logging.getLogger(__name__)

RESOURCE_NAMESPACE = uuid.UUID("6f1c1a52-8d7e-5b8e-9a43-2b1e0c7d5a10")
REDACT_MARGIN = 16_384  # text read past the cut, so a secret that starts before it is redacted whole
UNREADABLE_STATE = "resource_unreadable"  # metadata/<this>.json
MAX_REMEMBERED = 1_000  # unreadable files remembered; the oldest are forgotten first
MAX_REASON = 500  # characters of a remembered reason


@dataclass(frozen=True)
class ResourceLimits:
    max_bytes: int = 5_000_000
    max_chars: int = 60_000
    extract_seconds: float = 60.0  # HTML and PDF parsing is stopped after this


@dataclass
class ResourceReport:
    """What happened to each path of a batch."""

    processed: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    days: set[str] = field(default_factory=set)

    def metadata(self) -> JSONObject:
        return {
            "processed": [{**row} for row in self.processed],
            "skipped": [{**row} for row in self.skipped],
            "failed": [{**row} for row in self.failed],
            "pending": [*self.pending],
        }

    def answer(self) -> str:
        parts = [f"{len(self.processed)} processed", f"{len(self.skipped)} skipped"]
        if self.pending:
            parts.append(f"{len(self.pending)} pending")
        if self.failed:
            parts.append(
                f"{len(self.failed)} failed: " + "; ".join(f"{f['path']}: {f['error']}" for f in self.failed)
            )
        return ", ".join(parts)


def resource_session_id(path: str) -> str:
    """Stable agent session id of a resource: UUID5 of its workspace-relative path."""
    return str(uuid.uuid5(RESOURCE_NAMESPACE, path))


def resource_day(port: MemoryPort, path: str) -> str:
    """The date of the resource's dated folder (`resource/YYYY-MM-DD/...`), else today."""
    parts = PurePosixPath(path).parts
    return parts[1] if len(parts) > 2 and is_date(parts[1]) else port.today().isoformat()


def check_resource_path(port: MemoryPort, path: object) -> str:
    """The path if the workspace's path gate accepts it and it lies under `resource/`."""
    root = port.folder("resource")
    if not isinstance(path, str) or not path.startswith(f"{root}/"):
        raise ValueError(f"{path!r} is not a resource path (it must start with '{root}/')")
    return port.check_path(path)


def link_of(path: str) -> str:
    return f"[[{path}]]"


class ResourceCards:
    """Finds the card of a resource by its `source_resource` link, for one batch.

    Each day's cards are listed once per batch (a scan of N resources on one day would otherwise read
    N x N front matters at every start); a hit is confirmed on disk, a miss is looked up afresh.
    """

    def __init__(self, port: MemoryPort) -> None:
        self.port = port
        self._by_day: dict[str, dict[str, str]] = {}

    async def _listed(self, day: str, *, fresh: bool) -> dict[str, str]:
        if fresh or day not in self._by_day:
            cards = await cards_of_day(self.port, day)
            self._by_day[day] = {
                str(front["source_resource"]): path for path, front in cards if front.get("source_resource")
            }
        return self._by_day[day]

    async def find(self, path: str, day: str) -> tuple[str, JSONObject] | None:
        """(card, its front matter) on the resource's day (loose files: any day, newest first), or None."""
        link = link_of(path)
        days = [day]
        if len(PurePosixPath(path).parts) <= 2:
            days += [other for other in reversed(await daily_days(self.port)) if other != day]
        for fresh in (False, True):
            for candidate in days:
                card = (await self._listed(candidate, fresh=fresh)).get(link)
                if card and self.port.exists(card):
                    front = await self.port.front_matter(card)
                    if front.get("source_resource") == link:
                        return card, front
        return None


@dataclass(frozen=True)
class Unread:
    """Why a resource, with this content and these limits, had no readable text."""

    path: str
    sha256: str
    size: int
    max_chars: int
    extract_seconds: float
    reason: str

    @classmethod
    def of(cls, path: str, data: bytes, sha: str, limits: ResourceLimits, reason: str) -> Unread:
        return cls(path, sha, len(data), limits.max_chars, limits.extract_seconds, reason[:MAX_REASON])

    @classmethod
    def from_json(cls, value: object) -> Unread | None:
        """The record, or None when it is not one (a damaged cache is not trusted)."""
        if not isinstance(value, dict):
            return None
        path, sha, size, chars, seconds, reason = (
            value.get(key) for key in ("path", "sha256", "size", "max_chars", "extract_seconds", "reason")
        )
        if not (
            isinstance(path, str)
            and isinstance(sha, str)
            and isinstance(reason, str)
            and isinstance(size, int)
            and isinstance(chars, int)
            and isinstance(seconds, int | float)
        ):
            return None
        return cls(path, sha, size, chars, float(seconds), reason)

    def matches(self, sha: str, size: int, limits: ResourceLimits) -> bool:
        """Whether this is the same content read under the same limits (a longer extract_seconds, as a
        timeout's reason advises, reads it again)."""
        now = (sha, size, limits.max_chars, limits.extract_seconds)
        return (self.sha256, self.size, self.max_chars, self.extract_seconds) == now

    def to_json(self) -> JSONObject:
        return {
            "path": self.path,
            "sha256": self.sha256,
            "size": self.size,
            "max_chars": self.max_chars,
            "extract_seconds": self.extract_seconds,
            "reason": self.reason,
        }


class UnreadableFiles:
    """The resources found unreadable, oldest first, read once per batch from derived state (a cache,
    never the only record: the resource is). A change is merged into the record as it is on disk, so
    concurrent runs lose at most an entry, which costs one parse."""

    def __init__(self, port: MemoryPort) -> None:
        self.port = port
        self._known = self._read()

    def _read(self) -> dict[str, Unread]:
        files = self.port.read_state(UNREADABLE_STATE).get("files")
        found = [Unread.from_json(value) for value in files] if isinstance(files, list) else []
        return {entry.path: entry for entry in found if entry is not None}

    def reason(self, path: str, data: bytes, sha: str, limits: ResourceLimits) -> str | None:
        """The remembered reason when this very content was unreadable under these limits, else None."""
        known = self._known.get(path)
        return known.reason if known is not None and known.matches(sha, len(data), limits) else None

    def remember(self, entry: Unread) -> None:
        self._update(entry.path, entry)

    def forget(self, path: str) -> None:
        if path in self._known:
            self._update(path, None)

    def _update(self, path: str, entry: Unread | None) -> None:
        files = self._read()
        files.pop(path, None)
        if entry is not None:
            files[path] = entry  # last: the newest survives the bound
        self._known = dict(list(files.items())[-MAX_REMEMBERED:])
        try:
            self.port.write_state(UNREADABLE_STATE, {"files": [e.to_json() for e in self._known.values()]})
        except OSError as exc:  # only a cache: unwritten, it costs a parse next time, not this resource
            log.warning("auto_resource: could not remember unreadable resources: %s", exc)


def card_stem(path: str) -> str:
    """The resource's stem, or, when it holds a secret, the slug of its redacted form and a short hash
    of the path (resources named after different tokens get different cards)."""
    stem = PurePosixPath(path).stem
    if (clean := redact(stem)) == stem:
        return stem
    return f"{slugify(clean) or 'resource'}-{short_hash(path)}"


async def free_card_path(port: MemoryPort, path: str, day: str) -> str:
    """`daily/<day>/<stem>.md`, or with a short stable suffix when another file has that name."""
    stem = card_stem(path)
    base = f"{port.folder('daily')}/{day}/{stem}"
    for candidate in (f"{base}.md", f"{base}-{short_hash(path)}.md"):
        if not port.exists(candidate):
            return candidate
    raise ReMeError(f"no free card name for {path}: {base}.md and its suffixed form are taken")


async def read_resource(port: MemoryPort, path: str, limits: ResourceLimits) -> bytes | str:
    """The resource's bytes, or the reason they are not read (gone, not a regular file, too large)."""
    try:
        return await port.read_bytes(path, max_bytes=limits.max_bytes)
    except FileNotFoundError as gone:
        if gone.errno == errno.ENOENT:
            return "not a file (already deleted?)"
        return f"{gone}; only regular files are read"  # a FIFO, socket or device is never read
    except IsADirectoryError as folder:
        return str(folder)
    except ReMeError as too_large:
        return too_large.message


def material_variables(material: ResourceText, limits: ResourceLimits) -> dict[str, str | int]:
    """The prompt's view of the material, redacted before the cut so that no secret reaches the model."""
    truncated = material.chars is None or material.chars > limits.max_chars
    return {
        "resource_kind": material.kind,
        "resource_chars": material.chars if material.chars is not None else f"more than {limits.max_chars}",
        "truncated_note": f"; only the first {limits.max_chars} are shown" if truncated else "",
        "material": redact(material.text)[: limits.max_chars],
    }


def foreign_citations(port: MemoryPort, body: str, path: str, material: str) -> list[str]:
    """Resources the card links that are neither its own nor named in the material the model was shown."""
    root = f"{port.folder('resource')}/"
    cited = {link.target for link in parse_body_links(body) if link.target.startswith(root)}
    return sorted(target for target in cited if target != path and target not in material)


async def settle_card(port: MemoryPort, card: str, path: str, front: JSONObject, material: str) -> None:
    """Check what the model left in the card, in code: a body that cites no other resource than the
    material does, and `front` (what the card had plus the resource's keys) with the model's name and
    description (keys it added, changed or dropped are put back). Raise ReMeError for a wrong body."""
    found = await port.load(card)
    document = frontmatter.parse(found.content if found else "")
    if not document.body.strip():
        raise ReMeError("the model finished without writing the card's body")
    now: JSONObject = document.metadata
    written = "\n".join([document.body, *(str(now.get(key, "")) for key in ("name", "description"))])
    if foreign := foreign_citations(port, written, path, material):
        raise ReMeError(f"the card cites {', '.join(foreign)}, which the material of {path} does not name")
    wanted: JSONObject = {**front, **{key: now[key] for key in ("name", "description") if key in now}}
    if extra := [key for key in now if key not in wanted]:
        await port.delete_front_matter(card, extra)
    if changed := {key: value for key, value in wanted.items() if now.get(key) != value}:
        await port.update_front_matter(card, changed)


async def write_card(
    port: MemoryPort,
    card: str,
    path: str,
    keys: JSONObject,
    variables: dict[str, str | int],
    add_usage: AddUsage,
) -> None:
    """Run the agent on the card and check its work; on failure the card is put back as it was, marked
    pending, and the ReMeError raised."""
    snapshot = await port.load(card)
    content = snapshot.content if snapshot else ""
    before = frontmatter.parse(content).metadata
    front = {**{key: value for key, value in before.items() if key != "pending"}, **keys}
    try:
        await distil_card(
            port,
            card_path=card,
            prompt="auto_resource",
            variables=variables,
            front_matter=keys,
            rename=False,
            add_usage=add_usage,
        )
        await settle_card(port, card, path, front, str(variables["material"]))
    except AgentFailed:  # distil_card has put the card back
        raise
    except ReMeError:
        await restore(port, card, content)
        raise


async def process_change(
    port: MemoryPort,
    cards: ResourceCards,
    unread: UnreadableFiles,
    path: str,
    limits: ResourceLimits,
    report: ResourceReport,
    add_usage: AddUsage,
) -> None:
    check_resource_path(port, path)
    day = resource_day(port, path)
    extension = PurePosixPath(path).suffix.lstrip(".").lower()
    if extension not in SUPPORTED:
        report.skipped.append({"path": path, "reason": f"unsupported format .{extension}"})
        return
    data = await read_resource(port, path, limits)
    if isinstance(data, str):
        report.skipped.append({"path": path, "reason": data})
        return
    sha = hashlib.sha256(data).hexdigest()
    found = await cards.find(path, day)
    card = found[0] if found else None
    if found and found[1].get("source_sha256") == sha and not found[1].get("pending"):
        report.skipped.append({"path": path, "reason": f"unchanged since {card} was written"})
        return
    if remembered := unread.reason(path, data, sha, limits):
        reason = f"not read again: unchanged since it was found unreadable: {remembered}"
        report.skipped.append({"path": path, "reason": reason})
        return
    try:
        material = await text_of(
            data, extension, limit=limits.max_chars + REDACT_MARGIN, seconds=limits.extract_seconds
        )
    except Unreadable as reason:
        if reason.lasting:
            unread.remember(Unread.of(path, data, sha, limits, str(reason)))
        report.skipped.append({"path": path, "reason": str(reason)})
        return
    unread.forget(path)
    try:
        port.model("memory")
    except LLMUnavailable as missing:  # the resource itself is the kept input: the next scan retries it
        report.pending.append(path)
        report.failed.append({"path": path, "error": f"not processed: {missing}"})
        return
    session_id = resource_session_id(path)
    keys: JSONObject = {"source_resource": link_of(path), "session_id": session_id, "source_sha256": sha}
    action = "updated" if card else "created"
    new_folder = False
    if card is None:
        card = await free_card_path(port, path, day)
        new_folder = not port.exists(str(PurePosixPath(card).parent))
        stub = {**keys, "pending": True}
        await port.write(card, "", name=redact(PurePosixPath(path).stem), metadata=stub)
    variables = {
        "resource_path": redact(path),
        **material_variables(material, limits),
        "date": day,
        "session_id": session_id,
    }
    try:
        await write_card(port, card, path, keys, variables, add_usage)
    except ReMeError as failure:
        if action == "created":  # no half-made card (nor its new folder): the next scan starts afresh
            await port.delete(card)
            if new_folder:
                await port.remove_empty_folder(str(PurePosixPath(card).parent))
            outcome = "not processed"
        else:
            outcome = f"card {card} left unchanged and pending"
        report.pending.append(path)
        report.failed.append({"path": path, "error": f"{outcome}: {failure.message}"})
        return
    report.days.add(card.split("/")[-2])
    report.processed.append({"path": path, "card": card, "action": action})


async def process_deletion(
    port: MemoryPort, cards: ResourceCards, unread: UnreadableFiles, path: str, report: ResourceReport
) -> None:
    check_resource_path(port, path)
    if port.exists(path):  # a card is deleted only with its resource
        report.skipped.append(
            {"path": path, "reason": "still exists, so its card is kept (list it in paths)"}
        )
        return
    unread.forget(path)
    found = await cards.find(path, resource_day(port, path))
    if found is None:
        report.skipped.append({"path": path, "reason": "deleted resource had no card"})
        return
    card = found[0]
    await port.delete(card)
    report.days.add(card.split("/")[-2])
    report.processed.append({"path": path, "card": card, "action": "deleted"})


async def resources_needing_cards(port: MemoryPort) -> list[str]:
    """Every supported resource file (a full scan; unchanged ones are skipped cheaply by sha256)."""
    extensions = tuple(f".{extension}" for extension in SUPPORTED)
    entries = await port.list_files(port.folder("resource"), extensions=extensions, recursive=True)
    return [entry.path for entry in entries]


async def auto_resource(
    port: MemoryPort,
    *,
    paths: Sequence[str],
    deleted: Sequence[str],
    limits: ResourceLimits,
    add_usage: AddUsage,
) -> ResourceReport:
    """Bring the cards of these resources up to date; with no paths at all, of every resource."""
    for path in [*paths, *deleted]:
        check_resource_path(port, path)  # refuse bad input before any write
    report = ResourceReport()
    cards = ResourceCards(port)
    unread = UnreadableFiles(port)
    changed = list(paths) if paths or deleted else await resources_needing_cards(port)
    for path in dict.fromkeys(deleted):
        async with port.keyed_lock(f"resource:{path}"):
            await process_deletion(port, cards, unread, path, report)
    for path in dict.fromkeys(changed):
        try:
            async with port.keyed_lock(f"resource:{path}"):
                await process_change(port, cards, unread, path, limits, report, add_usage)
        except ReMeError as exc:
            report.failed.append({"path": path, "error": exc.message})
        except (OSError, ValueError) as exc:
            report.failed.append({"path": path, "error": str(exc)})
    for day in sorted(report.days):
        await port.refresh_day(day)
    return report

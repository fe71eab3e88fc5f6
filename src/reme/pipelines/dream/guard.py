"""The tools of one integration run, guarded in code (docs/spec.md §12.3): what a misbehaving model cannot do.

`UnitGuard.run_job` stands between the agent and its tools, making the writes itself through the
port's typed digest calls (`write_node`, `edit_node`, `save`):
- writes go only to digest nodes (`digest/<bucket>/<slug>.md`; the path policy says the same);
- one subject per unit: once one node is written, every write to another path is refused;
- a new node may not take a file name another digest file has: a short `[[slug]]` link would turn
  ambiguous (docs/spec.md §2.2);
- no write leaves a node over `MAX_NODE_CHARS` characters (unless it makes a larger node smaller);
- front-matter keys the code owns (`OWNED_KEYS`: identity, provenance, validity) are not the model's
  to set, on a new node or through `frontmatter_update`;
- never an update decided from a snippet: `digest_edit` and `frontmatter_update` apply only to a
  version the agent was shown whole through `read` (every line, page by page: `Pages`); an update of
  a node it has not read to the end is refused, naming the lines still unread. `digest_write` never
  replaces a node (the port refuses an existing path) and takes no `metadata` (front matter is set in
  its content or through `frontmatter_update`, where the checks below apply);
- compare-and-set: an update applies only to the version the agent read; a conflict makes it read again;
- E-1: the first refusal for lost links goes back to the agent, the second aborts the unit with
  `ConservationViolation`; the same for a superseding update that drops the old statement (docs/spec.md §17.2).
Relative dates in what it writes are resolved against the unit's newest evidence day (docs/spec.md §17.1).
It records the subject's content before the first change, so a failed unit can be put back and the
journal can keep a pre-image for revert.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date

from reme.errors import Conflict, ReMeError
from reme.llm.runner import MAX_TOOL_ANSWER_CHARS
from reme.pipelines.journal.records import LostEdge, Violation
from reme.pipelines.port import DigestRun, FileText
from reme.workspace import frontmatter, relative_dates
from reme.workspace.digest import SOURCE_PREDICATE, is_node, node_parts
from reme.workspace.edges import ConservationViolation
from reme.workspace.resolving import ends_with
from reme.workspace.textio import split_lines
from reme.workspace.validity import StatementDropped
from reme.workspace.wikilinks import parse_body_links

WRITE_TOOLS = ("digest_write", "digest_edit", "frontmatter_update")
MAX_VIOLATIONS = 2
MAX_NODE_CHARS = 60_000
"""The most characters a dream write may leave a node with. A node is one abstraction (details stay in
`daily/`): `digest_maintain` finds it overloaded past 6 000 and declines to split one past 60 000 (its
`max_parent_chars`: the split model would not see it whole), and a dream prompt holds at most 60 000
characters of one file (`max_chars_per_file`). A larger write could be neither split nor read whole
again; one that makes an already larger node smaller still passes."""
_VALIDITY = "validity is an inline field after the statement it bounds, e.g. `[valid_from:: 2026-03]` (docs/spec.md §17.2)"
_IMPORTED = "it is the provenance reme writes on imported notes, and an import finds its notes by it"
_CARD = "it is the provenance reme writes on daily cards"
OWNED_KEYS: Mapping[str, str] = {
    "id": "a node's identity is its path (docs/spec.md §12.1)",
    SOURCE_PREDICATE: (
        "provenance is the `derived_from::` lines of the body's ## Sources section (docs/spec.md §12.3)"
    ),
    "valid_from": _VALIDITY,
    "valid_to": _VALIDITY,
    **dict.fromkeys(("source", "imported_from", "import_id", "import_sha256"), _IMPORTED),
    **dict.fromkeys(("session_id", "source_conversation", "source_resource", "source_sha256"), _CARD),
}
"""Front-matter keys (compared case-insensitively) whose meaning the code owns, with why: a model that set
them would forge identity, provenance or validity the code never checked (`name` is checked apart)."""
Params = dict[str, object]  # a tool call's arguments, already checked against the tool's schema


class UnitAborted(ReMeError):
    """Raised from inside a tool to end the unit's run; `message` starts with the error kind."""


@dataclass(frozen=True)
class ToolReply:
    """A job-like answer for a tool call the guard handled (what the agent runner shows the model)."""

    success: bool
    answer: str
    metadata: Mapping[str, object] = field(default_factory=dict)


def refused_by(exc: Exception) -> ToolReply:
    """A refusal of the port (a broken digest rule, a bad path) as the tool's answer."""
    if isinstance(exc, ReMeError):
        return ToolReply(False, exc.message, exc.metadata)
    return ToolReply(False, str(exc) or type(exc).__name__)


def text_param(params: Params, key: str) -> str:
    value = params.get(key)
    return value if isinstance(value, str) else ""


def optional_text(params: Params, key: str) -> str | None:
    value = params.get(key)
    return value if isinstance(value, str) else None


def lost_in(path: str, refusal: ConservationViolation | StatementDropped) -> Violation:
    """The violation an E-1 refusal (lost links) or a §17.2 refusal (dropped statements) describes."""
    violation: Violation = {"path": path}
    if isinstance(refusal, ConservationViolation):
        edges = refusal.metadata.get("missing_edges") or []
        violation["missing_edges"] = [
            LostEdge(target=e["target"], predicate=e.get("predicate")) for e in edges
        ]
    else:
        violation["dropped_statements"] = [
            str(line) for line in refusal.metadata.get("dropped_statements") or []
        ]
    return violation


@dataclass
class Subject:
    """The one node this unit changed, and its content before the unit (None when it created it)."""

    path: str
    before: FileText | None


@dataclass
class Pages:
    """The lines of one version of a node the agent has been shown, read page by page."""

    version: FileText
    seen: list[tuple[int, int]] = field(default_factory=list)  # 1-based inclusive ranges, merged, sorted

    def add(self, first: int, last: int) -> None:
        """Lines `first..last` were shown; overlapping and adjacent ranges become one."""
        merged: list[tuple[int, int]] = []
        for start, end in sorted([*self.seen, (first, last)]):
            if merged and start <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        self.seen = merged

    def unseen(self) -> list[tuple[int, int]]:
        """The line ranges of the version not shown yet (empty: it was read whole)."""
        gaps, next_line = [], 1
        for start, end in self.seen:
            if start > next_line:
                gaps.append((next_line, start - 1))
            next_line = max(next_line, end + 1)
        total = len(split_lines(self.version.content))
        return [*gaps, (next_line, total)] if next_line <= total else gaps


@dataclass
class UnitGuard:
    port: DigestRun
    digest_dir: str
    subject: Subject | None = None
    read_versions: dict[str, FileText] = field(default_factory=dict)  # versions the agent knows whole
    pages: dict[str, Pages] = field(default_factory=dict)  # what it was shown of a version read in part
    written: FileText | None = None  # the subject as this unit last wrote it
    violations: list[Violation] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    reference_day: date | None = None  # the evidence's day: relative dates written are resolved to it

    async def run_job(self, job: str, **params: object) -> object:
        """The agent's tool call: writes are checked and made here, other tools pass through."""
        if job in WRITE_TOOLS:
            return await self._write(job, params)
        if job == "read":
            return await self._read(params)
        return await self.port.run_job(job, **params)

    async def _read(self, params: Params) -> object:
        path = text_param(params, "path")
        if not path.endswith(".md") and is_node(f"{path}.md", self.digest_dir):
            path = f"{path}.md"
        version = (
            await self.port.load(path) if is_node(path, self.digest_dir) and self.port.exists(path) else None
        )
        response = await self.port.run_job("read", **params)
        if version is not None and getattr(response, "success", False):
            # `version` was loaded before the read: a change in between is a conflict later
            self._shown(path, version, response)
        return response

    def _shown(self, path: str, version: FileText, response: object) -> None:
        """Add the lines a `read` answer showed to what the agent has seen of `version`; once it has
        seen every line, the version may be updated."""
        known = self.read_versions.get(path)
        if known is not None and known.sha256 == version.sha256:
            return
        self.read_versions.pop(path, None)  # the node changed since: what the agent knew is gone
        pages = self.pages.get(path)
        if pages is None or pages.version.sha256 != version.sha256:
            pages = self.pages[path] = Pages(version)
        first, last = _shown_lines(response)
        if first <= last:
            pages.add(first, last)
        if not pages.unseen():
            self.read_versions[path] = version
            del self.pages[path]

    def _unread(self, path: str) -> str:
        """The refusal of an update of a node the agent has not seen whole, saying how to read the rest."""
        pages = self.pages.get(path)
        gaps = pages.unseen() if pages is not None else []
        if pages is None or not gaps:
            return f"read {path!r} with `read` first; an update is decided on the node's full text"
        lines = split_lines(pages.version.content)
        too_long = (
            n
            for start, end in gaps
            for n in range(start, end + 1)
            if len(lines[n - 1]) > MAX_TOOL_ANSWER_CHARS
        )
        unreadable = next(too_long, None)
        if unreadable is not None:
            return (
                f"line {unreadable} of {path!r} holds {len(lines[unreadable - 1])} characters, more than a tool "
                f"answer shows ({MAX_TOOL_ANSWER_CHARS}): the node cannot be read whole, so it cannot be "
                "updated here; create a node for this abstraction instead"
            )
        unread = ", ".join(f"{start}-{end}" if end > start else str(start) for start, end in gaps)
        return (
            f"you have not read lines {unread} of {path!r} ({len(lines)} lines) yet; an update is decided "
            f"on the node's full text: read them with `read` (path={path!r}, start_line={gaps[0][0]}), "
            "then each next_start_line until it is null"
        )

    def _refuse(self, message: str) -> ToolReply:
        self.refusals.append(message)
        return ToolReply(False, f"refused: {message}")

    async def _write(self, job: str, params: Params) -> ToolReply:
        path = text_param(params, "path")
        if not is_node(path, self.digest_dir):
            return self._refuse(
                f"{path!r} is not a digest node; dream writes only {self.digest_dir}/<bucket>/<slug>.md"
            )
        if self.subject is not None and self.subject.path != path:
            return self._refuse(
                f"this unit already changed {self.subject.path!r}; one subject per unit, so {path!r} "
                "may not be written. Finish with your report"
            )
        added = text_param(params, "content") or text_param(params, "new")
        kept = set(_anchored_digest_links(text_param(params, "old"), self.digest_dir))
        anchored = [link for link in _anchored_digest_links(added, self.digest_dir) if link not in kept]
        if anchored:
            return self._refuse(
                f"link digest nodes by their full path without '#anchor' ({', '.join(anchored)}): a node is "
                "one abstraction and its sections may change"
            )
        params = self._resolve_dates(job, params)
        if job == "digest_write":
            return await self._create(path, params)
        seen = self.read_versions.get(path)
        if seen is None:
            return self._refuse(self._unread(path))
        if job == "frontmatter_update":
            return await self._front_matter(path, seen, params.get("metadata"))
        return await self._edit(path, seen, params)

    async def _create(self, path: str, params: Params) -> ToolReply:
        if params.get("metadata"):  # one way in for front matter, where its checks are
            return self._refuse(
                "digest_write takes no `metadata` here: put the keys in the front matter of `content`, "
                "or set them with `frontmatter_update` once the node exists"
            )
        content = text_param(params, "content")
        metadata = frontmatter.parse(content).metadata
        linked = [key for key, value in metadata.items() if "[[" in repr(value)]
        if linked:  # as in `frontmatter_update`: F-11, links (provenance too) live in the body
            return self._refuse(f"front-matter keys {', '.join(linked)} hold links; links go in the body")
        owned = _owned_key(metadata, {})
        if owned:
            return self._refuse(owned)
        name, description = optional_text(params, "name"), optional_text(params, "description")
        try:
            drafted = await self.port.draft_node(path, content, description=description, name=name)
            twins = await self._same_file_name(path)
            refusal = _twins_refusal(path, twins) if twins else _too_large(path, None, len(drafted))
            if refusal:
                return self._refuse(refusal)
            written = await self.port.write_node(path, content, name=name, description=description)
        except (ReMeError, ValueError, OSError) as exc:
            return refused_by(exc)
        await self._changed(path, before=None, after=written)
        return ToolReply(True, f"Created {path}", {"path": path, "created": True})

    async def _same_file_name(self, path: str) -> list[str]:
        """Other digest files a short `[[slug]]` link could name too (docs/spec.md §2.2: it resolves to
        the one file whose path ends with `/<slug>.md`, so a second one leaves it pending)."""
        filename = path.rsplit("/", 1)[-1]
        listed = await self.port.list_files(self.digest_dir, extensions=(".md",), recursive=True)
        return [entry.path for entry in listed if entry.path != path and ends_with(entry.path, filename)]

    async def _edit(self, path: str, seen: FileText, params: Params) -> ToolReply:
        """`digest_edit` of the version the agent read; a lost link or statement is its one retry."""
        old, new = text_param(params, "old"), text_param(params, "new")
        oversized = _too_large(path, seen.content, _edited_chars(seen.content, old, new))
        if oversized:
            return self._refuse(oversized)
        try:
            edited = await self.port.edit_node(path, old, new, expected_sha256=seen.sha256)
        except Conflict as exc:
            del self.read_versions[path]
            return refused_by(exc)
        except (ConservationViolation, StatementDropped) as exc:
            self._violation(lost_in(path, exc), exc.message)
            return ToolReply(
                False,
                f"{exc.message}\nThis is your one retry: keep every link and statement listed above "
                "in the new text.",
                exc.metadata,
            )
        except (ReMeError, ValueError, OSError) as exc:
            return refused_by(exc)
        await self._changed(path, before=seen, after=edited)
        return ToolReply(True, f"Edited {path}", {"path": path, "sha256": edited.sha256})

    def _resolve_dates(self, job: str, params: Params) -> Params:
        """The written text with relative dates resolved against the evidence's day (docs/spec.md §17.1).

        In an edit, lines the node already had (in `old`) are left as they are: their dates were
        said on another day."""
        key = {"digest_write": "content", "digest_edit": "new"}.get(job)
        day = self.reference_day
        text = params.get(key) if key is not None else None
        if day is None or key is None or not isinstance(text, str):
            return params
        if job == "digest_write":
            return {**params, key: relative_dates.annotate(text, day)}
        kept = set(text_param(params, "old").split("\n"))
        written = text.split("\n")
        resolved = relative_dates.annotate(text, day).split("\n")  # fences seen whole; lines stay lines
        lines = [old if old in kept else new for old, new in zip(written, resolved, strict=True)]
        return {**params, key: "\n".join(lines)}

    def _violation(self, violation: Violation, answer: str) -> None:
        """Record a refused update that lost links (E-1) or superseded statements (docs/spec.md §17.2)."""
        self.violations.append(violation)
        if len(self.violations) >= MAX_VIOLATIONS:
            what = "links" if "missing_edges" in violation else "a superseded statement"
            raise UnitAborted(
                f"ConservationViolation: a second edit of {violation['path']!r} would drop {what} ({answer})",
                dict(violation),
            )

    async def _front_matter(self, path: str, seen: FileText, metadata: object) -> ToolReply:
        """Merge keys with compare-and-set; `name` (the file name), linked values and the keys the code
        owns stay as they are."""
        try:
            changes = frontmatter.check_metadata(metadata or {})
        except ValueError as exc:
            return self._refuse(str(exc))
        current = frontmatter.parse(seen.content).metadata
        _, stem = node_parts(path, self.digest_dir)
        for key, value in changes.items():
            if key == "name" and value != stem:
                return self._refuse(f"a node's name is its file name {stem!r}; it cannot be changed")
            if "[[" in repr(value) or "[[" in repr(current.get(key)):
                return self._refuse(f"front-matter key {key!r} holds links; links are edited in the body")
        owned = _owned_key(changes, current)
        if owned:
            return self._refuse(owned)
        try:
            updated = frontmatter.update(seen.content, changes)
            oversized = _too_large(path, seen.content, len(updated))
            if oversized:
                return self._refuse(oversized)
            saved = await self.port.save(path, updated, expected_sha256=seen.sha256)
        except Conflict:
            del self.read_versions[path]
            return ToolReply(
                False, f"conflict: {path!r} changed since you read it; read it again", {"conflict": True}
            )
        except (ReMeError, ValueError) as exc:
            return ToolReply(False, getattr(exc, "message", str(exc)))
        await self._changed(path, before=seen, after=saved)
        return ToolReply(True, f"updated the front matter of {path}", {"path": path})

    async def _changed(self, path: str, *, before: FileText | None, after: FileText) -> None:
        """Remember the subject (its first pre-image) and the version the agent now knows."""
        if self.subject is None:
            self.subject = Subject(path, before)
        self.written = self.read_versions[path] = after
        self.pages.pop(path, None)

    def last_written(self) -> FileText | None:
        """The subject as this unit left it (not a later version someone else made and the agent read)."""
        return self.written


def _shown_lines(response: object) -> tuple[int, int]:
    """The first and last line a `read` answer showed whole: its page, less what the agent runner cuts
    off an answer past `MAX_TOOL_ANSWER_CHARS` (an empty range when it names no page)."""
    metadata = getattr(response, "metadata", None) or {}
    first, last = metadata.get("start_line"), metadata.get("end_line")
    text = getattr(response, "answer", None)
    if not isinstance(first, int) or not isinstance(last, int) or not isinstance(text, str):
        return 1, 0
    if len(text) > MAX_TOOL_ANSWER_CHARS:
        last = min(last, first + text.count("\n", 0, MAX_TOOL_ANSWER_CHARS) - 1)
    return first, last


def _anchored_digest_links(text: str, digest_dir: str) -> list[str]:
    """Links to digest nodes with an `#anchor` (one a node already had may stay)."""
    return [
        f"[[{link.target}#{link.anchor}]]"
        for link in parse_body_links(text)
        if link.anchor and link.target.startswith(f"{digest_dir}/")
    ]


def _owned_key(metadata: Mapping[str, object], current: Mapping[str, object]) -> str | None:
    """The refusal for the first key the code owns (`OWNED_KEYS`) that `metadata` sets or changes."""
    for key, value in metadata.items():
        why = OWNED_KEYS.get(str(key).casefold())
        if why is not None and (key not in current or current[key] != value):
            return f"front-matter key {key!r} is not yours to set: {why}; leave it out"
    return None


def _too_large(path: str, before: str | None, chars: int) -> str | None:
    """The refusal for a write that leaves `path` with `chars` characters: over `MAX_NODE_CHARS` and
    larger than it was."""
    if chars <= MAX_NODE_CHARS or (before is not None and chars <= len(before)):
        return None
    return (
        f"{path!r} would hold {chars} characters; a node a dream run writes holds at most {MAX_NODE_CHARS} "
        "characters: state the abstraction and link its sources, the details stay in the daily notes"
    )


def _edited_chars(text: str, old: str, new: str) -> int:
    """Characters of `text` once `digest_edit` replaced every `old` of its body by `new`."""
    count = frontmatter.parse(text).body.count(old) if old else 0
    return len(text) + count * (len(new) - len(old))


def _twins_refusal(path: str, twins: list[str]) -> str:
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    return (
        f"{path!r} would have the file name of {', '.join(repr(t) for t in twins)}: a short link [[{stem}]] "
        "would no longer say which node it means. If that node holds this abstraction, read it and update "
        "it; otherwise choose a slug that says how this one differs"
    )

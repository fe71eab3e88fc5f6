"""The memory port: what a pipeline may ask of the rest of reme, as a few small role Protocols.

A pipeline function annotates the narrowest role it needs (`Notes` to read and write files,
`Recall` to search, `RunState` for locks and catalogs...); `MemoryPort` is their composition, for
a run that needs most of them. `reme.app.port.AppPort` implements every role over a running
application, calling the same workspace and index functions the file jobs call (so every write gets
the same path checks, locks and index updates); `reme.testing.memory_port.InMemoryPort` implements
them without one, for tests of pipeline logic. Values crossing the port are typed (`FileText`,
`NodeHit`, `PassageHit`, `Neighbourhood`, `Committed`); no pipeline names a job or reads a response
dict, except agent *tools*, which the agent calls by job name through `Models.run_job` (the
per-pipeline path policy sits in front of it).

Every method raises `reme.errors.ReMeError` (message + metadata) when the operation fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import date, tzinfo
from typing import TYPE_CHECKING, Any, Protocol

from reme.jsontypes import JSONObject
from reme.llm.runner import RunJob
from reme.workspace.transaction import Change

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from reme.llm.settings import ModelSettings
    from reme.llm.tools import ToolSpec


@dataclass(frozen=True)
class FileText:
    """A text file as read: its content and the version stamps a compare-and-set save checks."""

    path: str
    content: str
    sha256: str
    mtime: float


@dataclass(frozen=True)
class FileEntry:
    """One file of a listing."""

    path: str
    size: int
    mtime: float


@dataclass(frozen=True)
class Committed:
    """One file of a committed transaction: its new sha256 (None: deleted) and, for a deleted file,
    the files whose links still point at it."""

    path: str
    sha256: str | None
    inbound: tuple[str, ...] = ()


@dataclass(frozen=True)
class Statement:
    """A statement of a node with its validity range (docs/spec.md §17.3)."""

    statement: str
    valid_range: str


@dataclass(frozen=True)
class NodeHit:
    """A digest node found by `node_search` (no body text).

    A node with validity statements also has `statements` (valid on the day asked) and `superseded`
    (without `as_of`) or `left_out`, the count not valid then (with it), docs/spec.md §17.3."""

    path: str
    score: float
    name: str | None = None
    description: str | None = None
    statements: tuple[Statement, ...] = ()
    superseded: tuple[Statement, ...] = ()
    left_out: int = 0


@dataclass(frozen=True)
class PassageHit:
    """A passage found by `search`; `valid` False (with `reason` and `valid_range`) when validity says
    it did not hold on the day asked (docs/spec.md §17.3)."""

    path: str
    start_line: int
    end_line: int
    score: float
    text: str
    name: str | None = None
    description: str | None = None
    valid: bool = True
    valid_range: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class GraphNode:
    path: str
    name: str | None = None
    description: str | None = None
    exists: bool = True


@dataclass(frozen=True)
class GraphEdge:
    source: str
    target: str
    resolved: str | None = None  # the file the target names; None for a pending link
    predicate: str | None = None
    anchor: str | None = None


@dataclass(frozen=True)
class Neighbourhood:
    """The link neighbourhood of some paths: the nodes reached and the edges between them."""

    nodes: tuple[GraphNode, ...] = ()
    edges: tuple[GraphEdge, ...] = ()


@dataclass(frozen=True)
class Embeddings:
    """Vectors of some texts from the index's embedding model; `model` is `<name>@<dimension>`."""

    model: str
    vectors: list[list[float]]  # L2-normalised: a dot product is the cosine similarity


@dataclass(frozen=True)
class ModelHandle:
    """A usable model for one role: build it with the prompt variables a scripted double may use."""

    settings: ModelSettings
    build: Callable[[Mapping[str, object]], Model]


class Places(Protocol):
    """Where and when: the workspace's folders, its path gate and its clock."""

    @property
    def tz(self) -> tzinfo:
        """The application timezone: every "today" and daily date uses it."""
        ...

    def today(self) -> date: ...

    def folder(self, role: str) -> str:
        """The configured folder name of a role: daily, digest, session, resource, journal, metadata."""
        ...

    def exists(self, path: str) -> bool: ...

    def check_path(self, path: str) -> str:
        """The path if the workspace's path gate accepts it; raise ValueError saying why not."""
        ...

    def real_path(self, path: str) -> str:
        """The workspace-relative path `path` names once every symbolic link is resolved; raise
        ValueError (as `check_path`) when the gate refuses it."""
        ...


class Notes(Places, Protocol):
    """Whole text files, read and written with compare-and-set. Paths are workspace-relative POSIX paths."""

    async def load(self, path: str) -> FileText | None:
        """The file's text and version, or None when it does not exist."""
        ...

    async def save(self, path: str, content: str, *, expected_sha256: str | None = None) -> FileText:
        """Write the whole file atomically; with `expected_sha256`, refuse (`Conflict`) when it changed meanwhile."""
        ...

    async def delete(self, path: str) -> None: ...

    async def move(self, src: str, dst: str) -> None:
        """Rename a file, retargeting inbound links."""
        ...

    async def commit(self, changes: Sequence[Change]) -> list[Committed]:
        """Write and delete several files all together or not at all, a kill included (compare-and-set
        on each). Raises `Conflict` (nothing written) when a file is not the expected version."""
        ...

    async def list_files(
        self, folder: str, *, extensions: tuple[str, ...] = (), recursive: bool = False
    ) -> list[FileEntry]:
        """Files of a folder (none when it does not exist), sorted by path."""
        ...

    async def list_dirs(self, folder: str) -> list[str]:
        """Names of the sub-folders of a folder (none when it does not exist), sorted."""
        ...

    async def remove_empty_folder(self, folder: str) -> bool:
        """Remove the folder only if it is empty (atomically: a file written into it meanwhile keeps
        it), never a layout folder; whether it was removed."""
        ...


class Bulk(Protocol):
    """What an import needs beyond notes: raw bytes in and out, many files saved with one index update."""

    async def read_bytes(self, path: str, *, max_bytes: int) -> bytes:
        """A file's raw bytes (resources are not always text); raise ReMeError when over `max_bytes`."""
        ...

    async def save_batch(self, files: Sequence[tuple[str, str, str | None]]) -> None:
        """Save many whole text files `(path, content, expected_sha256 or None)`, each atomically, then
        bring the index up to date once (an import of thousands of notes); a conflict stops the batch."""
        ...

    async def save_bytes(self, path: str, data: bytes) -> None:
        """Write a non-Markdown file (an imported attachment) byte for byte, atomically."""
        ...


class Cards(Protocol):
    """Markdown notes by their front matter, and the daily cards (docs/spec.md §8)."""

    async def write(self, path: str, content: str, *, name: str, metadata: Mapping[str, object]) -> None:
        """Create or overwrite a Markdown note from body text plus front matter (`name` and `metadata`)."""
        ...

    async def front_matter(self, path: str) -> JSONObject: ...

    async def update_front_matter(self, path: str, metadata: JSONObject) -> JSONObject: ...

    async def delete_front_matter(self, path: str, keys: list[str]) -> None: ...

    async def create_card(self, day: str, name: str, session_id: str | None = None) -> tuple[str, bool]:
        """(path, created) of the card `daily/<day>/<name>.md`; created is False when it existed."""
        ...

    async def refresh_day(self, day: str) -> None:
        """Regenerate the day index page `daily/<day>.md`."""
        ...


class Digest(Protocol):
    """Digest nodes under the digest rules (docs/spec.md §12.3): written, edited, or drafted without a write."""

    async def write_node(
        self, path: str, content: str, *, name: str | None = None, description: str | None = None
    ) -> FileText:
        """Create a node; `ReMeError` naming the broken rule (nothing written)."""
        ...

    async def edit_node(self, path: str, old: str, new: str, *, expected_sha256: str | None) -> FileText:
        """Replace every `old` by `new` in a node's body under E-1; `Conflict` when it changed since
        `expected_sha256`, `ConservationViolation` / `StatementDropped` when links or statements would be lost."""
        ...

    async def draft_node(self, path: str, content: str, *, description: str | None, name: str | None) -> str:
        """The file text `write_node` would create at `path`; raise `ReMeError` naming the broken rule."""
        ...

    async def draft_edit(self, path: str, text: str, old: str, new: str, *, conserve: bool) -> str:
        """`text` after the edit of `old` by `new` (E-1 only when `conserve`); `ReMeError` when refused."""
        ...


class Recall(Protocol):
    """Search over the index: nodes, passages, the link graph, embeddings."""

    async def node_search(
        self, query: str, *, limit: int, keyword_only: bool = False, as_of: str | None = None
    ) -> list[NodeHit]:
        """Digest nodes for a query, best first. `keyword_only`: keyword (BM25) scores alone even with
        vectors on, for lexical comparisons; `as_of` (default today): the day statements are valid on."""
        ...

    async def search(
        self, query: str, *, limit: int, path_prefix: str = "", as_of: str | None = None
    ) -> list[PassageHit]:
        """Passages for a query, best first (docs/spec.md §17.3 for `as_of`)."""
        ...

    async def traverse(self, paths: Sequence[str], *, depth: int, direction: str = "both") -> Neighbourhood:
        """The link neighbourhood of `paths`, `depth` links away."""
        ...

    async def embed(self, texts: Sequence[str]) -> Embeddings | None:
        """`texts` embedded by the model the search uses; None when vectors are off (or it fails)."""
        ...


class RunState(Protocol):
    """Locks and derived state of pipeline runs."""

    def keyed_lock(self, key: str) -> asyncio.Lock:
        """One in-process lock per key (a session, a resource): runs on the same card take turns."""
        ...

    def exclusive(self, name: str, kind: str | None = None) -> AbstractAsyncContextManager[None]:
        """A workspace-wide lock across processes (`metadata/locks/<name>`), taken without waiting.

        `kind` (default `name`) is the kind of run holding it, as the refusal names it. Raises
        `ReMeError` at once when another run holds it, saying which kind, since when and which process.
        """
        ...

    def read_state(self, name: str) -> dict[str, Any]:
        """A pipeline's derived state (a catalog) from `metadata/`; empty when missing or unreadable.

        Its shape is the owning pipeline's to check (each catalog narrows its own entries)."""
        ...

    def write_state(self, name: str, data: JSONObject) -> None:
        """Persist a pipeline's derived state atomically."""
        ...


class Models(Protocol):
    """Models by role, and the tools an agent run may call."""

    def model(self, role: str) -> ModelHandle:
        """The model of a role (`chat`, `memory`); raise `LLMUnavailable` naming the missing setting."""
        ...

    def agent_tools(self, jobs: Sequence[str]) -> list[ToolSpec]:
        """The agent's view of these jobs, from their declarations; raise `ReMeError` for a job agents may not call."""
        ...

    @property
    def run_job(self) -> RunJob:
        """Runs an agent's tool call by job name (the per-pipeline path policy sits in front of it)."""
        ...


class MemoryPort(Notes, Bulk, Cards, Digest, Recall, RunState, Models, Protocol):
    """Every role: what a pipeline that needs most of them is given."""


class NotesRecall(Notes, Recall, Protocol):
    """Notes and recall, nothing written: an audit."""


class NotesRun(Notes, RunState, Protocol):
    """Notes changed under a run lock: a revert."""


class DigestRun(Notes, Digest, Recall, RunState, Models, Protocol):
    """What a dream or maintain run uses: notes, digest writes, recall, the lock, models."""

"""The memory port: every operation a pipeline needs from the rest of reme, as one typed Protocol.

Pipelines are written against `MemoryPort` and never against the application, its job names or its
response dicts; `reme.app.port.AppPort` implements it over the file jobs (so every write goes through
the same path checks, locks and index updates as any other client). Agent *tools* still call jobs by
name through `run_job` — that is where the per-pipeline path policy is enforced.

Every method raises `reme.errors.ReMeError` (message + metadata) when the operation fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import date, tzinfo
from typing import TYPE_CHECKING, Any, Protocol

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
class Embeddings:
    """Vectors of some texts from the index's embedding model; `model` is `<name>@<dimension>`."""

    model: str
    vectors: list[list[float]]  # L2-normalised: a dot product is the cosine similarity


@dataclass(frozen=True)
class ModelHandle:
    """A usable model for one role: build it with the prompt variables a scripted double may use."""

    settings: ModelSettings
    build: Callable[[dict[str, Any]], Model]


class MemoryPort(Protocol):
    """What a pipeline may do. Paths are workspace-relative POSIX paths."""

    @property
    def tz(self) -> tzinfo:
        """The application timezone: every "today" and daily date uses it."""
        ...

    @property
    def run_job(self) -> RunJob:
        """Runs a job by name, for agent tools only (the per-pipeline path policy sits in front of it)."""
        ...

    def today(self) -> date: ...

    def folder(self, role: str) -> str:
        """The configured folder name of a role: daily, digest, session, resource, journal, metadata."""
        ...

    def exists(self, path: str) -> bool: ...

    def check_path(self, path: str) -> str:
        """The path if the workspace's path gate accepts it; raise ValueError saying why not."""
        ...

    # files ---------------------------------------------------------------------------------------

    async def load(self, path: str) -> FileText | None:
        """The file's text and version, or None when it does not exist."""
        ...

    async def save(self, path: str, content: str, *, expected_sha256: str | None = None) -> FileText:
        """Write the whole file atomically; with `expected_sha256`, refuse when it changed meanwhile."""
        ...

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

    async def write(self, path: str, content: str, *, name: str, metadata: dict[str, Any]) -> None:
        """Create or overwrite a Markdown note from body text plus front matter (`name` and `metadata`)."""
        ...

    async def delete(self, path: str) -> None: ...

    async def commit(self, changes: Sequence[Change]) -> list[dict[str, Any]]:
        """Write and delete several files all together or not at all, a kill included (compare-and-set on each).

        Returns `{path, sha256, inbound}` per change: sha256 None and `inbound` the links still pointing
        at it for a deleted file. Raises `Conflict` (nothing written) when a file is not the expected version.
        """
        ...

    async def move(self, src: str, dst: str) -> None:
        """Rename a file, retargeting inbound links."""
        ...

    async def list_files(
        self, folder: str, *, extensions: tuple[str, ...] = (), recursive: bool = False
    ) -> list[FileEntry]:
        """Files of a folder (none when it does not exist), sorted by path."""
        ...

    async def list_dirs(self, folder: str) -> list[str]:
        """Names of the sub-folders of a folder (none when it does not exist), sorted."""
        ...

    # digest drafts (nothing written: a split stages its files, then commits them together) --------

    async def draft_node(self, path: str, content: str, *, description: str | None, name: str | None) -> str:
        """The file text `digest_write` would create at `path`; raise `ReMeError` naming the broken rule."""
        ...

    async def draft_edit(self, path: str, text: str, old: str, new: str, *, conserve: bool) -> str:
        """`text` after the `digest_edit` of `old` by `new` (E-1 only when `conserve`); `ReMeError` when refused."""
        ...

    # front matter --------------------------------------------------------------------------------

    async def front_matter(self, path: str) -> dict[str, Any]: ...

    async def update_front_matter(self, path: str, metadata: dict[str, Any]) -> dict[str, Any]: ...

    async def delete_front_matter(self, path: str, keys: list[str]) -> None: ...

    # daily notes ---------------------------------------------------------------------------------

    async def create_card(self, day: str, name: str, session_id: str | None = None) -> tuple[str, bool]:
        """(path, created) of the card `daily/<day>/<name>.md`; created is False when it existed."""
        ...

    async def refresh_day(self, day: str) -> None:
        """Regenerate the day index page `daily/<day>.md`."""
        ...

    # recall --------------------------------------------------------------------------------------

    async def node_search(
        self, query: str, *, limit: int, keyword_only: bool = False, as_of: str | None = None
    ) -> list[dict[str, Any]]:
        """Digest nodes for a query, best first: `{path, score, name, description}` (no body text).

        `keyword_only`: keyword (BM25) scores alone even with vectors on, for lexical comparisons.
        A node with validity statements also has `statements` (valid on `as_of`, default today) and
        `superseded` (without `as_of`) or `left_out` (with it), docs/spec.md §17.3."""
        ...

    async def search(
        self, query: str, *, limit: int, path_prefix: str = "", as_of: str | None = None
    ) -> list[dict[str, Any]]:
        """Passages for a query, best first: `{path, start_line, end_line, score, text, name, description}`,
        plus `valid`/`valid_range` where validity says something (docs/spec.md §17.3)."""
        ...

    async def traverse(self, paths: Sequence[str], *, depth: int, direction: str = "both") -> dict[str, Any]:
        """The link neighbourhood of `paths`: `{nodes: [{path, name, description, exists}], edges: [...]}`."""
        ...

    async def embed(self, texts: Sequence[str]) -> Embeddings | None:
        """`texts` embedded by the model the search uses; None when vectors are off (or it fails)."""
        ...

    # state and concurrency -----------------------------------------------------------------------

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
        """A pipeline's derived state (a catalog) from `metadata/`; empty when missing or unreadable."""
        ...

    def write_state(self, name: str, data: dict[str, Any]) -> None:
        """Persist a pipeline's derived state atomically."""
        ...

    # agents --------------------------------------------------------------------------------------

    def agent_tools(self, jobs: Sequence[str]) -> list[ToolSpec]:
        """The agent's view of these jobs, from their declarations; raise `ReMeError` for a job agents may not call."""
        ...

    # models --------------------------------------------------------------------------------------

    def model(self, role: str) -> ModelHandle:
        """The model of a role (`chat`, `memory`); raise `LLMUnavailable` naming the missing setting."""
        ...

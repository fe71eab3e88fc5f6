"""The `index` component (backend `sqlite_tantivy`): settings and lifecycle around `reme.index.service.IndexService`.

Steps reach the service through `index_service(app)` and use its intent methods only; the
workspace component's link source calls `sync_paths`/`inbound` on the service too. Every
`components.index.*` setting is a row of `INDEX_SETTINGS`: its one default, check and help.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from reme.app.component import Component, Host
from reme.app.components.workspace import WorkspaceComponent, workspace_of
from reme.app.registry import register_component
from reme.app.settings import Setting, SettingsTable
from reme.errors import ReMeError
from reme.index.chunking import DEFAULT_CHUNK_CHARS, DEFAULT_TRANSCRIPT_CHUNK_CHARS
from reme.index.embedding import Embedder, is_embedder
from reme.index.search import FUSIONS
from reme.index.service import CANNOT_ANSWER, IndexService, IndexSettings
from reme.index.sources import configured_scope
from reme.index.sync import MAX_FILE_BYTES
from reme.index.tokenizer import Tokenizer
from reme.jsontypes import JSONObject
from reme.workspace.layout import DEFAULT_DIRS
from reme.workspace.links import LinkSource, ScanLinks

log = logging.getLogger(__name__)

INDEX_SETTINGS = SettingsTable(
    Setting(
        "chunk_chars",
        int,
        DEFAULT_CHUNK_CHARS,
        "chunk size budget of notes and other text; set by leave-one-out over LoCoMo and LongMemEval",
        minimum=100,
    ),
    Setting(
        "transcript_chunk_chars",
        int,
        DEFAULT_TRANSCRIPT_CHUNK_CHARS,
        "chunk size budget of session transcripts (messages packed, a longer one cut in pieces)",
        minimum=100,
    ),
    Setting("watch", bool, True, "index_update_loop follows file changes live"),
    Setting("debounce_ms", int, 200, "a burst of changes within this window is one index update", minimum=0),
    Setting(
        "tokenizer",
        dict,
        None,
        "keyword tokenizer settings (stemmer, stopwords, min_cjk_len); null = the defaults",
        nullable=True,
    ),
    Setting(
        "sources",
        list,
        None,
        "what is indexed; null = every Markdown file and session/dialog/*.jsonl, or a "
        "list like [{folder: notes, extensions: [.md], recursive: true}]",
        nullable=True,
    ),
    Setting(
        "exclude",
        list,
        None,
        "null = [journal, resource]; paths or globs ('drafts/*.md'); metadata/ always",
        nullable=True,
    ),
    Setting(
        "max_file_bytes",
        int,
        MAX_FILE_BYTES,
        "larger files are catalogued but not indexed (= the write cap, 16 MiB)",
        minimum=1,
    ),
    Setting(
        "candidate_multiplier",
        int,
        2,
        "each search branch fetches limit × this many candidates (held out over LoCoMo and LongMemEval, "
        "benchmarks/README.md)",
        minimum=1,
    ),
    Setting(
        "vector",
        str,
        "embedding",
        "the embedding component fused in when it is enabled (jobs/embedding.yaml); null = never",
        nullable=True,
    ),
    Setting(
        "fusion",
        str,
        "relative_score",
        "how the keyword and vector rankings merge: relative_score (each "
        "branch's scores min–max scaled, then weighed; LoCoMo dev choice) or rrf (docs/spec.md §5.3, k = 60)",
        choices=tuple(FUSIONS),
        rule="one of " + ", ".join(FUSIONS),
    ),
    Setting(
        "vector_weight",
        float,
        0.4,
        "weight of the vector ranking in the fusion, keywords 1 - it (held out over LoCoMo and LongMemEval)",
        minimum=0,
        maximum=1,
        rule="between 0 and 1 (the keyword ranking weighs 1 - it)",
    ),
    Setting(
        "vector_context",
        float,
        0.3,
        "a chunk is ranked by its vector + this × its file neighbours' (normalised); 0 = own vector only",
        minimum=0,
        rule="at least 0 (0 ranks each chunk by its own vector)",
    ),
)


@register_component("sqlite_tantivy")
class IndexComponent(Component):
    kind = "index"
    requires = ("workspace",)
    settings_table = INDEX_SETTINGS

    def __init__(
        self,
        app: Host,
        name: str,
        *,
        chunk_chars: int,
        transcript_chunk_chars: int,
        watch: bool,
        debounce_ms: int,
        tokenizer: JSONObject | None,
        sources: list[JSONObject] | None,
        exclude: list[str] | None,
        max_file_bytes: int,
        candidate_multiplier: int,
        vector: str | None,
        vector_weight: float,
        vector_context: float,
        fusion: str,
    ) -> None:
        super().__init__(app, name)
        self.index_settings = IndexSettings(
            chunk_chars=chunk_chars,
            transcript_chunk_chars=transcript_chunk_chars,
            watch=watch,
            debounce_ms=debounce_ms,
            max_file_bytes=max_file_bytes,
            candidate_multiplier=candidate_multiplier,
            vector_weight=vector_weight,
            vector_context=vector_context,
            fusion=fusion,
        )
        self.tokenizer = Tokenizer(**(tokenizer or {}))
        self._scope_settings = (sources, exclude)
        configured_scope(DEFAULT_DIRS, sources, exclude)  # a bad list fails at start-up, not mid-sync
        self._vector_name = vector
        self.service: IndexService | None = None

    @classmethod
    def uses(cls, settings: Mapping[str, object]) -> tuple[str, ...]:
        """The embedding component named by `vector` starts first when it is enabled."""
        vector = settings.get("vector")
        return (vector,) if isinstance(vector, str) and vector else ()

    async def start(self) -> None:
        workspace = workspace_of(self.app)
        embedder = self._embedder()
        service = IndexService(
            workspace.root,
            workspace.root / workspace.folder("metadata"),
            scope=configured_scope(workspace.dirs, *self._scope_settings),
            settings=self.index_settings,
            tokenizer=self.tokenizer,
            embedder=embedder,
            embed_batch_size=int(getattr(embedder, "batch_size", 16)),
        )
        await asyncio.to_thread(service.open)
        self.service = service
        # The workspace's repairs (moves a killed writer left) rewrite links with the index's graph from now on.
        self.app.components.need("workspace", WorkspaceComponent).use_links(
            IndexLinks(service, ScanLinks(workspace))
        )

    def _embedder(self) -> Embedder | None:
        """The embedding component named by `vector` when it is configured and enabled, else None."""
        if not self._vector_name:
            return None
        component = self.app.components.get(self._vector_name)
        if component is None:
            return None
        if not is_embedder(component):
            raise ValueError(
                f"component {self._vector_name!r} is not an embedder (stamp, embed_passages, embed_query)"
            )
        return component  # type: ignore[return-value]

    def interrupt(self) -> None:
        if self.service is not None:
            self.service.interrupt()

    async def close(self) -> None:
        if self.service is not None:
            await asyncio.to_thread(self.service.close)

    def health(self) -> JSONObject:
        if self.service is None:
            return {"status": "error", "message": "not started"}
        return self.service.health()

    def stats(self) -> JSONObject:
        return self.service.stats() if self.service is not None else {}


class IndexLinks:
    """The index's link graph as a `LinkSource` for the file jobs, falling back to a scan of the files."""

    def __init__(self, service: IndexService, fallback: ScanLinks) -> None:
        self.service = service
        self.fallback = fallback

    def inbound(self, path: str) -> list[dict[str, str]]:
        """The graph's answer; a scan of the files when the index cannot give one (moves stay correct)."""
        try:
            entries = self.service.inbound(path)
        except CANNOT_ANSWER:
            log.warning("index inbound(%r) failed; scanning the workspace instead", path, exc_info=True)
            return self.fallback.inbound(path)
        return [
            {
                "source_path": entry["source_path"],
                "target_path": entry["target_path"],
                "resolved_path": entry.get("resolved_path", entry["target_path"]),
            }
            for entry in entries
        ]

    def ending_with(self, suffix: str) -> list[str]:
        """The index's catalogued files ending like a short link; the scan's answer if it fails."""
        try:
            return self.service.ending_with(suffix)
        except CANNOT_ANSWER:
            log.warning("index ending_with(%r) failed; scanning the workspace instead", suffix, exc_info=True)
            return self.fallback.ending_with(suffix)

    def sync_paths(self, paths: list[str]) -> None:
        """Best effort: the file is already written, so an index that cannot take it now is logged, not
        raised (it catches up at its next sync); a bug in the index propagates."""
        try:
            self.service.sync_paths(list(paths))
        except CANNOT_ANSWER:
            log.warning("index sync of %s failed; it will catch up on its next sync", paths, exc_info=True)


def link_source(app: Host) -> LinkSource:
    """The index's link graph when an `index` component runs, else a scan of the workspace."""
    scan = ScanLinks(workspace_of(app))
    component = app.components.get("index")
    if isinstance(component, IndexComponent) and component.service is not None:
        return IndexLinks(component.service, scan)
    return scan


def index_service(app: Host, name: str = "index") -> IndexService:
    """The started index service of the application; a ReMeError saying how to configure one otherwise."""
    component = app.components.get(name)
    if not isinstance(component, IndexComponent) or component.service is None:
        raise ReMeError(f"no {name!r} component is configured; add components.{name} to the config")
    return component.service

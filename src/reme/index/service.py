"""`IndexService`: the index of one workspace — catalog (SQLite), keyword engine (tantivy), link graph,
vectors — and the one way the rest of reme reaches it.

It owns recovery (finish interrupted writes at open, rebuild when catalog and engine disagree or the
layout changed), readiness (one reconcile with the disk per process, done by the upkeep or the
first search), its background upkeep (`keep_up`), figures and health. Callers use its intent
methods: file jobs `sync_paths` after changing files and `inbound` before moving or deleting;
search jobs `ready_for_reading`, `search`, `node_search`, `traverse` and `freshness`; `reindex`
`rebuild`. Results are typed (`Hit`, `GraphNode`, `Readiness`, `Freshness`, `RebuildReport`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from reme.errors import Unavailable
from reme.index.chunking import CHUNKER_VERSION, DEFAULT_CONTEXT_CHARS
from reme.index.embedding import Embedder
from reme.index.graph import Direction, Edge, GraphNode, LinkGraph
from reme.index.guard import IndexGuard
from reme.index.keyword import KeywordIndex, engine_folder
from reme.index.progress import IndexProgress, Progress, Stages
from reme.index.results import Freshness, Overview, Readiness, RebuildReport, RebuiltVectors
from reme.index.search import Hit, Searcher, SearchFilters
from reme.index.sources import Scope
from reme.index.store import MetadataStore
from reme.index.sync import Indexer, SyncReport
from reme.index.tokenizer import Tokenizer
from reme.index.upkeep import (
    UpkeepReport,
    UpkeepTiming,
    embed_in_background,
    settle_and_catch_up,
    sync_changes,
)
from reme.index.watch import watch_paths
from reme.jsontypes import JSONObject, JSONValue
from reme.workspace.paths import check_relative

if TYPE_CHECKING:
    from reme.index.vectors import VectorIndex

DB_NAME = "index.sqlite3"
CANNOT_ANSWER: tuple[type[Exception], ...] = (sqlite3.Error, OSError, Unavailable)
"""What the index raises when it cannot answer now (catalog locked or damaged, disk, engine locked,
closed): a caller with another way to answer (a scan of the files) uses it; anything else is a bug."""
log = logging.getLogger(__name__)
R = TypeVar("R")


@dataclass(frozen=True)
class IndexSettings:
    """The index's configuration: the values of `components.index.*` that the service uses (their
    defaults, checks and help are the component's settings table, `reme.app.components.index`)."""

    chunk_chars: int
    transcript_chunk_chars: int
    watch: bool
    debounce_ms: int
    max_file_bytes: int
    candidate_multiplier: int
    vector_weight: float
    vector_context: float
    fusion: str


def _stage(stages: Stages | None, label: str) -> AbstractContextManager[Progress | None]:
    return nullcontext() if stages is None else stages(label)


def _count(figures: JSONObject, key: str) -> int:
    value = figures.get(key)
    return value if isinstance(value, int) else 0


class IndexService:
    """The index over `root`, its derived state in `metadata_dir`; `open()` before use, `close()` after."""

    def __init__(
        self,
        root: Path,
        metadata_dir: Path,
        *,
        scope: Scope,
        settings: IndexSettings,
        tokenizer: Tokenizer,
        embedder: Embedder | None = None,
        embed_batch_size: int = 16,
    ) -> None:
        self.root = root
        self.metadata_dir = metadata_dir
        self.scope = scope
        self.sources = scope.sources
        self.settings = settings
        self.tokenizer = tokenizer
        self.embedder = embedder
        self.embed_batch_size = embed_batch_size
        self.vectors: VectorIndex | None = None  # the vector branch, when an embedder is configured
        self.last_repair: JSONObject = {}
        self._ready = False
        self._ready_lock = threading.Lock()
        self._needs_rebuild = False
        self.progress = IndexProgress()  # what searches report while the first reconcile runs
        self.store: MetadataStore | None = None

    # lifecycle -----------------------------------------------------------------------------------

    def open(self) -> None:
        self.metadata_dir.mkdir(parents=True, exist_ok=True)
        self.store = store = self._open_store()
        self.keyword = self._open_keyword()
        self.indexer = Indexer(
            self.root,
            store,
            self.keyword,
            lock_path=self.metadata_dir / "index.lock",
            scope=self.scope,
            chunk_chars=self.settings.chunk_chars,
            transcript_chunk_chars=self.settings.transcript_chunk_chars,
            max_file_bytes=self.settings.max_file_bytes,
        )
        self.guard = IndexGuard(self.indexer)  # foreign interrupted writes, reasons for `degraded`
        self.graph = LinkGraph(self.root, store, self.indexer.is_indexable)
        if self.embedder is not None:
            from reme.index.vectors import VectorIndex  # numpy only when vectors are on

            self.vectors = VectorIndex(
                self.metadata_dir,
                store,
                self.embedder,
                self.embed_batch_size,
                context=self.settings.vector_context,
            )
        self.searcher = Searcher(
            store,
            self.keyword,
            self.graph,
            candidate_multiplier=self.settings.candidate_multiplier,
            vector=self.vectors,
            vector_weight=self.settings.vector_weight,
            fusion=self.settings.fusion,
        )
        self._repair()

    def _open_store(self) -> MetadataStore:
        """Open the catalog; a corrupt one is derived state, so it is deleted and rebuilt.

        Any other error (locked by another process's write, disk full) is raised: deleting the
        files would pull the database from under a live writer.
        """
        db_path = self.metadata_dir / DB_NAME
        try:
            return MetadataStore(db_path)
        except sqlite3.DatabaseError as exc:
            if exc.sqlite_errorname not in ("SQLITE_NOTADB", "SQLITE_CORRUPT"):
                raise
            for suffix in ("", "-wal", "-shm"):
                db_path.with_name(db_path.name + suffix).unlink(missing_ok=True)
            return MetadataStore(db_path)

    def _open_keyword(self) -> KeywordIndex:
        """Open the engine for this tokenizer; an unreadable one is deleted and rebuilt."""
        directory = self.metadata_dir / "keyword"
        try:
            keyword = KeywordIndex(directory, self.tokenizer)
        except (OSError, ValueError):
            shutil.rmtree(engine_folder(directory, self.tokenizer), ignore_errors=True)
            keyword = KeywordIndex(directory, self.tokenizer)
        keyword.remove_stale_siblings()
        return keyword

    def _layout(self) -> str:
        """What the catalog content depends on besides the files; a change means a full rebuild."""
        return json.dumps(
            {
                "chunk_chars": self.settings.chunk_chars,
                "transcript_chunk_chars": self.settings.transcript_chunk_chars,
                "chunker": [CHUNKER_VERSION, DEFAULT_CONTEXT_CHARS],
                **self.scope.describe(),
            },
            sort_keys=True,
        )

    def _repair(self) -> None:
        """Finish interrupted writes; rebuild lazily when catalog and engine disagree."""
        store = self._store()
        with self.indexer.writing():
            layout_changed = store.get_meta("layout") != self._layout()
            try:
                report: JSONObject = self.indexer.repair().to_dict()
            except Exception as exc:  # the rebuild below re-derives everything from the files
                log.warning("index repair failed; rebuilding", exc_info=True)
                report = {"error": f"{type(exc).__name__}: {exc}"}
            agree = "error" not in report and store.keyword_doc_total() == self.keyword.num_docs
            if store.recreated:  # tables dropped by hand came back empty: their rows are re-derived
                report["recreated_tables"] = list(store.recreated)
            self._needs_rebuild = layout_changed or not agree or bool(store.recreated)
            self.last_repair = {**report, "rebuild": self._needs_rebuild}

    def interrupt(self) -> None:
        """Shutdown: a long rebuild or reconcile ends after its current batch (consistent)."""
        if self.store is not None:
            self.indexer.stop()

    def close(self) -> None:
        """Close once no writer is busy: an update in a worker thread outlives its cancelled task."""
        if self.store is None:
            return
        self.interrupt()
        with self.indexer.writing():
            self.store.close()
        if self.vectors is not None:
            self.vectors.close()

    def _store(self) -> MetadataStore:
        if self.store is None:
            raise Unavailable("the index is not open")
        return self.store

    # readiness -----------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Reconciled with the disk in this process (searches before that reconcile first)."""
        return self._ready

    def ensure_ready(self, progress: Progress | None = None, *, wait: bool = True) -> SyncReport | None:
        """Reconcile with the disk once per process (a full rebuild when the repair asked for one).

        `wait=False` (searches) returns at once while another thread is already reconciling, so a
        long first rebuild in the update loop does not hold up queries; they see what is indexed.
        """
        if self._ready:
            return None
        if not self._ready_lock.acquire(blocking=wait):
            return None
        try:
            if self._ready:
                return None
            stage = "rebuild" if self._needs_rebuild else "reconcile"
            with self.progress.run(stage, progress) as track:
                report = self._rebuild(track) if self._needs_rebuild else self.indexer.reconcile(track)
            self._ready = not report.stopped  # a reconcile cut short by shutdown is not up to date
            return report
        finally:
            self._ready_lock.release()

    def reindex(self, progress: Progress | None = None) -> SyncReport:
        """Drop all derived state and rebuild it from the files."""
        with self._ready_lock, self.progress.run("rebuild", progress) as track:
            report = self._rebuild(track)
            self._ready = not report.stopped
            return report

    def _rebuild(self, progress: Progress | None) -> SyncReport:
        """Rebuild; record the layout only once every file was rebuilt with it (not when shutdown cut it short)."""
        self._store().restore_schema()  # a table dropped while running comes back to be refilled
        report = self.indexer.rebuild(progress)
        if not report.stopped:
            self._store().set_meta("layout", self._layout())
            self._needs_rebuild = False
        return report

    # file jobs -----------------------------------------------------------------------------------

    def sync_paths(self, paths: list[str] | str) -> SyncReport:
        """Bring these workspace-relative files or folders up to date (cheap when unchanged)."""
        if isinstance(paths, str):
            paths = [paths]
        checked = [check_relative(path) for path in paths]
        self.ensure_ready()
        return self.indexer.sync_paths(checked)

    def inbound(self, path: str) -> list[dict[str, str]]:
        """Links `{source_path, target_path}` pointing at this file or into this folder.

        Reconciles with the disk first: `move` retargets what this returns, so a linking file
        written a moment ago, before the update loop saw it, must be found too.
        """
        checked = check_relative(path)
        if self.ensure_ready() is None:
            self.indexer.reconcile()
        return self.graph.inbound(checked)

    def is_indexable(self, path: str) -> bool:
        return self.indexer.is_indexable(path)

    def ending_with(self, suffix: str) -> list[str]:
        """Catalogued files whose path ends with `/<suffix>` (the candidates of a short link)."""
        return self.graph.ending_with(suffix)

    def unindexed_reason(self, path: str) -> str | None:
        """Why a file at `path` would not be indexed (None: it would be), for `write` to say so."""
        return self.scope.reason(path)

    def pending_writes(self) -> int:
        """Index writes in flight (this process's or another's): results may be a moment behind."""
        return len(self._store().intents())

    def drift(self) -> tuple[int, int, int]:
        """How far the catalog is behind the files: (new, changed, deleted) file counts."""
        disk, known = self.indexer.scan(), self._store().stamps()
        added = sum(path not in known for path in disk)
        changed = sum(path in known and known[path] != stamp for path, stamp in disk.items())
        return added, changed, sum(path not in disk for path in known)

    def catch_up(self) -> JSONObject | None:
        """Finish index writes another process left interrupted (cheap when nothing changed)."""
        return self.guard.catch_up()

    # reading -------------------------------------------------------------------------------------

    def readiness(self) -> Readiness:
        """Where the catch-up with the files stands now."""
        return Readiness(self._ready, self.progress.state())

    async def ready_for_reading(self, wait_s: float) -> Readiness:
        """Before a search: catch up with the files if that is done within `wait_s` (never waiting on
        another thread's catch-up longer), and finish index writes another process left
        interrupted. Blocking work runs in worker threads: the catalog's lock may be held by a batch."""
        if not self._ready:
            await asyncio.to_thread(self.ensure_ready, wait=False)  # returns at once while another catches up
        if not self._ready and wait_s > 0:
            await asyncio.to_thread(self.progress.wait, wait_s)
        await asyncio.to_thread(self.catch_up)
        return self.readiness()

    async def search(
        self,
        query: str,
        *,
        limit: int,
        min_score: float,
        filters: SearchFilters,
        expand_links: bool,
        max_links_per_direction: int,
        fold_files: bool,
        generated_folder: str | None,
    ) -> list[Hit]:
        """The best passages for `query` (docs/spec.md §5.3); see `Searcher.search`. None from a file
        changed since it was indexed (`_current`)."""

        async def run() -> list[Hit]:
            return await self.searcher.search(
                query,
                limit=limit,
                min_score=min_score,
                filters=filters,
                expand_links=expand_links,
                max_links_per_direction=max_links_per_direction,
                fold_files=fold_files,
                generated_folder=generated_folder,
            )

        return await self._current(run, lambda hit: hit.path)

    async def node_search(
        self, query: str, limit: int, folder: str, *, keyword_only: bool
    ) -> list[dict[str, JSONValue]]:
        """The best `limit` nodes under `folder` (path, score, name, description), in a worker thread;
        none from a file changed since it was indexed (`_current`)."""

        async def run() -> list[dict[str, JSONValue]]:
            return await asyncio.to_thread(
                self.searcher.node_search, query, limit, folder, keyword_only=keyword_only
            )

        return await self._current(run, lambda node: str(node["path"]))

    async def traverse(
        self, seeds: Sequence[str], depth: int, direction: Direction, max_nodes: int
    ) -> tuple[list[GraphNode], list[Edge]]:
        """The link graph around `seeds` up to `depth` hops (nodes and edges), in a worker thread;
        walked again when a file it reached changed since it was indexed (`_resync`)."""
        nodes, edges = await asyncio.to_thread(self.graph.traverse, seeds, depth, direction, max_nodes)
        if await self._resync(await self._stale([node.path for node in nodes])):
            nodes, edges = await asyncio.to_thread(self.graph.traverse, seeds, depth, direction, max_nodes)
        return nodes, edges

    async def _current(self, run: Callable[[], Awaitable[list[R]]], path_of: Callable[[R], str]) -> list[R]:
        """`run`'s results, none from a file changed since it was indexed: without the update loop (the
        embedded app) nothing else notices a file edited or deleted behind the index. Changed files
        are synced and `run` answers again; one still changed then is left out. Costs a stat per
        result, and a second run only when one was stale."""
        found = await run()
        stale = await self._stale([path_of(item) for item in found])
        if await self._resync(stale):
            found = await run()
            stale = await self._stale([path_of(item) for item in found])
        return [item for item in found if path_of(item) not in stale]

    async def _stale(self, paths: list[str]) -> set[str]:
        """Those of `paths` whose file changed or went since it was indexed (one stat each)."""
        return set(await asyncio.to_thread(self.indexer.changed, paths))

    async def _resync(self, stale: set[str]) -> bool:
        """Sync files changed behind the index as the update loop does; whether it did (not while the
        first catch-up holds the index: it syncs them itself, and a search must not wait for it)."""
        if not stale or not self._ready:
            return False
        await asyncio.to_thread(sync_changes, self.indexer, sorted(stale))
        return True

    def searchable(self, query: str) -> bool:
        """Whether the query has a word the keyword index knows (stop words, punctuation and
        symbols alone have none): a search that found nothing can then tell the user to rephrase."""
        return self.keyword.has_terms(query)

    def resolve_link(self, target: str) -> str | None:
        """The file a link target (or a path spelled like one) names, as links resolve (docs/spec.md
        §2.2); None when it names none or several."""
        return self.graph.resolve(target)

    def freshness(self) -> Freshness:
        """Index writes in flight (this process's or another's) and, with vectors on, chunks still
        waiting for their embedding or why the vector branch is unavailable."""
        pending = self.pending_writes()
        if self.vectors is None:
            return Freshness(pending, vectors_on=False)
        try:
            reason = self.vectors.unavailable()  # a query just failed: no second wait on the endpoint
            if reason is not None:
                raise RuntimeError(reason)
            waiting = self.vectors.pending()
        except Exception as exc:  # the model cannot load or the endpoint is down: keyword results stand
            return Freshness(
                pending, True, vector_error=f"{type(exc).__name__}: {exc}", vector_error_reason=str(exc)
            )
        return Freshness(pending, True, vectors_pending=waiting)

    # figures -------------------------------------------------------------------------------------

    def health(self) -> JSONObject:
        if self.store is None:
            return {"status": "error", "message": "not started"}
        missing = self.store.missing_tables()
        if missing:  # every search and write would fail or miss rows until the catalog is rebuilt
            problems = [
                f"the catalog lacks its table(s) {', '.join(missing)} (removed outside reme); "
                "run reindex to rebuild it from the files"
            ]
        else:
            self.guard.catch_up()
            problems = self.guard.problems()
        health: JSONObject = {
            "status": "degraded" if problems else "ok",
            "ready": self._ready,
            "pending_writes": 0 if "intents" in missing else len(self.store.intents()),
            "last_repair": self.last_repair,
        }
        if self.vectors is not None:
            health["vectors"] = figures = self.vector_figures()
            failure = figures.get("error") or figures.get("last_error")
            if failure:
                problems.append(f"embedding failed ({failure}); keyword search still works")
                health["status"] = "degraded"
        return {**health, "reason": "; ".join(problems)} if problems else health

    def stats(self) -> JSONObject:
        store = self._store()
        counts = store.counts()
        engine_bytes = sum(f.stat().st_size for f in self.keyword.path.rglob("*") if f.is_file())
        return {
            **counts,
            "keyword_docs": self.keyword.num_docs,
            "pending_links": len(self.graph.pending_edges()),
            "catalog_bytes": store.size_bytes(),
            "keyword_bytes": engine_bytes,
            "tokenizer": self.tokenizer.fingerprint,
            "ready": self._ready,
            "progress": self.progress.state().to_dict(),
            **({"vectors": self.vector_figures()} if self.vectors is not None else {}),
        }

    def overview(self) -> Overview:
        added, changed, gone = self.drift()
        counts = self._store().counts()
        rebuild_due = bool(self.last_repair.get("rebuild"))
        return Overview(
            counts["files"], counts["chunks"], self.tokenizer.fingerprint, rebuild_due, added, changed, gone
        )

    def vector_figures(self) -> JSONObject:
        """Vectors, pending and model; the failure instead when the model cannot be loaded or reached."""
        if self.vectors is None:
            return {"enabled": False}
        try:
            return {"enabled": True, **self.vectors.figures()}
        except Exception as exc:
            return {"enabled": True, "error": f"{type(exc).__name__}: {exc}"}

    @property
    def vectors_on(self) -> bool:
        """Whether the vector branch is configured (an embedder is enabled)."""
        return self.vectors is not None

    def embed_pending(self, progress: Progress | None = None) -> int:
        """Embed every chunk still without a vector (batch by batch; shutdown ends it after a batch)."""
        if self.vectors is None:
            return 0
        return self.vectors.embed_all(progress, self.indexer.stopping)

    # rebuild and upkeep --------------------------------------------------------------------------

    def rebuild(self, stages: Stages | None = None) -> RebuildReport:
        """`reindex`, then embed what has no cached vector and drop vectors no chunk uses; progress
        is counted per stage (`reindexing`, `embedding`) in what `stages` opens."""
        with _stage(stages, "reindexing") as update:
            report = self.reindex(update)
        with _stage(stages, "embedding") as update:
            embedded = self.embed_pending(update)
        counts = self._store().counts()
        vectors = None
        if self.vectors is not None:
            figures = self.vector_figures()
            pruned = self.vectors.prune(slack=0) if not report.stopped else 0  # text no chunk has any more
            vectors = RebuiltVectors(
                embedded, _count(figures, "vectors"), _count(figures, "vectors_pending"), pruned
            )
        return RebuildReport(report, counts["files"], counts["chunks"], counts["links"], vectors)

    async def keep_up(self, timing: UpkeepTiming) -> UpkeepReport:
        """The index's background work (the `index_update_loop` job): reconcile, then watch the
        indexed folders and sync each burst of changes, reconcile once more when the watcher runs,
        finish other processes' interrupted writes every `catch_up_s`, and embed new chunks. Runs
        until cancelled; with watching off (`components.index.watch`) it embeds what is pending
        and returns."""
        await asyncio.to_thread(self.ensure_ready)
        if not self.settings.watch:
            return UpkeepReport(watched=False, embedded=await asyncio.to_thread(self.embed_pending))

        async def catch_up() -> None:
            await asyncio.to_thread(self.catch_up)

        loops = [asyncio.create_task(settle_and_catch_up(self.indexer, catch_up, timing))]
        if self.vectors is not None:
            loops.append(
                asyncio.create_task(embed_in_background(self.vectors, self.indexer.stopping, timing))
            )
        try:
            await watch_paths(
                self.root,
                self.scope.watched_folders(),
                lambda paths: sync_changes(self.indexer, paths),
                debounce_ms=self.settings.debounce_ms,
                ignore=self.scope.ignores,
            )
        finally:
            for loop in loops:
                loop.cancel()
        return UpkeepReport(watched=True)

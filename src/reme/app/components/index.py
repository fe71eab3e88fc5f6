"""The `index` component: catalog (SQLite) + keyword engine (tantivy) + link graph + search.

File jobs call `sync_paths(paths)` after changing files and `inbound(path)` before moving or
deleting; search jobs use `searcher`; `index_update_loop` keeps everything live. Start-up is cheap:
it finishes interrupted writes and checks that catalog and engine agree; the (possibly long)
reconcile with the disk runs once, on the loop's start or the first search, whichever comes first.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any

from reme.app.component import Component
from reme.app.registry import register_component
from reme.index.chunking import CHUNKER_VERSION, DEFAULT_CHUNK_CHARS, DEFAULT_CONTEXT_CHARS
from reme.index.graph import LinkGraph
from reme.index.keyword import KeywordIndex, engine_folder
from reme.index.search import Searcher, VectorBranch
from reme.index.sources import Scope, configured_scope
from reme.index.store import MetadataStore
from reme.index.sync import MAX_FILE_BYTES, Indexer, Progress, SyncReport
from reme.index.tokenizer import Tokenizer
from reme.workspace.layout import DEFAULT_DIRS
from reme.workspace.paths import check_relative

DB_NAME = "index.sqlite3"
log = logging.getLogger(__name__)


@register_component("sqlite_tantivy")
class IndexComponent(Component):
    kind = "index"
    requires = ("workspace",)

    def __init__(
        self,
        app: Any,
        name: str,
        *,
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
        watch: bool = True,
        debounce_ms: int = 200,
        tokenizer: dict[str, Any] | None = None,
        sources: list[dict[str, Any]] | None = None,
        exclude: list[str] | None = None,
        max_file_bytes: int = MAX_FILE_BYTES,
        candidate_multiplier: int = 3,
        vector: str | None = None,
        vector_weight: float = 0.7,
    ) -> None:
        super().__init__(app, name)
        if not isinstance(chunk_chars, int) or chunk_chars < 100:
            raise ValueError("chunk_chars must be an integer of at least 100")
        if not isinstance(candidate_multiplier, int) or candidate_multiplier < 1:
            raise ValueError("candidate_multiplier must be a positive integer")
        if not 0.0 <= float(vector_weight) <= 1.0:
            raise ValueError("vector_weight must be between 0 and 1 (the keyword ranking weighs 1 - it)")
        self.settings = {
            "chunk_chars": chunk_chars,
            "watch": bool(watch),
            "debounce_ms": int(debounce_ms),
            "max_file_bytes": int(max_file_bytes),
            "candidate_multiplier": candidate_multiplier,
            "vector": vector,
            "vector_weight": float(vector_weight),
        }
        self.tokenizer = Tokenizer(**(tokenizer or {}))
        self._scope_settings = (sources, exclude)
        configured_scope(DEFAULT_DIRS, sources, exclude)  # a bad list fails at start-up, not mid-sync
        self._ready = False
        self._ready_lock = threading.Lock()
        self.last_repair: dict[str, Any] = {}

    # lifecycle -----------------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return Path(self.app.workspace_dir).resolve()

    @property
    def dirs(self) -> dict[str, str]:
        """Configured folder names by role (`daily`, `digest`, `session`, `metadata`, ...)."""
        workspace = self.app.components.get("workspace")
        return {**DEFAULT_DIRS, **(getattr(workspace, "dirs", None) or {})}

    @property
    def metadata_dir(self) -> Path:
        return self.root / self.dirs["metadata"]

    async def start(self) -> None:
        await asyncio.to_thread(self._open)

    def _open(self) -> None:
        self.scope: Scope = configured_scope(self.dirs, *self._scope_settings)
        self.sources = self.scope.sources
        self.metadata_dir.mkdir(parents=True, exist_ok=True)
        self.store = self._open_store()
        self.keyword = self._open_keyword()
        self.indexer = Indexer(
            self.root,
            self.store,
            self.keyword,
            lock_path=self.metadata_dir / "index.lock",
            scope=self.scope,
            chunk_chars=self.settings["chunk_chars"],
            max_file_bytes=self.settings["max_file_bytes"],
        )
        self.graph = LinkGraph(self.root, self.store, self.indexer.is_indexable)
        vector = self._vector_branch()
        self.searcher = Searcher(
            self.store,
            self.keyword,
            self.graph,
            candidate_multiplier=self.settings["candidate_multiplier"],
            vector=vector,
            vector_weight=self.settings["vector_weight"],
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

    def _vector_branch(self) -> VectorBranch | None:
        """The seam for hybrid search: a configured component offering `async search(query, limit, filters)`."""
        name = self.settings["vector"]
        if not name:
            return None
        component = self.app.component(name)
        if not callable(getattr(component, "search", None)):
            raise ValueError(f"component {name!r} has no search(query, limit, filters) for hybrid search")
        return component  # type: ignore[return-value]

    def _layout(self) -> str:
        """What the catalog content depends on besides the files; a change means a full rebuild."""
        return json.dumps(
            {
                "chunk_chars": self.settings["chunk_chars"],
                "chunker": [CHUNKER_VERSION, DEFAULT_CONTEXT_CHARS],
                **self.scope.describe(),
            },
            sort_keys=True,
        )

    def _repair(self) -> None:
        """Finish interrupted writes; rebuild lazily when catalog and engine disagree."""
        with self.indexer.writing():
            layout_changed = self.store.get_meta("layout") != self._layout()
            try:
                report = self.indexer.repair().to_dict()
            except Exception as exc:  # the rebuild below re-derives everything from the files
                log.warning("index repair failed; rebuilding", exc_info=True)
                report = {"error": f"{type(exc).__name__}: {exc}"}
            agree = "error" not in report and self.store.keyword_doc_total() == self.keyword.num_docs
            self._needs_rebuild = layout_changed or not agree
            self.last_repair = {**report, "rebuild": self._needs_rebuild}

    async def close(self) -> None:
        if getattr(self, "store", None) is not None:
            await asyncio.to_thread(self._close_store)

    def _close_store(self) -> None:
        """Close once no writer is busy: an update in a worker thread outlives its cancelled task."""
        indexer = getattr(self, "indexer", None)
        if indexer is None:
            self.store.close()
            return
        with indexer.writing():
            self.store.close()

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
            if self._needs_rebuild:
                report = self.indexer.rebuild(progress)
                self.store.set_meta("layout", self._layout())
                self._needs_rebuild = False
            else:
                report = self.indexer.reconcile(progress)
            self._ready = True
            return report
        finally:
            self._ready_lock.release()

    def reindex(self, progress: Progress | None = None) -> SyncReport:
        """Drop all derived state and rebuild it from the files."""
        with self._ready_lock:
            report = self.indexer.rebuild(progress)
            self.store.set_meta("layout", self._layout())
            self._needs_rebuild = False
            self._ready = True
            return report

    # cross-area interface ------------------------------------------------------------------------

    def sync_paths(self, paths: list[str] | str) -> dict[str, Any]:
        """Bring these workspace-relative files or folders up to date (cheap when unchanged)."""
        if isinstance(paths, str):
            paths = [paths]
        checked = [check_relative(path) for path in paths]
        self.ensure_ready()
        return self.indexer.sync_paths(checked).to_dict()

    def inbound(self, path: str) -> list[dict[str, str]]:
        """Links `{source_path, target_path}` pointing at this file or into this folder.

        Reconciles with the disk first: `move` retargets what this returns, so a linking file
        written a moment ago, before the update loop saw it, must be found too.
        """
        checked = check_relative(path)
        if self.ensure_ready() is None:
            self.indexer.reconcile()
        return self.graph.inbound(checked)

    def ending_with(self, suffix: str) -> list[str]:
        """Catalogued files whose path ends with `/<suffix>` (candidates of a short link, SPEC 2.2)."""
        return self.graph.ending_with(suffix)

    def is_indexable(self, path: str) -> bool:
        return self.indexer.is_indexable(path)

    def unindexed_reason(self, path: str) -> str | None:
        """Why a file at `path` would not be indexed (None: it would be), for `write` to say so."""
        return self.scope.reason(path)

    # figures -------------------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        if not hasattr(self, "store"):
            return {"status": "error", "message": "not started"}
        agree = self.store.keyword_doc_total() == self.keyword.num_docs
        status = "ok" if agree or not self._ready else "degraded"
        return {
            "status": status,
            "ready": self._ready,
            "pending_writes": len(self.store.intents()),
            "last_repair": self.last_repair,
        }

    def stats(self) -> dict[str, Any]:
        counts = self.store.counts()
        engine_bytes = sum(f.stat().st_size for f in self.keyword.path.rglob("*") if f.is_file())
        return {
            **counts,
            "keyword_docs": self.keyword.num_docs,
            "pending_links": len(self.graph.pending_edges()),
            "catalog_bytes": _size_with_wal(self.store.db_path),
            "keyword_bytes": engine_bytes,
            "tokenizer": self.tokenizer.fingerprint,
            "ready": self._ready,
        }


def _size_with_wal(db_path: Path) -> int:
    return sum(p.stat().st_size for p in (db_path, db_path.with_name(db_path.name + "-wal")) if p.exists())

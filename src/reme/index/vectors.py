"""The vector index (docs/spec.md §5.2): a cache of chunk embeddings in `metadata/vectors.sqlite3`, searched
brute force in memory.

- One vector per distinct embedded string (`embedding_text` of a chunk), keyed by its content hash
  (`embedding_key`): an unchanged chunk is never embedded again — not after an edit elsewhere in
  its file, a move, a `reindex` or a restart, because the catalog may be rebuilt but this cache is not.
- The cache is stamped with the embedder's (backend, model, dimension). A different stamp drops
  every vector before the first new one is written, inside that write's transaction: two vector
  spaces never meet, and the files re-embed in the background.
- Crash consistency: each batch of vectors is one SQLite (WAL) transaction, so a kill leaves the
  cache without that batch, never with half a vector; what is missing is simply still pending.
- A text the model rejects (`EmbeddingRejected`) is found by bisecting its batch and marked failed
  in the cache (per stamp): it is skipped, keyword-only, until its chunk changes or the model does;
  every other text goes on being embedded. Any other error is transient: the batch is retried later.
- Queries: the catalog's chunks with a cached vector form a float32 matrix (rows reused as chunks
  come and go); a query is one matrix-vector product over the rows the filters admit. numpy is
  imported only here, and this module only when an embedder is configured.
- Neighbour context: a chunk is ranked by `normalise(v + context·(v_prev + v_next))`, where
  v_prev / v_next are the vectors of the chunks just before / after it in the same file (0 when
  there is none or it has no vector yet); derived from the cached vectors, never embedded. The
  neighbour links follow the catalog, so an edit re-mixes the chunks around it; `context` 0 ranks
  by each chunk's own vector alone. Filters still judge the chunk itself. The mix is kept up to
  date incrementally: a change re-mixes only the rows it touches (the changed chunks and their
  neighbours), so a search during background embedding does not redo every row.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reme.index.embedding import Embedder, EmbeddingRejected, Stamp, embedding_key, embedding_text
from reme.index.search import SearchFilters, VectorsUnavailable
from reme.index.store import MetadataStore
from reme.index.wal import WalDatabase

VECTORS_DB = "vectors.sqlite3"
DEFAULT_CONTEXT = 0.3  # neighbour weight in a chunk's ranking vector (LoCoMo, benchmarks/README.md)
QUERY_COOLDOWN_S = 30.0  # after a failed query, searches answer from keywords alone this long
WRITE_LOG_VERSIONS = 1000  # writes remembered by key, so a reader adopts only what another process wrote
REMIX_FULL_FRACTION = 0.25  # re-mix every row once more than this share of them is touched
log = logging.getLogger(__name__)


class VectorCache(WalDatabase):
    """`key -> vector` for one stamp, in SQLite (WAL); shared by every process of the workspace."""

    def __init__(self, db_path: Path, stamp: Stamp) -> None:
        super().__init__(db_path)
        self.stamp = stamp
        self._stamp_json = json.dumps(stamp.to_dict(), sort_keys=True)
        with self.transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS failed (key TEXT PRIMARY KEY, error TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS written (version INTEGER PRIMARY KEY, keys TEXT NOT NULL)")

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def ours(self) -> bool:
        """Whether the cached vectors are of this stamp's space (another model may have written last)."""
        with self._lock:
            return self._meta("stamp") == self._stamp_json

    def version(self) -> int:
        """Bumped by every write, from any process: a reader re-looks-up what it still misses."""
        with self._lock:
            return int(self._meta("version") or 0)

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among `keys` (none when the cache holds another stamp's space)."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            if self._meta("stamp") != self._stamp_json:
                return found
            for start in range(0, len(keys), 500):
                batch = list(keys[start : start + 500])
                marks = ",".join("?" * len(batch))
                for key, blob in self._db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({marks})", batch
                ):
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape[0] == self.stamp.dimension:
                        found[key] = vector
        return found

    def put(self, items: Sequence[tuple[str, np.ndarray]], failed: Sequence[tuple[str, str]] = ()) -> int:
        """Store a batch atomically (vectors, and keys the model rejected with why); first drop
        everything of another stamp (never mix spaces). Returns the cache's version after this write."""
        with self.transaction() as db:
            if self._meta("stamp") != self._stamp_json:
                for table in ("vectors", "failed", "written"):
                    db.execute(f"DELETE FROM {table}")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('stamp', ?)", (self._stamp_json,))
            db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(key, np.asarray(vector, dtype=np.float32).tobytes()) for key, vector in items],
            )
            db.executemany("INSERT OR REPLACE INTO failed VALUES (?, ?)", list(failed))
            db.execute(
                "INSERT INTO meta VALUES ('version', '1') "
                "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
            )
            version = int(self._meta("version") or 0)
            db.execute(
                "INSERT OR REPLACE INTO written VALUES (?, ?)", (version, json.dumps([k for k, _ in items]))
            )
            db.execute("DELETE FROM written WHERE version <= ?", (version - WRITE_LOG_VERSIONS,))
            return version

    def written_since(self, version: int) -> set[str] | None:
        """Keys stored by the writes after `version`; None when the log does not reach back that far
        (then a reader looks up everything it misses)."""
        with self._lock:
            if self._meta("stamp") != self._stamp_json:
                return None
            current = int(self._meta("version") or 0)
            rows = self._db.execute(
                "SELECT keys FROM written WHERE version > ? ORDER BY version", (version,)
            ).fetchall()
            if len(rows) != current - version:
                return None
            return {key for (keys,) in rows for key in json.loads(keys)}

    def failed(self) -> dict[str, str]:
        """Keys the model rejected in this stamp's space -> the error it gave."""
        with self._lock:
            if self._meta("stamp") != self._stamp_json:
                return {}
            return dict(self._db.execute("SELECT key, error FROM failed").fetchall())

    def keep_only(self, keys: set[str]) -> int:
        """Delete every vector whose key is not in `keys` (one transaction); how many went."""
        with self.transaction() as db:
            db.execute("CREATE TEMP TABLE IF NOT EXISTS live (key TEXT PRIMARY KEY)")
            db.execute("DELETE FROM live")
            db.executemany("INSERT OR IGNORE INTO live VALUES (?)", [(key,) for key in keys])
            removed = db.execute("DELETE FROM vectors WHERE key NOT IN (SELECT key FROM live)").rowcount
            db.execute("DELETE FROM failed WHERE key NOT IN (SELECT key FROM live)")
            db.execute("DELETE FROM live")
            return int(removed)

    def count(self) -> int:
        with self._lock:
            if self._meta("stamp") != self._stamp_json:
                return 0
            return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])


@dataclass
class _Pending:
    key: str
    text: str


class VectorIndex:
    """The vector branch of the search over the catalog's chunks; thread-safe.

    `refresh()` follows the catalog (one read when nothing changed); `embed_batch()` embeds the
    next batch of chunks without a vector (the index loop calls it in a worker thread);
    `search()` ranks the embedded chunks the filters admit.
    """

    def __init__(
        self,
        metadata_dir: Path,
        catalog: MetadataStore,
        embedder: Embedder,
        batch_size: int = 16,
        context: float = DEFAULT_CONTEXT,
    ):
        if not float(context) >= 0.0:
            raise ValueError("vector_context must be at least 0")
        self.db_path = metadata_dir / VECTORS_DB
        self.context = float(context)  # weight of the neighbours' vectors in a chunk's ranking vector
        self.catalog = catalog
        self.embedder = embedder
        self.batch_size = max(1, batch_size)
        self._lock = threading.RLock()
        self._embed_lock = threading.Lock()  # one batch at a time in this process
        self._cache: VectorCache | None = None
        self._rows: dict[str, int] = {}  # chunk id -> matrix row
        self._keys: dict[str, str] = {}  # chunk id -> cache key of its vector
        self._free: list[int] = []
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._used = 0  # rows ever handed out (live or free)
        self._alive = np.zeros(0, dtype=bool)
        self._row_path = np.zeros(0, dtype=np.int32)  # row -> index into _paths
        self._row_ids: list[str] = []  # row -> chunk id (stale for free rows)
        self._paths: list[str] = []
        self._path_ids: dict[str, int] = {}
        self._pending: dict[str, _Pending] = {}  # chunk id -> what to embed
        self._pending_path: dict[str, str] = {}
        self._by_key: dict[str, set[str]] = {}  # cache key -> pending chunk ids with that text
        self._failed: dict[str, str] = {}  # keys the model rejected -> why (skipped until they change)
        self._seen: tuple[int, int] | None = None  # (catalog generation, cache version) last synced
        self._neighbours: dict[
            str, tuple[str | None, str | None]
        ] = {}  # chunk id -> (previous, next) in its file
        # per row, grown with the matrix: the rows of its previous / next chunk (-1: none, no vector
        # or a free row) and the inverse norm of its mixed vector (0 for a free row)
        self._prev = np.zeros(0, dtype=np.int64)
        self._next = np.zeros(0, dtype=np.int64)
        self._inverse = np.zeros(0, dtype=np.float32)
        self._remix: set[str] | None = None  # chunk ids changed since the last mix; None: every row
        self.last_error: str | None = None
        self.query_cooldown_s = QUERY_COOLDOWN_S
        self._query_failure: tuple[float, str] | None = (
            None  # (monotonic time, error) of the last failed query
        )
        self.embedded = 0  # vectors this process computed (figures, tests)

    # state ---------------------------------------------------------------------------------------

    def cache(self) -> VectorCache:
        """The cache for the embedder's stamp (loading the model the first time)."""
        with self._lock:
            if self._cache is None:
                self._cache = VectorCache(self.db_path, self.embedder.stamp)
                self._failed = self._cache.failed()
                dimension = self._cache.stamp.dimension
                self._matrix = np.zeros((0, dimension), dtype=np.float32)
            return self._cache

    def close(self) -> None:
        """Close after the batch being embedded (if any) is stored."""
        with self._embed_lock, self._lock:
            if self._cache is not None:
                self._cache.close()

    def refresh(self) -> None:
        """Follow the catalog: drop gone chunks, pick up new ones (cached vector, else pending)."""
        cache = self.cache()
        with self._lock:
            seen = (self.catalog.generation(), cache.version())
            if seen == self._seen:
                return
            rows = self.catalog.query("SELECT chunk_id, path FROM chunks ORDER BY path, seq")
            ids = {row[0] for row in rows}
            if self.context:
                neighbours = _neighbours(rows)
                if self._remix is not None:  # re-mix the chunks whose links changed (moved, edited around)
                    old = self._neighbours
                    self._remix.update(c for c, link in neighbours.items() if old.get(c) != link)
                self._neighbours = neighbours
            for chunk_id in [c for c in self._rows if c not in ids]:
                self._drop_row(chunk_id)
            for chunk_id in [c for c in self._pending if c not in ids]:
                self._unpend(chunk_id)
            known = self._rows.keys() | self._pending.keys()
            new = [c for c in ids if c not in known]
            keys: set[str] = set()
            for chunk_id, path, pending in self._describe(new):
                self._pending[chunk_id], self._pending_path[chunk_id] = pending, path
                self._by_key.setdefault(pending.key, set()).add(chunk_id)
                keys.add(pending.key)
            if self._seen is None:
                keys = set(self._by_key)
            elif seen[1] != self._seen[1]:  # another process wrote: adopt what it stored
                elsewhere = cache.written_since(self._seen[1])
                keys |= set(self._by_key) if elsewhere is None else elsewhere & self._by_key.keys()
                self._failed = cache.failed()
            self._adopt(cache, keys)
            self._seen = seen

    def _describe(self, chunk_ids: list[str]) -> Iterator[tuple[str, str, _Pending]]:
        for row in self.catalog.chunks_by_id(chunk_ids).values():
            text = embedding_text(row)
            yield row.chunk_id, row.path, _Pending(embedding_key(text), text)

    def _adopt(self, cache: VectorCache, keys: Iterable[str]) -> None:
        """Move the pending chunks of these keys into the matrix where their vector is cached (by any process)."""
        wanted = [key for key in keys if key in self._by_key]
        if wanted:
            self._place(cache.get(wanted))

    def _place(self, vectors: dict[str, np.ndarray]) -> None:
        """Give every pending chunk whose text is among `vectors` its row (only those keys' chunks)."""
        for key, vector in vectors.items():
            for chunk_id in sorted(self._by_key.get(key, ())):
                path = self._pending_path[chunk_id]
                self._unpend(chunk_id)
                self._add_row(chunk_id, path, vector)
                self._keys[chunk_id] = key
                if self._remix is not None:
                    self._remix.add(chunk_id)

    def _unpend(self, chunk_id: str) -> None:
        pending = self._pending.pop(chunk_id)
        del self._pending_path[chunk_id]
        ids = self._by_key[pending.key]
        ids.discard(chunk_id)
        if not ids:
            del self._by_key[pending.key]

    def _add_row(self, chunk_id: str, path: str, vector: np.ndarray) -> None:
        if self._free:
            row = self._free.pop()
        else:
            row, self._used = self._used, self._used + 1
            self._row_ids.append(chunk_id)
            if row >= self._matrix.shape[0]:
                grown = max(16, 2 * self._matrix.shape[0])
                self._matrix = _grow(self._matrix, grown)
                self._row_path = _grow(self._row_path, grown)
                self._alive = _grow(self._alive, grown)
                self._prev = _grow(self._prev, grown, fill=-1)
                self._next = _grow(self._next, grown, fill=-1)
                self._inverse = _grow(self._inverse, grown)
        if path not in self._path_ids:
            self._path_ids[path] = len(self._paths)
            self._paths.append(path)
        self._matrix[row] = vector
        self._row_path[row] = self._path_ids[path]
        self._alive[row] = True
        self._rows[chunk_id] = row
        self._row_ids[row] = chunk_id

    def _drop_row(self, chunk_id: str) -> None:
        del self._keys[chunk_id]
        row = self._rows.pop(chunk_id)
        self._alive[row] = False
        self._prev[row] = self._next[row] = -1  # a reused row starts unmixed; the rows that
        self._inverse[row] = 0.0  # pointed here changed links, so `refresh` marks them
        self._free.append(row)

    # embedding -----------------------------------------------------------------------------------

    def pending(self) -> int:
        """Chunks of the catalog still waiting for a vector (after following the catalog); chunks
        whose text the model rejected are not waiting: see `failed()`."""
        self.refresh()
        with self._lock:
            return len(self._pending) - self._failed_chunks()

    def failed(self) -> int:
        """Chunks whose text the model rejected (keyword-only until the text or the model changes)."""
        self.refresh()
        with self._lock:
            return self._failed_chunks()

    def _failed_chunks(self) -> int:
        return sum(len(self._by_key[key]) for key in self._failed if key in self._by_key)

    def embed_batch(self) -> int:
        """Embed and store the next batch of pending chunks; how many were embedded (0: none pending).

        The model runs outside the index lock, so searches go on meanwhile; texts that repeat
        (the same line in many files) are embedded once. A batch the model rejects
        (`EmbeddingRejected`) is bisected: the texts that fail alone are marked failed (counted,
        logged once, skipped from then on) and the others are stored; the count includes them.
        Any other error is raised with nothing stored (transient: the caller retries later).
        """
        with self._embed_lock:
            self.refresh()
            with self._lock:
                batch: dict[str, str] = {}
                for key, ids in self._by_key.items():
                    if key not in self._failed:
                        batch[key] = self._pending[next(iter(ids))].text
                        if len(batch) >= self.batch_size:
                            break
            if not batch:
                return 0
            stored: list[tuple[str, np.ndarray]] = []
            rejected: list[tuple[str, str]] = []
            try:
                self._embed_bisecting(list(batch.items()), stored, rejected)
            except Exception as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                raise
            version = self.cache().put(stored, rejected)
            self.last_error = None
            self.embedded += len(stored)
            for key, error in rejected:
                log.warning(
                    "vectors: the embedder rejected a chunk text (%d characters, key %s): %s; "
                    "it is found by keywords only until it changes",
                    len(batch[key]),
                    key[:12],
                    error,
                )
            with self._lock:
                self._failed.update(rejected)
                self._place(dict(stored))
                if self._seen is not None and version == self._seen[1] + 1:  # no other writer meanwhile
                    self._seen = (self._seen[0], version)
            return len(stored) + len(rejected)

    def _embed_bisecting(
        self,
        items: list[tuple[str, str]],
        stored: list[tuple[str, np.ndarray]],
        rejected: list[tuple[str, str]],
    ) -> None:
        """Embed `items` (key, text) into `stored`; halve on a rejection down to single texts,
        which go to `rejected` with the error. Other errors propagate."""
        texts = [text for _, text in items]
        try:
            vectors = self.embedder.embed_passages(texts)
        except EmbeddingRejected as exc:
            if len(items) == 1:
                rejected.append((items[0][0], exc.message[:300]))
                return
            middle = len(items) // 2
            self._embed_bisecting(items[:middle], stored, rejected)
            self._embed_bisecting(items[middle:], stored, rejected)
            return
        dimension = self.cache().stamp.dimension
        if vectors.shape != (len(texts), dimension):
            raise ValueError(
                f"the embedder returned shape {vectors.shape} for {len(texts)} text(s) of "
                f"dimension {dimension}"
            )
        stored.extend(zip([key for key, _ in items], vectors, strict=True))

    def embed_all(self, progress: Any = None, should_stop: Any = None) -> int:
        """Embed until nothing is pending (or `should_stop()`); `progress(done, total)` after each batch."""
        total = self.pending()
        done, logged = 0, 0
        if total:
            log.info("vectors: embedding %s chunk(s)", f"{total:,}")
        while not (should_stop and should_stop()):
            count = self.embed_batch()
            if not count:
                break
            done += count
            if progress is not None:
                progress(min(done, total), max(total, done))
            if 10 * done // max(total, done) > logged:  # about every tenth of the way, like the index
                logged = 10 * done // max(total, done)
                log.info("vectors: embedded %s/%s chunks", f"{done:,}", f"{max(total, done):,}")
        return done

    # search --------------------------------------------------------------------------------------

    def unavailable(self) -> str | None:
        """Why queries skip the vector branch now (a query failed under `query_cooldown_s` ago), or None."""
        failure = self._query_failure
        if failure is None or time.monotonic() - failure[0] >= self.query_cooldown_s:
            return None
        return failure[1]

    def search(self, query: str, limit: int, filters: SearchFilters) -> list[tuple[str, float]]:
        """The `limit` embedded chunks closest to `query` (cosine) among those the filters admit.

        A circuit breaker: after a failure (endpoint down or slow) the next queries for
        `query_cooldown_s` raise at once, without a request, and the search answers from keywords."""
        reason = self.unavailable()
        if reason is not None:
            raise VectorsUnavailable(f"semantic search is paused after a failure: {reason}")
        try:
            query_vector = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
            self.refresh()
        except Exception as exc:
            self._query_failure = (time.monotonic(), f"{type(exc).__name__}: {exc}"[:300])
            raise
        self._query_failure = None
        with self._lock:
            admitted = self._alive[: self._used]
            if filters != SearchFilters():
                allowed = np.fromiter(map(filters.admits, self._paths), dtype=bool, count=len(self._paths))
                admitted = admitted & allowed[self._row_path[: self._used]]
            admitted_count = int(admitted.sum())
            if not admitted_count or limit < 1:
                return []
            scores = self._matrix[: self._used] @ query_vector  # no copy of the matrix
            if self.context:
                scores = self._mixed(scores)
            scores[~admitted] = -np.inf
            take = min(limit, admitted_count)
            top = (
                np.argpartition(-scores, take - 1)[:take] if take < len(scores) else np.flatnonzero(admitted)
            )
            ranked = [(self._row_ids[int(row)], float(scores[row])) for row in top]
        return sorted(ranked, key=lambda item: (-item[1], item[0]))

    def _mix_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: the rows of its previous and next chunk (-1: none, no vector yet or a free row)
        and the inverse norm of its mixed vector `v + context·(v_prev + v_next)` (0 for a free row).

        Kept up to date incrementally: only the rows the changes since the last call touch are
        re-mixed, every row when they are many (a re-index, the first search) or unknown. The
        arrays returned are views of the index's own, valid until the next change."""
        rows = None if self._remix is None else self._touched(self._remix)
        if rows is None or len(rows) > REMIX_FULL_FRACTION * len(self._rows):
            self._mix_all()
        elif rows:
            self._mix_some(np.fromiter(rows, dtype=np.int64, count=len(rows)))
        self._remix = set()
        used = self._used
        return self._prev[:used], self._next[:used], self._inverse[:used]

    def _touched(self, chunk_ids: set[str]) -> set[int]:
        """The rows whose mix may have changed: the changed chunks' own rows and their neighbours'
        (whose previous / next chunk got a vector or a new row). Dropped chunks are not among
        them: their rows were reset, and their old neighbours' links changed."""
        rows = self._rows
        touched: set[int] = set()
        for chunk_id in chunk_ids:
            for linked in (chunk_id, *self._neighbours.get(chunk_id, ())):
                if linked is not None and linked in rows:
                    touched.add(rows[linked])
        return touched

    def _mix_all(self) -> None:
        """Re-mix every row (free rows: no neighbours, inverse 0)."""
        self._prev[:] = -1
        self._next[:] = -1
        self._inverse[:] = 0.0
        self._mix_some(np.flatnonzero(self._alive[: self._used]))

    def _mix_some(self, rows: np.ndarray) -> None:
        """Re-link and re-normalise these live rows from the neighbour map and the matrix."""
        ids, links, found, matrix = self._row_ids, self._neighbours, self._rows, self._matrix
        befores, afters, none = [], [], (None, None)
        for row in rows.tolist():
            before, after = links.get(ids[row], none)
            befores.append(-1 if before is None else found.get(before, -1))  # -1 also: no vector yet
            afters.append(-1 if after is None else found.get(after, -1))
        self._prev[rows], self._next[rows] = befores, afters
        for start in range(0, len(rows), 4096):  # bounded temporaries
            block = rows[start : start + 4096]
            mixed = matrix[block]  # a copy (fancy indexing)
            for side in (self._prev[block], self._next[block]):
                has = side >= 0
                mixed[has] += self.context * matrix[side[has]]
            norms = np.linalg.norm(mixed, axis=1)
            self._inverse[block] = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)

    def _mixed(self, scores: np.ndarray) -> np.ndarray:
        """Own cosines -> cosines of the neighbour-mixed vectors (linear: mixed·q = s + context·(s_prev + s_next))."""
        prev, nxt, inverse = self._mix_rows()
        mixed = scores.copy()
        for side in (prev, nxt):
            has = side >= 0
            mixed[has] += self.context * scores[side[has]]
        return mixed * inverse

    def prune(self, slack: int = 1000) -> int:
        """Drop cached vectors no chunk of the catalog uses any more (edited or deleted text), once
        there are more than `slack` of them; how many were dropped. A text that comes back is
        simply embedded again."""
        self.refresh()
        with self._lock:
            live = set(self._keys.values()) | {p.key for p in self._pending.values()}
            cache = self.cache()
            if cache.count() - len(live) <= slack:
                return 0
            return cache.keep_only(live)

    def figures(self) -> dict[str, Any]:
        """What `status`/`health_check` report: vectors, pending, model."""
        stamp = self.cache().stamp
        pending = self.pending()
        with self._lock:
            return {
                "vectors": len(self._rows),
                "vectors_pending": pending,
                "vectors_failed": self._failed_chunks(),
                "model": stamp.to_dict(),
                "vector_bytes": self.cache().size_bytes(),
                "last_error": self.last_error,
            }


def _neighbours(rows: Sequence[Sequence[Any]]) -> dict[str, tuple[str | None, str | None]]:
    """(chunk id, path) rows in file order -> each chunk's previous and next chunk in the same file."""
    found: dict[str, tuple[str | None, str | None]] = {}
    for i, (chunk_id, path) in enumerate(rows):
        before = rows[i - 1][0] if i > 0 and rows[i - 1][1] == path else None
        after = rows[i + 1][0] if i + 1 < len(rows) and rows[i + 1][1] == path else None
        found[chunk_id] = (before, after)
    return found


def _grow(array: np.ndarray, rows: int, fill: float = 0) -> np.ndarray:
    grown = np.full((rows, *array.shape[1:]), fill, dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown

"""`VectorIndex`: the vector branch of the search (docs/spec.md §5.2), put together from the cache
(`cache.py`), the embedding queue (`queue.py`), the row store (`rows.py`), the neighbour mix
(`mix.py`) and the query circuit breaker (`breaker.py`).

It follows the catalog: each of its chunks has a row (its vector is cached, by this process or
another) or waits in the queue. `embed_batch` moves the next batch from the queue to the rows;
`search` ranks the rows the filters admit. One lock guards the queue, rows and mix; the model runs
outside it, so searches go on while a batch is embedded.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from reme.index.embedding import Embedder, embedding_key, embedding_text
from reme.index.progress import Progress
from reme.index.search import SearchFilters
from reme.index.store import ChangeMark, MetadataStore
from reme.index.vectors.breaker import CircuitBreaker
from reme.index.vectors.cache import VECTORS_DB, VectorCache
from reme.index.vectors.mix import NeighbourMix
from reme.index.vectors.queue import (
    Embedded,
    EmbeddingQueue,
    Waiting,
    embed_bisecting,
    embed_isolating,
)
from reme.index.vectors.rows import RowStore
from reme.jsontypes import JSONObject

log = logging.getLogger(__name__)


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
        *,
        context: float,
    ) -> None:
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
        self.queue = EmbeddingQueue()
        self.rows = RowStore()
        self.mix = NeighbourMix(self.context, self.rows) if self.context else None  # 0: own vector only
        self.breaker = CircuitBreaker()
        self._seen: tuple[ChangeMark, int] | None = None  # (catalog mark, cache version) last followed
        self._by_path: dict[str, list[str]] = {}  # each catalogued file's chunk ids, as last followed
        self.last_error: str | None = None
        self.embedded = 0  # vectors this process computed (figures, tests)

    # state ---------------------------------------------------------------------------------------

    def cache(self) -> VectorCache:
        """The cache for the embedder's stamp (loading the model the first time)."""
        with self._lock:
            if self._cache is None:
                self._cache = VectorCache(self.db_path, self.embedder.stamp)
                self.queue.failed = self._cache.failed()
                self.rows.start(self._cache.stamp.dimension)
            return self._cache

    def close(self) -> None:
        """Close after the batch being embedded (if any) is stored."""
        with self._embed_lock, self._lock:
            if self._cache is not None:
                self._cache.close()

    def refresh(self) -> None:
        """Follow the catalog: drop gone chunks, pick up new ones (cached vector, else queued)."""
        cache = self.cache()
        with self._lock:
            seen = (self.catalog.change_mark(), cache.version())
            if seen == self._seen:
                return
            reread = self._follow_catalog(seen[0])
            known = self.rows.row_of.keys() | self.queue.chunk_ids()
            keys: set[str] = set()
            for chunk in self.catalog.chunks_by_id([c for c in reread if c not in known]).values():
                text = embedding_text(chunk)
                waiting = Waiting(embedding_key(text), text, chunk.path)
                self.queue.add(chunk.chunk_id, waiting)
                keys.add(waiting.key)
            if self._seen is None:
                keys = set(self.queue.waiting_keys())
            elif seen[1] != self._seen[1]:  # another process wrote: adopt what it stored
                elsewhere = cache.written_since(self._seen[1])
                keys |= (
                    set(self.queue.waiting_keys())
                    if elsewhere is None
                    else elsewhere & self.queue.waiting_keys()
                )
                self.queue.failed = cache.failed()
            self._adopt(cache, keys)
            self._seen = seen

    def _follow_catalog(self, mark: ChangeMark) -> set[str]:
        """Drop the rows, queued chunks and links of chunks the catalog no longer has, take the new
        links; the chunk ids re-read. Only the files written since the last look when the catalog's
        change log covers them, so a write costs the next search its own files, not every chunk."""
        last = None if self._seen is None else self._seen[0]
        changed = None if last is None else set() if last == mark else self.catalog.changed_paths(last)
        if changed is None:
            order = self.catalog.chunk_order()
            replaced: list[str] | None = None
            candidates: Iterable[str] = [*self.rows.row_of, *self.queue.chunk_ids()]
            self._by_path = {}
        elif changed:
            order = self.catalog.chunk_order(changed)
            replaced = [chunk_id for path in changed for chunk_id in self._by_path.pop(path, ())]
            candidates = replaced
        else:
            return set()
        ids = {chunk_id for chunk_id, _ in order}
        for chunk_id, path in order:
            self._by_path.setdefault(path, []).append(chunk_id)
        if self.mix is not None:
            self.mix.follow(order, replaced)
        for chunk_id in [c for c in candidates if c not in ids]:
            if chunk_id in self.rows.row_of:
                row = self.rows.drop(chunk_id)
                if self.mix is not None:
                    self.mix.freed(row)
            elif chunk_id in self.queue:
                self.queue.remove(chunk_id)
        return ids

    def _adopt(self, cache: VectorCache, keys: Iterable[str]) -> None:
        """Give the queued chunks of these keys their row where their vector is cached (by any process)."""
        wanted = [key for key in keys if key in self.queue.waiting_keys()]
        if wanted:
            self._place(cache.get(wanted))

    def _place(self, vectors: dict[str, np.ndarray]) -> None:
        """Give every queued chunk whose text is among `vectors` its row (only those keys' chunks)."""
        for key, vector in vectors.items():
            for chunk_id, path in self.queue.take(key):
                self.rows.add(chunk_id, path, key, vector)
                if self.mix is not None:
                    self.mix.placed(chunk_id)

    # embedding -----------------------------------------------------------------------------------

    def pending(self) -> int:
        """Chunks of the catalog still waiting for a vector (after following the catalog); chunks
        whose text the model rejected are not waiting: see `failed()`."""
        self.refresh()
        with self._lock:
            return self.queue.waiting()

    def failed(self) -> int:
        """Chunks whose text the model rejected (keyword-only until the text or the model changes)."""
        self.refresh()
        with self._lock:
            return self.queue.failed_chunks()

    def embed_batch(self, isolate: bool = False) -> int:
        """Embed and store the next batch of pending chunks; how many were embedded (0: none pending).

        The model runs outside the index lock, so searches go on meanwhile. Texts the model
        rejects are marked failed (counted, logged once, skipped from then on) and the others are
        stored; the count includes them. Any other error is raised (transient: the caller retries
        later) and counted against the batch's texts: once one has failed `ISOLATE_AFTER` times, or
        when `isolate`, the batch is bisected (`embed_isolating`) so a text the embedder always fails
        on is marked failed and no longer holds up the rest; what it embedded before an outage is kept.
        """
        with self._embed_lock:
            self.refresh()
            with self._lock:
                batch = self.queue.next_batch(self.batch_size)
                strikes = {key: self.queue.strikes.get(key, 0) for key in batch}
                isolate = isolate or self.queue.struck(batch)
            if not batch:
                return 0
            items, dimension = list(batch.items()), self.cache().stamp.dimension
            try:
                if isolate:
                    done = embed_isolating(self.embedder, items, dimension, strikes)
                else:
                    done = Embedded(*embed_bisecting(self.embedder, items, dimension))
            except Exception as exc:
                done = Embedded(failures=Counter(list(batch)), outage=exc)
            self._store(done, batch)
            if done.outage is not None:
                self.last_error = f"{type(done.outage).__name__}: {done.outage}"
                raise done.outage
            self.last_error = None
            return len(done.stored) + len(done.rejected)

    def _store(self, done: Embedded, batch: dict[str, str]) -> None:
        """Store what a batch gave (vectors, failed texts, logged once each) and count the failures
        of the texts still waiting; give their chunks rows."""
        with self._lock:
            self.queue.strike(done.failures)
        if not (done.stored or done.rejected):
            return
        version = self.cache().put(done.stored, done.rejected)
        self.embedded += len(done.stored)
        for key, error in done.rejected:
            log.warning(
                "vectors: the embedder rejected a chunk text (%d characters, key %s): %s; "
                "it is found by keywords only until it changes",
                len(batch[key]),
                key[:12],
                error,
            )
        with self._lock:
            self.queue.failed.update(done.rejected)
            self._place(dict(done.stored))
            if self._seen is not None and version == self._seen[1] + 1:  # no other writer meanwhile
                self._seen = (self._seen[0], version)

    def embed_all(
        self, progress: Progress | None = None, should_stop: Callable[[], bool] | None = None
    ) -> int:
        """Embed until nothing is pending (or `should_stop()`); `progress(done, total)` after each batch."""
        total = self.pending()
        done, logged = 0, 0
        if total:
            log.info("vectors: embedding %s chunk(s)", f"{total:,}")
        while not (should_stop and should_stop()):
            try:
                count = self.embed_batch()
            except Exception:  # no later retry here: tell a text that always fails from an outage now
                count = self.embed_batch(isolate=True)
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
        """Why queries skip the vector branch now (a query failed a short while ago), or None."""
        return self.breaker.open_reason()

    def search(self, query: str, limit: int, filters: SearchFilters) -> list[tuple[str, float]]:
        """The `limit` embedded chunks closest to `query` (cosine) among those the filters admit.

        Behind the circuit breaker: after a failure (endpoint down or slow) the next queries for a
        while raise at once, without a request, and the search answers from keywords."""
        with self.breaker.guarding():
            query_vector = self._query_vector(query)
            self.refresh()
        with self._lock:
            admitted = self.rows.admitted(filters)
            if not admitted.any() or limit < 1:
                return []
            scores = self.rows.scores(query_vector)
            if self.mix is not None:
                scores = self.mix.mixed(scores)
            # a NaN score would scramble the order of every other row (not `&=`: a view of the rows)
            admitted = admitted & np.isfinite(scores)
            admitted_count = int(admitted.sum())
            if not admitted_count:
                return []
            scores[~admitted] = -np.inf
            take = min(limit, admitted_count)
            top = (
                np.argpartition(-scores, take - 1)[:take] if take < len(scores) else np.flatnonzero(admitted)
            )
            ranked = [(self.rows.chunk_at[int(row)], float(scores[row])) for row in top]
        return sorted(ranked, key=lambda item: (-item[1], item[0]))

    def _query_vector(self, query: str) -> np.ndarray:
        """The query's vector; a ValueError (which opens the breaker) when it has the wrong size or
        NaN or infinite values, as a broken model gives: it would rank the rows at random."""
        vector = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
        dimension = self.cache().stamp.dimension
        if vector.shape != (dimension,) or not np.isfinite(vector).all():
            raise ValueError(
                f"the embedder returned a query vector of shape {vector.shape} (dimension {dimension} "
                "expected) or with NaN or infinite values"
            )
        return vector

    # upkeep --------------------------------------------------------------------------------------

    def prune(self, slack: int = 1000) -> int:
        """Drop cached vectors no chunk of the catalog uses any more (edited or deleted text), once
        there are more than `slack` of them; how many were dropped. A text that comes back is
        simply embedded again."""
        self.refresh()
        with self._lock:
            live = set(self.rows.key_of.values()) | set(self.queue.waiting_keys())
            cache = self.cache()
            if cache.count() - len(live) <= slack:
                return 0
            return cache.keep_only(live)

    def figures(self) -> JSONObject:
        """What `status`/`health_check` report: vectors, pending, model."""
        stamp = self.cache().stamp
        pending = self.pending()
        with self._lock:
            return {
                "vectors": len(self.rows),
                "vectors_pending": pending,
                "vectors_failed": self.queue.failed_chunks(),
                "vectors_failed_examples": self.queue.failed_examples(),
                "model": stamp.to_dict(),
                "vector_bytes": self.cache().size_bytes(),
                "last_error": self.last_error,
            }

"""The embedding queue of the vector index (docs/spec.md §5.2): the catalog's chunks still without a
vector, grouped by the cache key of their text, and how a batch of them is embedded.

A text that repeats (the same line in many files) is embedded once for all its chunks. A text the
model rejects (`EmbeddingRejected`) is found by bisecting its batch and marked failed (per stamp):
it is skipped, keyword-only, until its chunk changes or the model does; every other text goes on
being embedded. Any other error is transient: the batch is retried later. Not thread-safe on its
own: `VectorIndex` guards it with its lock.
"""

from __future__ import annotations

from collections.abc import KeysView, Sequence
from dataclasses import dataclass

import numpy as np

from reme.index.embedding import Embedder, EmbeddingRejected


@dataclass(frozen=True)
class Waiting:
    """A chunk waiting for its vector: the cache key and text to embed, and its file."""

    key: str
    text: str
    path: str


class EmbeddingQueue:
    """Chunk id -> what to embed for it; the keys the model rejected (-> why) are skipped."""

    def __init__(self) -> None:
        self._waiting: dict[str, Waiting] = {}
        self._by_key: dict[str, set[str]] = {}  # cache key -> waiting chunk ids with that text
        self.failed: dict[str, str] = {}  # keys the model rejected -> why (skipped until they change)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._waiting

    def chunk_ids(self) -> KeysView[str]:
        return self._waiting.keys()

    def waiting_keys(self) -> KeysView[str]:
        """The cache keys some waiting chunk needs."""
        return self._by_key.keys()

    def add(self, chunk_id: str, waiting: Waiting) -> None:
        self._waiting[chunk_id] = waiting
        self._by_key.setdefault(waiting.key, set()).add(chunk_id)

    def remove(self, chunk_id: str) -> None:
        waiting = self._waiting.pop(chunk_id)
        ids = self._by_key[waiting.key]
        ids.discard(chunk_id)
        if not ids:
            del self._by_key[waiting.key]

    def take(self, key: str) -> list[tuple[str, str]]:
        """The (chunk id, path) of every chunk waiting for this key, in id order, out of the queue."""
        taken = [(chunk_id, self._waiting[chunk_id].path) for chunk_id in sorted(self._by_key.get(key, ()))]
        for chunk_id, _ in taken:
            self.remove(chunk_id)
        return taken

    def next_batch(self, size: int) -> dict[str, str]:
        """Up to `size` distinct texts to embed next (key -> text), rejected ones skipped."""
        batch: dict[str, str] = {}
        for key, ids in self._by_key.items():
            if key not in self.failed:
                batch[key] = self._waiting[next(iter(ids))].text
                if len(batch) >= size:
                    break
        return batch

    def waiting(self) -> int:
        """Chunks still to embed (not counting those whose text the model rejected)."""
        return len(self._waiting) - self.failed_chunks()

    def failed_chunks(self) -> int:
        """Chunks whose text the model rejected."""
        return sum(len(self._by_key[key]) for key in self.failed if key in self._by_key)


def embed_bisecting(
    embedder: Embedder, items: Sequence[tuple[str, str]], dimension: int
) -> tuple[list[tuple[str, np.ndarray]], list[tuple[str, str]]]:
    """Embed `items` (key, text): the (key, vector) pairs, and the (key, error) of each text the
    model rejects alone, found by halving a rejected batch down to single texts, or gives a vector
    with NaN or infinite values for. Other errors propagate."""
    stored: list[tuple[str, np.ndarray]] = []
    rejected: list[tuple[str, str]] = []

    def embed(part: Sequence[tuple[str, str]]) -> None:
        texts = [text for _, text in part]
        try:
            vectors = embedder.embed_passages(texts)
        except EmbeddingRejected as exc:
            if len(part) == 1:
                rejected.append((part[0][0], exc.message[:300]))
                return
            middle = len(part) // 2
            embed(part[:middle])
            embed(part[middle:])
            return
        if vectors.shape != (len(texts), dimension):
            raise ValueError(
                f"the embedder returned shape {vectors.shape} for {len(texts)} text(s) of dimension {dimension}"
            )
        finite = np.isfinite(vectors).all(axis=1)
        for (key, _), vector, ok in zip(part, vectors, finite, strict=True):
            if ok:
                stored.append((key, vector))
            else:  # it would score NaN against every query and scramble the ranking of the others
                rejected.append((key, "the embedder returned NaN or infinite values for this text"))

    embed(items)
    return stored, rejected

"""The embedding queue of the vector index (docs/spec.md §5.2): the catalog's chunks still without a
vector, grouped by the cache key of their text, and how a batch of them is embedded.

A text that repeats (the same line in many files) is embedded once for all its chunks. A text the
model rejects (`EmbeddingRejected`) is found by bisecting its batch and marked failed (per stamp):
it is skipped, keyword-only, until its chunk changes or the model does; every other text goes on
being embedded. Any other error is taken as transient and the batch is retried later, but a text
can fail the same way every time with another error (a NaN vector, an HTTP 500 for an over-long
input), which would hold up every text after it for good. So once a batch has failed
`ISOLATE_AFTER` times it is bisected too (`embed_isolating`), and a text that keeps failing alone
while the embedder still embeds a control text is marked failed like a rejected one. An outage
fails the control text as well and marks nothing. Not thread-safe on its own: `VectorIndex`
guards it with its lock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, KeysView, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from reme.index.embedding import Embedder, EmbeddingRejected
from reme.jsontypes import JSONValue

ISOLATE_AFTER = 3  # failed requests holding a text before its batch is bisected and it may be marked failed
CONTROL_TEXT = "reme embedding check"  # embedded to tell an outage from a text the embedder fails on
FAILED_EXAMPLES = 5  # failed texts named in the figures (path and error)


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
        self.strikes: dict[str, int] = {}  # key -> failed requests that held it (this process)

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
            self.strikes.pop(waiting.key, None)

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

    def failed_examples(self, limit: int = FAILED_EXAMPLES) -> list[JSONValue]:
        """`{path, error}` of up to `limit` waiting texts marked failed, so a user can find and fix them."""
        found: list[JSONValue] = []
        for key, error in self.failed.items():
            if len(found) >= limit:
                break
            if key in self._by_key:
                found.append({"path": self._waiting[min(self._by_key[key])].path, "error": error})
        return found

    def strike(self, failures: Mapping[str, int]) -> None:
        """Count failed requests against the keys still waiting."""
        for key, count in failures.items():
            if key in self._by_key:
                self.strikes[key] = self.strikes.get(key, 0) + count

    def struck(self, keys: Iterable[str]) -> bool:
        """Whether one of these keys has failed `ISOLATE_AFTER` times: its batch is bisected."""
        return any(self.strikes.get(key, 0) >= ISOLATE_AFTER for key in keys)


@dataclass
class Embedded:
    """What embedding a batch gave: vectors, texts marked failed (-> why), failed requests per key,
    and the error of an outage (the control text failed too: nothing was marked for it)."""

    stored: list[tuple[str, np.ndarray]] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    outage: Exception | None = None


def embed_bisecting(
    embedder: Embedder, items: Sequence[tuple[str, str]], dimension: int
) -> tuple[list[tuple[str, np.ndarray]], list[tuple[str, str]]]:
    """Embed `items` (key, text): the (key, vector) pairs, and the (key, error) of each text the
    model rejects alone, found by halving a rejected batch down to single texts, or gives a vector
    with NaN or infinite values for. Other errors propagate."""
    done = Embedded()
    _embed_parts(embedder, items, dimension, done, None)
    return done.stored, done.rejected


def embed_isolating(
    embedder: Embedder, items: Sequence[tuple[str, str]], dimension: int, strikes: Mapping[str, int]
) -> Embedded:
    """`embed_bisecting` for a batch that keeps failing: any error halves it too, and a text that
    fails alone until it has failed `ISOLATE_AFTER` times in all (`strikes`: earlier failures) is
    marked failed, but only while the embedder embeds `CONTROL_TEXT` before and after: when that
    fails too the endpoint is down (`outage`), not the text, and nothing is marked."""
    done = Embedded()
    try:
        _control(embedder, dimension)
    except Exception as exc:
        done.outage = exc
        return done
    suspects = _embed_parts(embedder, items, dimension, done, strikes)
    if suspects:
        try:
            _control(embedder, dimension)
        except Exception as exc:  # down since: the texts' failures may be the outage's
            done.outage = exc
            return done
        done.rejected += [
            (
                key,
                f"failed {strikes.get(key, 0) + done.failures[key]} times, the last alone while other "
                f"text embeds: {error}"[:300],
            )
            for key, error in suspects
        ]
    return done


def _embed_parts(
    embedder: Embedder,
    items: Sequence[tuple[str, str]],
    dimension: int,
    done: Embedded,
    strikes: Mapping[str, int] | None,
) -> list[tuple[str, str]]:
    """Embed `items` into `done`, halving a part the model rejects down to single texts. Isolating
    (`strikes` given) any failing part is halved too and its keys' failures counted; the (key, error)
    of each text that failed alone until `ISOLATE_AFTER` failures in all. Otherwise other errors
    propagate."""
    suspects: list[tuple[str, str]] = []

    def embed(part: Sequence[tuple[str, str]]) -> None:
        try:
            _keep(done, part, _vectors(embedder, [text for _, text in part], dimension))
            return
        except EmbeddingRejected as exc:
            if len(part) == 1:
                done.rejected.append((part[0][0], exc.message[:300]))
                return
        except Exception as exc:
            if strikes is None:
                raise
            done.failures.update(key for key, _ in part)
            if len(part) == 1:
                key = part[0][0]
                if strikes.get(key, 0) + done.failures[key] < ISOLATE_AFTER:
                    embed(part)  # once more alone: one failure may be chance
                else:
                    suspects.append((key, f"{type(exc).__name__}: {exc}"))
                return
        middle = len(part) // 2
        embed(part[:middle])
        embed(part[middle:])

    embed(items)
    return suspects


def _control(embedder: Embedder, dimension: int) -> None:
    """Raise unless the embedder gives `CONTROL_TEXT` a sound vector: it fails every text (down,
    misconfigured), so a text's own failure cannot be told apart now."""
    if not np.isfinite(_vectors(embedder, [CONTROL_TEXT], dimension)).all():
        raise ValueError("the embedder returned NaN or infinite values for a control text")


def _vectors(embedder: Embedder, texts: list[str], dimension: int) -> np.ndarray:
    """The embedder's vectors for `texts`; a ValueError when they have the wrong shape."""
    vectors = embedder.embed_passages(texts)
    if vectors.shape != (len(texts), dimension):
        raise ValueError(
            f"the embedder returned shape {vectors.shape} for {len(texts)} text(s) of dimension {dimension}"
        )
    return vectors


def _keep(done: Embedded, part: Sequence[tuple[str, str]], vectors: np.ndarray) -> None:
    """Store the finite vectors; a text given NaN or infinite values is marked failed instead."""
    finite = np.isfinite(vectors).all(axis=1)
    for (key, _), vector, ok in zip(part, vectors, finite, strict=True):
        if ok:
            done.stored.append((key, vector))
        else:  # it would score NaN against every query and scramble the ranking of the others
            done.rejected.append((key, "the embedder returned NaN or infinite values for this text"))

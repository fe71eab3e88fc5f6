"""The vector index's parts on their own (docs/spec.md §5.2): the circuit breaker, the embedding
queue with its bisecting batch, the row store."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

np = pytest.importorskip("numpy", reason="vectors need numpy (pip install 'reme[vectors]')")

from reme.index.embedding import EmbeddingRejected, Stamp  # noqa: E402
from reme.index.search import SearchFilters, VectorsUnavailable  # noqa: E402
from reme.index.vectors.breaker import CircuitBreaker  # noqa: E402
from reme.index.vectors.queue import EmbeddingQueue, Waiting, embed_bisecting  # noqa: E402
from reme.index.vectors.rows import RowStore  # noqa: E402


def test_the_breaker_opens_after_a_failure_and_closes_after_the_cooldown() -> None:
    breaker = CircuitBreaker(cooldown_s=60)
    with pytest.raises(RuntimeError), breaker.guarding():
        raise RuntimeError("endpoint down")
    assert breaker.open_reason() == "RuntimeError: endpoint down"
    paused = "paused after a failure: RuntimeError: endpoint down"
    with pytest.raises(VectorsUnavailable, match=paused), breaker.guarding():
        raise AssertionError("an open breaker must not run the call")
    breaker.cooldown_s = 0  # the pause is over: the next call goes through and a success closes it
    with breaker.guarding():
        pass
    assert breaker.open_reason() is None


def test_the_queue_embeds_a_repeated_text_once_and_skips_rejected_ones() -> None:
    queue = EmbeddingQueue()
    queue.add("a1", Waiting("k1", "same text", "x.md"))
    queue.add("a2", Waiting("k1", "same text", "y.md"))
    queue.add("b", Waiting("k2", "other", "x.md"))
    queue.add("c", Waiting("k3", "bad", "z.md"))
    queue.failed["k3"] = "too long"
    assert queue.next_batch(10) == {"k1": "same text", "k2": "other"}
    assert queue.next_batch(1) == {"k1": "same text"}
    assert (queue.waiting(), queue.failed_chunks()) == (3, 1)
    assert queue.take("k1") == [("a1", "x.md"), ("a2", "y.md")]
    assert "a1" not in queue and set(queue.waiting_keys()) == {"k2", "k3"}
    queue.remove("c")
    assert (queue.waiting(), queue.failed_chunks()) == (1, 0)


class Picky:
    """An embedder that rejects any batch holding a text with "bad" in it."""

    stamp = Stamp("test", "picky", 2)

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        if any("bad" in text for text in texts):
            raise EmbeddingRejected("input rejected")
        return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones(2, dtype=np.float32) / np.sqrt(2)


def test_a_rejected_batch_is_bisected_down_to_the_text_that_fails_alone() -> None:
    picky = Picky()
    items = [(f"k{n}", "bad" if n == 2 else f"fine {n}") for n in range(4)]
    stored, rejected = embed_bisecting(picky, items, dimension=2)
    assert [key for key, _ in stored] == ["k0", "k1", "k3"]
    assert rejected == [("k2", "input rejected")]
    assert picky.calls == [4, 2, 2, 1, 1]  # all, the good half, the bad half, then its two texts alone


def test_a_wrong_shape_is_an_error_not_a_stored_vector() -> None:
    with pytest.raises(ValueError, match="shape"):
        embed_bisecting(Picky(), [("k", "fine")], dimension=3)


def test_rows_are_reused_and_filters_judge_each_row_s_path() -> None:
    rows = RowStore()
    rows.start(2)
    first = rows.add("c1", "daily/a.md", "k1", np.array([1.0, 0.0], dtype=np.float32))
    rows.add("c2", "digest/b.md", "k2", np.array([0.0, 1.0], dtype=np.float32))
    assert rows.capacity >= 2 and len(rows) == 2
    assert rows.drop("c1") == first and rows.free == [first]
    assert rows.add("c3", "digest/c.md", "k3", np.array([0.6, 0.8], dtype=np.float32)) == first  # reused
    assert rows.chunk_at[first] == "c3" and rows.key_of == {"c2": "k2", "c3": "k3"}
    admitted = rows.admitted(SearchFilters(path_prefix="digest/"))
    assert admitted.tolist() == [True, True]
    assert rows.admitted(SearchFilters(path_prefix="daily/")).tolist() == [False, False]
    scores = rows.scores(np.array([1.0, 0.0], dtype=np.float32))
    assert scores.tolist() == pytest.approx([0.6, 0.0])

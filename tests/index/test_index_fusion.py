"""Hybrid search seam: the two fusions (relative score, RRF), and a vector branch plugged into the searcher."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme.app.components.index import INDEX_SETTINGS
from reme.index.search import Searcher, SearchFilters, fuse, reciprocal_rank_fusion, relative_score_fusion


def test_reciprocal_rank_fusion_weights_and_ranks() -> None:
    fused = dict(reciprocal_rank_fusion([("a", 9.0), ("b", 5.0), ("c", 1.0)], [("c", 0.9), ("a", 0.8)], 0.7))
    assert fused["a"] == pytest.approx(0.3 / 61 + 0.7 / 62)
    assert fused["b"] == pytest.approx(0.3 / 62)
    assert fused["c"] == pytest.approx(0.3 / 63 + 0.7 / 61)
    assert list(fused) == ["c", "a", "b"]
    only_keyword = reciprocal_rank_fusion([("x", 1.0), ("y", 0.5)], [], 0.7)
    assert [cid for cid, _ in only_keyword] == ["x", "y"]


def test_relative_score_fusion_scales_each_branch_to_zero_one_then_weighs() -> None:
    """Keyword scores against 0 (score / best), vector scores min–max over their candidates."""
    keyword = [("a", 8.0), ("b", 4.0), ("c", 2.0)]  # scaled 1, 0.5, 0.25
    vector = [("c", 0.9), ("d", 0.7), ("a", 0.5)]  # scaled 1, 0.5, 0
    fused = dict(relative_score_fusion(keyword, vector, 0.4))
    assert fused["a"] == pytest.approx(0.6 * 1 + 0.4 * 0)
    assert fused["b"] == pytest.approx(0.6 * 0.5)  # missing from the vector branch: 0 there
    assert fused["c"] == pytest.approx(0.6 * 0.25 + 0.4 * 1)
    assert fused["d"] == pytest.approx(0.4 * 0.5)  # missing from the keyword branch
    assert list(fused) == ["a", "c", "b", "d"]


def test_a_close_second_keyword_hit_keeps_its_credit() -> None:
    """Two rare-word hits a hair apart, and vectors that know neither: the second keyword hit must
    not sink below chunks only the vectors found (min–max would give it 0)."""
    keyword = [("a", 5.45), ("b", 5.18)]
    vector = [(f"v{i}", 0.9 - i / 100) for i in range(15)]
    order = [chunk_id for chunk_id, _ in relative_score_fusion(keyword, vector, 0.4)]
    assert order[:3] == ["a", "b", "v0"]


def test_relative_score_fusion_lets_a_sure_branch_win_where_ranks_cannot() -> None:
    """The vectors put `x` far ahead of everything; keywords barely prefer `y` (and three others)
    to `x`: the sure branch decides. RRF, seeing only ranks, keeps the keyword order at the same weight."""
    keyword = [
        ("y", 10.0),
        ("k0", 9.99),
        ("k1", 9.98),
        ("k2", 9.97),
        ("x", 9.96),
        *[(f"k{i}", i - 2.0) for i in (7, 6, 5, 4, 3)],
    ]
    vector = [("x", 0.95), *[(f"v{i}", 0.40 - i / 100) for i in range(8)], ("y", 0.3)]
    assert relative_score_fusion(keyword, vector, 0.3)[0][0] == "x"
    assert reciprocal_rank_fusion(keyword, vector, 0.3)[0][0] == "y"


def test_relative_score_fusion_of_equal_scores_single_candidates_and_broken_scores() -> None:
    """No spread to scale: a positive score counts fully, a zero one (e.g. a zero query vector)
    not at all; NaN and infinite scores (a broken embedder) are dropped, never sorted."""
    fused = dict(relative_score_fusion([("a", 2.0)], [("b", 0.5), ("c", 0.5)], 0.5))
    assert fused == {"a": 0.5, "b": 0.5, "c": 0.5}
    assert list(fused) == ["a", "b", "c"]  # ties in chunk-id order, deterministic
    flat = dict(relative_score_fusion([("a", 2.0), ("b", 1.0)], [("c", 0.0), ("d", 0.0)], 0.5))
    assert flat == {"a": 0.5, "b": 0.25, "c": 0.0, "d": 0.0}
    nan, inf = float("nan"), float("inf")
    broken = relative_score_fusion(
        [("a", 2.0), ("b", 1.0)], [("x", nan), ("y", inf), ("z", 0.8), ("a", 0.4)], 0.5
    )
    assert [chunk_id for chunk_id, _ in broken] == ["a", "z", "b"]
    assert broken[0][1] == pytest.approx(0.5)  # a: best keyword hit, lowest vector one
    assert broken[1][1] == pytest.approx(0.5) and broken[2][1] == pytest.approx(0.25)


def test_one_branch_keeps_its_own_scores_in_either_fusion() -> None:
    for fusion in ("relative_score", "rrf"):
        assert fuse([("a", 3.0), ("b", 1.0)], [], 0.4, fusion) == [("a", 3.0), ("b", 1.0)]
        assert fuse([], [("v", 0.8)], 0.4, fusion) == [("v", 0.8)]
        assert fuse([], [], 0.4, fusion) == []


class TrigramVectors:
    """A tiny real similarity search over the catalog's chunk text (character trigram overlap)."""

    def __init__(self, store) -> None:
        self.store = store

    @staticmethod
    def grams(text: str) -> set[str]:
        text = text.lower()
        return {text[i : i + 3] for i in range(len(text) - 2)}

    def search(self, query: str, limit: int, filters: SearchFilters) -> list[tuple[str, float]]:
        wanted = self.grams(query)
        rows = self.store.query("SELECT chunk_id, path, text FROM chunks")
        scored = [
            (cid, len(wanted & self.grams(text)) / len(wanted))
            for cid, path, text in rows
            if not filters.path_prefix or path.startswith(filters.path_prefix)
        ]
        return sorted((s for s in scored if s[1] > 0), key=lambda s: -s[1])[:limit]


async def test_vector_branch_is_fused_with_keywords(app) -> None:
    root: Path = app.workspace_dir
    for path, text in {
        "digest/a.md": "kiwifruit orchard in spring",
        "digest/b.md": "kiwi fruit harvest",
        "digest/c.md": "wind turbines offshore",
    }.items():
        (root / path).write_text(text)
    index = app.component("index").service
    index.ensure_ready()
    keyword_only = await index.searcher.search("kiwifruit", limit=5)
    assert [hit.path for hit in keyword_only] == ["digest/a.md"]

    vectors = TrigramVectors(index.store)
    branches = {"candidate_multiplier": 3, "vector": vectors, "vector_weight": 0.7}
    rrf = Searcher(index.store, index.keyword, index.graph, fusion="rrf", **branches)
    hits = await rrf.search("kiwifruit", limit=5)
    assert [hit.path for hit in hits] == ["digest/a.md", "digest/b.md"]  # b found by the vector branch only
    assert hits[0].score == pytest.approx(0.3 / 61 + 0.7 / 61)
    assert hits[1].score == pytest.approx(0.7 / 62)

    default = INDEX_SETTINGS.defaults()["fusion"]
    hybrid = Searcher(index.store, index.keyword, index.graph, fusion=default, **branches)
    assert hybrid.fusion == "relative_score"  # the default
    hits = await hybrid.search("kiwifruit", limit=5)
    assert [hit.path for hit in hits] == ["digest/a.md", "digest/b.md"]
    assert hits[0].score == pytest.approx(0.3 * 1 + 0.7 * 1)  # top of both branches
    assert hits[1].score == pytest.approx(0.0)  # the vector branch's last (min–max): 0, still listed

    vector_only = await rrf.search("turbinesque", limit=5, filters=SearchFilters("digest/c"))
    assert [hit.path for hit in vector_only] == ["digest/c.md"]  # one branch answered: its own scores
    grams = TrigramVectors.grams
    assert vector_only[0].score == pytest.approx(
        len(grams("turbinesque") & grams("wind turbines offshore")) / 9
    )


async def test_unknown_fusion_is_refused_at_start(tmp_path: Path) -> None:
    from reme import ReMe
    from reme.app.config import ConfigError

    with pytest.raises(ConfigError, match="fusion must be one of relative_score, rrf, got 'rank'"):
        async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **{"components.index.fusion": "rank"}):
            pass


@pytest.mark.parametrize("weight", [-0.1, 1.5])
async def test_vector_weight_outside_zero_to_one_is_refused(tmp_path: Path, weight: float) -> None:
    """A weight above 1 would turn the keyword ranking's votes negative: refuse it at start."""
    from reme import ReMe
    from reme.app.config import ConfigError

    with pytest.raises(ConfigError, match="vector_weight must be between 0 and 1"):
        async with ReMe(
            workspace_dir=tmp_path / "ws", timezone="UTC", **{"components.index.vector_weight": weight}
        ):
            pass

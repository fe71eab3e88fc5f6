"""Hybrid search seam: reciprocal rank fusion, and a vector branch plugged into the searcher."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme.index.search import Searcher, SearchFilters, reciprocal_rank_fusion


def test_reciprocal_rank_fusion_weights_and_ranks() -> None:
    fused = dict(reciprocal_rank_fusion([("a", 9.0), ("b", 5.0), ("c", 1.0)], [("c", 0.9), ("a", 0.8)], 0.7))
    assert fused["a"] == pytest.approx(0.3 / 61 + 0.7 / 62)
    assert fused["b"] == pytest.approx(0.3 / 62)
    assert fused["c"] == pytest.approx(0.3 / 63 + 0.7 / 61)
    assert list(fused) == ["c", "a", "b"]
    only_keyword = reciprocal_rank_fusion([("x", 1.0), ("y", 0.5)], [], 0.7)
    assert [cid for cid, _ in only_keyword] == ["x", "y"]


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

    hybrid = Searcher(index.store, index.keyword, index.graph, vector=TrigramVectors(index.store), vector_weight=0.7)
    hits = await hybrid.search("kiwifruit", limit=5)
    assert [hit.path for hit in hits] == ["digest/a.md", "digest/b.md"]  # b found by the vector branch only
    assert hits[0].score == pytest.approx(0.3 / 61 + 0.7 / 61)
    assert hits[1].score == pytest.approx(0.7 / 62)

    vector_only = await hybrid.search("turbinesque", limit=5, filters=SearchFilters("digest/c"))
    assert [hit.path for hit in vector_only] == ["digest/c.md"]  # one branch answered: its own scores
    grams = TrigramVectors.grams
    assert vector_only[0].score == pytest.approx(
        len(grams("turbinesque") & grams("wind turbines offshore")) / 9
    )


@pytest.mark.parametrize("weight", [-0.1, 1.5])
async def test_vector_weight_outside_zero_to_one_is_refused(tmp_path: Path, weight: float) -> None:
    """A weight above 1 would turn the keyword ranking's votes negative: refuse it at start."""
    from reme import ReMe
    from reme.app.application import ComponentError

    with pytest.raises(ComponentError, match="vector_weight must be between 0 and 1"):
        async with ReMe(
            workspace_dir=tmp_path / "ws", timezone="UTC", **{"components.index.vector_weight": weight}
        ):
            pass

"""Each branch's own score beside the fused one (Studio's search shows both), only when both branches answered."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.index.test_index_fusion import TrigramVectors

from reme.index.search import Searcher


async def test_fused_hits_carry_each_branchs_score_and_keyword_hits_none(app) -> None:
    root: Path = app.workspace_dir
    for path, text in {
        "digest/a.md": "kiwifruit orchard in spring",
        "digest/b.md": "kiwi fruit harvest",
    }.items():
        (root / path).write_text(text)
    index = app.component("index").service
    index.ensure_ready()
    keyword_only = await index.searcher.search("kiwifruit", limit=5)
    assert keyword_only[0].branch_scores == {} and "branch_scores" not in keyword_only[0].to_dict()

    hybrid = Searcher(
        index.store,
        index.keyword,
        index.graph,
        candidate_multiplier=3,
        fusion="relative_score",
        vector=TrigramVectors(index.store),
        vector_weight=0.7,
    )
    a, b = await hybrid.search("kiwifruit", limit=5)
    keyword_score = keyword_only[0].score
    assert a.path == "digest/a.md" and a.branch_scores == {
        "keyword": pytest.approx(keyword_score),
        "vector": 1.0,
    }
    grams = TrigramVectors.grams
    assert b.branch_scores == {
        "vector": pytest.approx(len(grams("kiwifruit") & grams("kiwi fruit harvest")) / 7)
    }
    assert a.to_dict()["branch_scores"] == a.branch_scores

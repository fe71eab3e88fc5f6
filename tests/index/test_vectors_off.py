"""Embeddings off (the default) = keyword search exactly as before vectors existed: the results of
a fixed bilingual workspace match those recorded with main's code (`data/keyword_golden.json`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.index.keyword_fixture import results

GOLDEN = json.loads((Path(__file__).parent / "data" / "keyword_golden.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "overrides",
    [{}, {"components.index.vector": None}],
    ids=["default-config", "no-vector-component"],
)
async def test_keyword_results_are_unchanged_with_vectors_off(tmp_path: Path, overrides: dict) -> None:
    assert await results(tmp_path / "ws", **overrides) == GOLDEN


async def test_vectors_on_with_nothing_embedded_yet_give_the_keyword_results(tmp_path: Path) -> None:
    """Until the first batch is embedded, the vector branch is empty: one branch → its own scores."""
    pytest.importorskip("numpy", reason="vectors need numpy (pip install 'reme[vectors]')")
    from tests.embedders import hashed_words_backend, vector_overrides

    with hashed_words_backend():
        assert await results(tmp_path / "ws", **vector_overrides()) == GOLDEN

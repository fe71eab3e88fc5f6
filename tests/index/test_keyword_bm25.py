"""KeywordIndex: Lucene BM25 scores, filters, incremental updates, persistence, fingerprinted folder."""

from __future__ import annotations

import math
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from reme.index.keyword import MAX_QUERY_TERMS, KeywordIndex, path_date
from reme.index.tokenizer import Tokenizer

K1, B = 1.2, 0.75


def _int4(value: int) -> int:
    """Lucene SmallFloat.longToInt4: 4 significant bits, 3 stored, plus the exponent."""
    bits = value.bit_length()
    if bits < 4:
        return value
    shift = bits - 4
    return ((value >> shift) & 0x07) | ((shift + 1) << 3)


def _from_int4(encoded: int) -> int:
    bits, shift = encoded & 0x07, (encoded >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_FREE = 255 - _int4(2**31 - 1)  # lengths below this are stored exactly


def lucene_length(length: int) -> int:
    """A document length as Lucene stores it: intToByte4 then byte4ToInt."""
    if length < _FREE:
        return length
    return _FREE + _from_int4(_int4(length - _FREE))


def reference_scores(docs: dict[str, list[str]], query: list[str]) -> dict[str, float]:
    """Lucene (>= 8) BM25 computed from scratch over the same tokens."""
    n = len(docs)
    avgdl = sum(len(terms) for terms in docs.values()) / n
    df = Counter(term for terms in docs.values() for term in set(terms))
    scores: dict[str, float] = {}
    for doc_id, terms in docs.items():
        tf = Counter(terms)
        dl = lucene_length(len(terms))
        total = 0.0
        for term in query:
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                total += idf * tf[term] / (tf[term] + K1 * (1 - B + B * dl / avgdl))
        if total:
            scores[doc_id] = total
    return scores


CORPUS = {
    "daily/2026-06-01/solar.md": {
        "c1": "Solar panels convert sunlight into electricity on the roof.",
        "c2": "The battery stores solar energy for the night; the battery is large.",
    },
    "daily/2026-06-03.md": {"c3": "Wind turbines and solar farms feed the grid."},
    "digest/energy/solar.md": {
        "c4": "Photovoltaic solar cells: silicon, perovskite, efficiency records and costs. " * 12 + "tandem",
        "c5": "太阳能电池板把阳光转换成电能，储能电池在夜间供电。",
    },
    "digest/energy/wind.md": {"c6": "Offshore wind turbines with large blades."},
}


@pytest.fixture
def tokenizer() -> Tokenizer:
    return Tokenizer()


@pytest.fixture
def index(tmp_path: Path, tokenizer: Tokenizer) -> KeywordIndex:
    keyword = KeywordIndex(tmp_path / "kw", tokenizer)
    for path, chunks in CORPUS.items():
        keyword.upsert(path, chunks.items())
    keyword.commit()
    return keyword


def _tokens(tokenizer: Tokenizer) -> dict[str, list[str]]:
    return {cid: tokenizer.tokenize(text) for chunks in CORPUS.values() for cid, text in chunks.items()}


@pytest.mark.parametrize(
    "query",
    ["solar battery", "battery battery night", "wind turbines solar grid", "太阳能 电池", "perovskite"],
)
def test_scores_equal_lucene_bm25(index: KeywordIndex, tokenizer: Tokenizer, query: str) -> None:
    expected = reference_scores(_tokens(tokenizer), tokenizer.tokenize(query))
    got = dict(index.search(query, 50))
    assert expected, "the query must match something"
    assert got.keys() == expected.keys()
    for chunk_id, score in expected.items():
        assert got[chunk_id] == pytest.approx(score, rel=1e-5)
    assert [cid for cid, _ in index.search(query, 50)] == sorted(got, key=lambda c: -got[c])


def test_long_document_length_is_quantised_like_lucene(tokenizer: Tokenizer) -> None:
    length = len(tokenizer.tokenize(CORPUS["digest/energy/solar.md"]["c4"]))
    assert length > _FREE and lucene_length(length) != length  # the long chunk exercises the lossy norm


def test_path_prefix_and_dates(index: KeywordIndex) -> None:
    def ids(**kwargs: object) -> set[str]:
        return {cid for cid, _ in index.search("solar wind", 50, **kwargs)}

    assert ids(path_prefix="digest/") == {"c4", "c6"}
    assert ids(path_prefix="daily/2026-06-0") == {"c1", "c2", "c3"}
    assert ids(path_prefix="nothing/") == set()
    assert ids(start_date=date(2026, 6, 2)) == {"c3", "c4", "c6"}  # undated digest kept
    assert ids(start_date=date(2026, 6, 2), strict_date_filter=True) == {"c3"}
    assert ids(end_date=date(2026, 6, 1), strict_date_filter=True) == {"c1", "c2"}
    assert ids(start_date=date(2026, 6, 1), end_date=date(2026, 6, 1), strict_date_filter=True) == {
        "c1",
        "c2",
    }


def test_prefix_with_regex_characters_is_literal(tmp_path: Path, tokenizer: Tokenizer) -> None:
    keyword = KeywordIndex(tmp_path, tokenizer)
    keyword.upsert("digest/a+b (1)/x.md", [("x", "kiwi fruit")])
    keyword.upsert("digest/aab 1/y.md", [("y", "kiwi bird")])
    keyword.commit()
    assert [cid for cid, _ in keyword.search("kiwi", 5, path_prefix="digest/a+b (1)/")] == ["x"]


def test_upsert_replaces_and_delete_removes(index: KeywordIndex) -> None:
    index.upsert("daily/2026-06-03.md", [("c3b", "geothermal heat pumps")])
    index.commit()
    assert {cid for cid, _ in index.search("wind geothermal", 50)} == {"c3b", "c6"}
    index.delete_path("digest/energy/wind.md")
    index.commit()
    assert [cid for cid, _ in index.search("wind geothermal", 50)] == ["c3b"]
    assert index.num_docs == 5


def test_uncommitted_writes_are_invisible_and_rollback_drops_them(index: KeywordIndex) -> None:
    index.upsert("digest/new.md", [("n1", "hydrogen electrolysis")])
    assert index.search("hydrogen", 5) == []
    index.rollback()
    index.commit()
    assert index.search("hydrogen", 5) == []


def test_persisted_and_seen_by_a_second_reader(
    index: KeywordIndex, tmp_path: Path, tokenizer: Tokenizer
) -> None:
    reopened = KeywordIndex(tmp_path / "kw", tokenizer)
    assert reopened.num_docs == 6
    index.upsert("digest/new.md", [("n1", "hydrogen electrolysis")])
    index.commit()
    assert reopened.search("hydrogen", 5)[0][0] == "n1"  # reloads after another writer's commit


def test_folder_name_carries_the_tokenizer_fingerprint(tmp_path: Path) -> None:
    plain = KeywordIndex(tmp_path, Tokenizer(stemmer=None))
    stemmed = KeywordIndex(tmp_path, Tokenizer())
    assert plain.path != stemmed.path
    assert plain.path.name.startswith(f"keyword-{Tokenizer(stemmer=None).fingerprint}-")
    assert stemmed.stale_siblings() == [plain.path]
    stemmed.remove_stale_siblings()
    assert not plain.path.exists() and stemmed.path.exists()


def test_chunks_without_terms_are_not_documents(tmp_path: Path, tokenizer: Tokenizer) -> None:
    keyword = KeywordIndex(tmp_path, tokenizer)
    assert keyword.upsert("digest/x.md", [("a", "the of and"), ("b", "kiwi")]) == 1
    keyword.commit()
    assert keyword.num_docs == 1


def test_empty_query_and_zero_limit(index: KeywordIndex) -> None:
    assert index.search("the of", 5) == []
    assert index.search("solar", 0) == []


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("daily/2026-06-01.md", 20260601),
        ("daily/2026-06-01/card.md", 20260601),
        ("resource/2026-02-30/x.md", 0),
        ("digest/wiki/x.md", 0),
        ("notes.md", 0),
    ],
)
def test_path_date(path: str, expected: int) -> None:
    assert path_date(path) == expected


def test_repeated_terms_are_one_boosted_clause_and_distinct_terms_are_capped(index: KeywordIndex) -> None:
    (battery,) = index.tokenizer.tokenize("battery")
    once = dict(index.search_terms([battery, "night"], 50))
    many = dict(index.search_terms([battery] * 100_000 + ["night"], 50))
    assert many.keys() == once.keys()
    assert many["c2"] == pytest.approx(once["c2"] + 99_999 * dict(index.search_terms([battery], 50))["c2"])
    filler = [f"filler{i}" for i in range(MAX_QUERY_TERMS)]
    assert index.search_terms([*filler, "solar"], 50) == []  # past the cap: not a clause
    assert index.search_terms(["solar", *filler], 50) != []

"""Adversarial review of chunking, search, traverse and the vector branch (docs/spec.md §4, §5): each
test was written against a defect found by feeding the index what real notes and models can hold."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from tests.embedders import HashedWords, hashed_words_backend, vector_overrides

from reme import ReMe
from reme.index.chunk_markdown import MAX_TITLE_CHARS
from reme.index.chunking import DEFAULT_CHUNK_CHARS, chunk_text
from reme.index.embedding import embedding_key, embedding_text
from reme.index.search import SearchFilters
from reme.index.titles import title_text
from reme.index.vectors import VectorCache

QUIET = {"scheduler.cron": False}


@pytest.fixture
async def quiet_app(tmp_path: Path) -> AsyncIterator[ReMe]:
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **QUIET) as started:
        yield started


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# §4: a split table repeats its header. A header wider than the budget left one character per part:
# a 5 KB table became 3,720 chunks (2.4 MB of text, each "[Part i/171]" holding one letter).


def test_a_table_with_a_header_wider_than_the_budget_is_not_cut_into_letters() -> None:
    columns = 30
    header = "| " + " | ".join(f"column_name_{i}" for i in range(columns)) + " |"
    rows = ["| " + " | ".join(f"v{r}_{i}" for i in range(columns)) + " |" for r in range(20)]
    text = "# T\n\n" + "\n".join([header, "|" + "---|" * columns, *rows]) + "\n"

    chunks = chunk_text("notes/wide.md", text)

    assert len(chunks) <= 2 * len(text) // DEFAULT_CHUNK_CHARS + 2
    assert sum(len(chunk.text) for chunk in chunks) <= 2 * len(text)
    assert any("v19_29" in chunk.text for chunk in chunks)  # every row still indexed


def test_a_fence_with_a_long_info_string_keeps_its_code_lines_whole() -> None:
    code = "\n".join(f"print('line {i}')" for i in range(100))
    text = "# F\n\n```" + "python " * 60 + "\n" + code + "\n```\n"

    chunks = chunk_text("notes/fence.md", text)

    assert sum(len(chunk.text) for chunk in chunks) <= 2 * len(text)
    assert any("print('line 99')" in chunk.text for chunk in chunks)


# §4: chunks follow the budget. Headings with no body between them were gathered into one chunk:
# an outline of 20,000 headings was one 300 KB chunk, so a hit on any heading was the whole file.


async def test_an_outline_of_bare_headings_is_found_at_the_heading_searched(quiet_app: ReMe) -> None:
    outline = "".join(f"## topic {i} keyword{i}\n" for i in range(2000))
    _write(quiet_app.workspace_dir, "notes/outline.md", outline)
    assert (await quiet_app.run("reindex")).success

    answer = await quiet_app.run("search", query="keyword1234")

    assert answer.success, answer.answer
    hit = answer.metadata["results"][0]
    assert hit["path"] == "notes/outline.md"
    assert "keyword1234" in hit["text"] and len(hit["text"]) <= DEFAULT_CHUNK_CHARS
    assert hit["end_line"] - hit["start_line"] < 30


def test_bare_headings_within_the_budget_still_ride_with_the_next_chunk() -> None:
    chunks = chunk_text("notes/d.md", "# 2023-05-08\n\n## Session 1\n\nwe talked about tea\n")
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 5)]


# §4: every chunk carries its heading path. A heading that runs for pages was copied into every chunk
# under it: a 147 KB note gave 16 MB of search text and 16 MB of heading paths in the catalog.


def test_a_page_long_heading_is_cut_into_parts_and_shortened_in_the_heading_path() -> None:
    heading = "# " + " ".join(f"w{i}" for i in range(20_000))
    text = heading + "\n\n" + "".join(f"body line {i}\n\n" for i in range(3000))

    chunks = chunk_text("notes/long-heading.md", text)

    assert all(len(part) <= MAX_TITLE_CHARS for chunk in chunks for part in chunk.heading_path)
    assert all(len(chunk.text) <= DEFAULT_CHUNK_CHARS for chunk in chunks)
    assert sum(len(chunk.search_text) for chunk in chunks) <= 10 * len(text)
    assert any("w19999" in chunk.text for chunk in chunks)  # the heading's words are still indexed


def test_a_page_long_name_is_not_the_title_of_every_chunk() -> None:
    name = " ".join(f"n{i}" for i in range(50_000))
    assert len(title_text("notes/big.md", name, "# Big\n")) <= 1000


# §5.2: vectors are compared by cosine. A model that gave NaN for one text had it cached; its NaN
# score broke the sort of the vector ranking, so the best match came third.


class _NaNForPoison(HashedWords):
    """The test embedder, but NaN for any passage that says `poison` (a broken local model)."""

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        vectors = super().embed_passages(texts)
        for row, text in enumerate(texts):
            if "poison" in text:
                vectors[row] = np.nan
        return vectors


NOTES = {
    "digest/ivy.md": "# Ivy\n\npoison ivy grows by the fence\n",
    "digest/garden.md": "# Garden\n\ntomatoes in the garden need water\n",
    "digest/tools.md": "# Tools\n\nthe garden shed holds the rake\n",
    "digest/car.md": "# Car\n\nbrake pads replaced\n",
}


async def test_a_text_the_model_gives_nan_for_is_failed_and_the_rest_rank_in_order(tmp_path: Path) -> None:
    for rel, text in NOTES.items():
        _write(tmp_path, rel, text)
    with hashed_words_backend():
        async with ReMe(workspace_dir=tmp_path, timezone="UTC", **QUIET, **vector_overrides()) as app:
            index = app.component("index").service
            index.vectors.embedder = _NaNForPoison()
            index.ensure_ready()
            index.embed_pending()

            ranked = index.vectors.search("tomatoes garden", 10, SearchFilters())
            scores = [score for _, score in ranked]

            assert all(np.isfinite(scores)) and scores == sorted(scores, reverse=True)
            assert index.vectors.failed() == 1  # the ivy chunk: found by keywords only
            answer = await app.run("search", query="poison ivy")
            assert answer.success and answer.metadata["results"][0]["path"] == "digest/ivy.md"


async def test_a_nan_vector_left_in_the_cache_is_embedded_again(tmp_path: Path) -> None:
    _write(tmp_path, "digest/garden.md", NOTES["digest/garden.md"])
    with hashed_words_backend():
        async with ReMe(workspace_dir=tmp_path, timezone="UTC", **QUIET, **vector_overrides()) as app:
            index = app.component("index").service
            index.ensure_ready()
            index.embed_pending()
            cache: VectorCache = index.vectors.cache()
            keys = [embedding_key(embedding_text(row)) for row in index.store.chunks_of("digest/garden.md")]
            nan = np.full(cache.stamp.dimension, np.nan, dtype=np.float32)
            cache.put([(key, nan) for key in keys])  # as an older reme stored what a broken model gave
        async with ReMe(workspace_dir=tmp_path, timezone="UTC", **QUIET, **vector_overrides()) as app:
            index = app.component("index").service
            index.ensure_ready()

            assert index.embed_pending() == len(keys)
            assert set(index.vectors.cache().get(keys)) == set(keys)


async def test_a_query_vector_with_nan_leaves_keyword_results_and_says_why(tmp_path: Path) -> None:
    for rel, text in NOTES.items():
        _write(tmp_path, rel, text)
    with hashed_words_backend():
        async with ReMe(workspace_dir=tmp_path, timezone="UTC", **QUIET, **vector_overrides()) as app:
            index = app.component("index").service
            index.ensure_ready()
            index.embed_pending()
            broken = _NaNForPoison()
            broken.embed_query = lambda text: np.full(broken.dimension, np.nan, dtype=np.float32)  # type: ignore[method-assign]
            index.vectors.embedder = broken

            answer = await app.run("search", query="tomatoes")

            assert answer.success
            assert [hit["path"] for hit in answer.metadata["results"]] == ["digest/garden.md"]
            assert "NaN" in answer.metadata["vector_error"]


# §5.5: traverse walks at most `max_nodes` nodes. It stopped there without a word, so an agent took a
# cut neighbourhood for the whole one.


async def test_traverse_says_when_it_stopped_at_the_node_limit(quiet_app: ReMe) -> None:
    links = "\n".join(f"[[notes/missing-{i}]]" for i in range(1100))
    _write(quiet_app.workspace_dir, "notes/hub.md", f"# Hub\n\n{links}\n")
    assert (await quiet_app.run("reindex")).success

    answer = await quiet_app.run("traverse", path="notes/hub.md", depth=1)

    assert answer.success
    assert len(answer.metadata["nodes"]) == 1000
    assert "stopped at the limit of 1000 nodes" in answer.answer
    small = await quiet_app.run("traverse", path="notes/hub.md", depth=0)
    assert "stopped" not in small.answer

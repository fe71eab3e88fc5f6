"""Hybrid search with vectors (docs/spec.md §5.2, 5.3): the vector cache, its stamps, background embedding,
fusion in search and node_search, filters on the vector branch, what health and status say."""

from __future__ import annotations

import asyncio
import shutil
from datetime import date
from pathlib import Path

import pytest

pytest.importorskip("numpy", reason="vectors need numpy (pip install 'reme[vectors]')")

from tests.embedders import HashedWordsComponent, hashed_words_backend, vector_overrides  # noqa: E402

from reme import ReMe  # noqa: E402
from reme.index.search import RRF_K, SearchFilters  # noqa: E402
from reme.index.vectors import VectorCache  # noqa: E402

NOTES = {
    "digest/hobbies.md": "# Hobbies\n\nPainting calms me down after a long week.\n",
    "digest/car.md": "# Car\n\nThe garage replaced the brake pads on the old car.\n",
    "digest/garden.md": "# Garden\n\nTomatoes need water every morning in July.\n",
    "daily/2026-06-01/notes.md": "# Monday\n\nBooked the dentist for a cleaning.\n",
    "daily/2026-06-03/notes.md": "# Wednesday\n\nBooked a table at the dentist's favourite cafe.\n",
}


@pytest.fixture(autouse=True)
def backend():
    with hashed_words_backend():
        yield


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def vector_app(workspace: Path, **extra) -> ReMe:
    return ReMe(workspace_dir=workspace, timezone="UTC", **vector_overrides(**extra))


def embedded_index(app: ReMe):
    """The app's index, caught up with the files and with every chunk embedded."""
    index = app.component("index").service
    index.ensure_ready()
    index.embed_pending()
    return index


def chunk_count(app: ReMe) -> int:
    index = app.component("index").service
    index.ensure_ready()
    return index.store.counts()["chunks"]


def embedder():
    assert HashedWordsComponent.last is not None
    return HashedWordsComponent.last


async def test_search_fuses_what_is_embedded_and_says_what_is_pending(workspace_dir: Path) -> None:
    write(workspace_dir, NOTES)
    async with vector_app(workspace_dir) as app:
        before = await app.run("search", query="how do I relax")
        assert before.success
        chunks = chunk_count(app)  # the notes and the digest's _buckets.md
        assert before.metadata["vectors_pending"] == chunks
        assert "not embedded yet" in before.answer
        assert before.metadata["results"] == []  # no shared word, nothing embedded: keyword alone

        index = app.component("index").service
        assert index.embed_pending() == chunks
        after = await app.run("search", query="how do I relax", limit=2)
        assert after.metadata["vectors_pending"] == 0
        assert "not embedded yet" not in after.answer
        assert after.metadata["results"][0]["path"] == "digest/hobbies.md"  # a paraphrase, found by meaning
        assert 0 < after.metadata["results"][0]["score"] <= 1  # one branch answered: its own (cosine) score


async def test_both_branches_are_fused_with_reciprocal_rank_fusion(workspace_dir: Path) -> None:
    write(workspace_dir, NOTES)
    overrides = {"components.index.vector_weight": 0.6, "components.index.fusion": "rrf"}
    async with vector_app(workspace_dir, **overrides) as app:
        index = embedded_index(app)
        keyword = index.searcher._keyword("dentist cleaning", 15, SearchFilters())
        vector = index.vectors.search("dentist cleaning", 15, SearchFilters())
        hits = await index.searcher.search("dentist cleaning", limit=3, expand_links=False)
        ranks_k = {cid: rank for rank, (cid, _) in enumerate(keyword, 1)}
        ranks_v = {cid: rank for rank, (cid, _) in enumerate(vector, 1)}
        chunks = index.store.chunks_by_id(list(ranks_k | ranks_v))
        top = next(cid for cid, row in chunks.items() if row.path == hits[0].path)
        expected = 0.4 / (RRF_K + ranks_k[top]) + 0.6 / (RRF_K + ranks_v[top])
        assert hits[0].score == pytest.approx(expected)
        assert hits[0].path == "daily/2026-06-01/notes.md"  # first in both rankings


async def test_by_default_both_branches_are_fused_by_relative_score(workspace_dir: Path) -> None:
    """The configured default (LoCoMo dev choice): keyword scores / best, vector scores min–max,
    weighed 0.5 / 0.5 — every returned score is the one computed from the two branches."""
    write(workspace_dir, NOTES)
    async with vector_app(workspace_dir, **{"components.index.vector_weight": 0.3}) as app:
        index = embedded_index(app)
        assert index.searcher.fusion == "relative_score"
        keyword = index.searcher._keyword("dentist cleaning", 15, SearchFilters())
        vector = index.vectors.search("dentist cleaning", 15, SearchFilters())
        hits = await index.searcher.search("dentist cleaning", limit=3, expand_links=False)

        best_k = max(s for _, s in keyword)
        low_v, high_v = min(s for _, s in vector), max(s for _, s in vector)
        k = {cid: s / best_k for cid, s in keyword}
        v = {cid: (s - low_v) / (high_v - low_v) for cid, s in vector}
        expected = sorted((0.7 * k.get(cid, 0.0) + 0.3 * v.get(cid, 0.0) for cid in k | v), reverse=True)
        assert [h.score for h in hits] == pytest.approx(expected[:3])
        assert hits[0].path == "daily/2026-06-01/notes.md" and hits[0].score == pytest.approx(1.0)
        assert len({h.score for h in hits}) == 3  # distinct, so a swapped weight would show


async def test_the_default_weight_is_the_held_out_choice(tmp_path: Path) -> None:
    """relative_score, 0.4, multiplier 2: chosen by leave-one-out over LoCoMo and LongMemEval."""
    async with vector_app(tmp_path / "ws") as app:
        searcher = app.component("index").service.searcher
        assert (searcher.fusion, searcher.vector_weight, searcher.candidate_multiplier) == (
            "relative_score",
            0.4,
            2,
        )


async def test_unchanged_chunks_are_never_embedded_again(workspace_dir: Path) -> None:
    write(workspace_dir, NOTES)
    async with vector_app(workspace_dir) as app:
        index = embedded_index(app)
        first = sum(embedder().embedded.values())

        (workspace_dir / "digest/car.md").write_text(NOTES["digest/car.md"] + "\nNew tyres in the spring.\n")
        shutil.move(
            workspace_dir / "digest/garden.md", workspace_dir / "digest/plants.md"
        )  # same text, new path
        index.sync_paths(["digest"])
        assert index.vectors.pending() == 1  # only the edited chunk
        index.embed_pending()
        assert sum(embedder().embedded.values()) == first + 1

        reindexed = await app.run("reindex")  # the catalog is rebuilt, the vector cache is kept
        assert reindexed.metadata["embedded"] == 0
        assert "0 embedded now" in reindexed.answer
        assert sum(embedder().embedded.values()) == first + 1

    async with vector_app(workspace_dir) as app:  # and across a restart
        index = app.component("index").service
        index.ensure_ready()
        assert index.vectors.pending() == 0
        assert index.embed_pending() == 0
        assert sum(embedder().embedded.values()) == 0


async def test_vectors_of_text_no_chunk_has_any_more_are_pruned(workspace_dir: Path) -> None:
    write(workspace_dir, NOTES)
    async with vector_app(workspace_dir) as app:
        index = embedded_index(app)
        chunks = chunk_count(app)
        (workspace_dir / "digest/car.md").write_text("# Car\n\nSold the old car in June.\n")
        (workspace_dir / "digest/garden.md").unlink()
        index.sync_paths(["digest"])
        index.embed_pending()
        cache = index.vectors.cache()
        assert cache.count() == chunks + 1  # the old car text and the garden are still cached ...
        assert index.vectors.prune() == 0  # ... within the default slack
        reindexed = await app.run("reindex")
        assert reindexed.metadata["vectors_pruned"] == 2
        assert cache.count() == chunk_count(app) == chunks - 1
        hits = await app.run("search", query="who sold a car")
        assert hits.metadata["results"][0]["path"] == "digest/car.md"  # vectors left are still right


async def test_a_model_change_re_embeds_and_never_mixes_spaces(workspace_dir: Path) -> None:
    write(workspace_dir, NOTES)
    async with vector_app(workspace_dir) as app:
        index = embedded_index(app)
        assert index.stats()["vectors"]["model"] == {
            "backend": "hashed_words",
            "model": "hashed-v1",
            "dimension": 512,
        }

    overrides = {"components.embedding.model": "hashed-v2", "components.embedding.dimension": 256}
    async with vector_app(workspace_dir, **overrides) as app:
        index = app.component("index").service
        chunks = chunk_count(app)
        assert index.vectors.pending() == chunks  # none of the old vectors is of this space
        answer = await app.run("search", query="how do I relax")
        assert answer.metadata["results"] == []  # the 512-d vectors are not used for a 256-d query
        index.embed_pending()
        assert sum(embedder().embedded.values()) == chunks
        figures = index.stats()["vectors"]
        assert figures["model"] == {"backend": "hashed_words", "model": "hashed-v2", "dimension": 256}
        assert figures["vectors"] == chunks

    cache = VectorCache(workspace_dir / "metadata" / "vectors.sqlite3", embedder().stamp)
    try:
        assert cache.count() == chunks  # the old space was dropped when the new one was first written
        rows = cache.query("SELECT vector FROM vectors")
        assert {len(blob) for (blob,) in rows} == {256 * 4}
    finally:
        cache.close()


async def test_the_vector_branch_honours_path_and_date_filters(workspace_dir: Path) -> None:
    write(workspace_dir, NOTES)
    async with vector_app(workspace_dir) as app:
        index = embedded_index(app)

        def paths(filters: SearchFilters) -> set[str]:
            found = index.vectors.search("dentist", 50, filters)
            rows = index.store.chunks_by_id([cid for cid, _ in found])
            return {row.path for row in rows.values()}

        assert paths(SearchFilters(path_prefix="digest/")) == {
            "digest/hobbies.md",
            "digest/car.md",
            "digest/garden.md",
            "digest/_buckets.md",
        }
        june_3 = paths(SearchFilters(start_date=date(2026, 6, 2)))
        assert "daily/2026-06-03/notes.md" in june_3 and "daily/2026-06-01/notes.md" not in june_3
        assert "digest/car.md" in june_3  # undated files are kept ...
        strict = paths(SearchFilters(start_date=date(2026, 6, 2), strict_date_filter=True))
        assert strict == {"daily/2026-06-03/notes.md"}  # ... unless the filter is strict
        assert paths(SearchFilters(path_prefix="nowhere/")) == set()

        hits = await app.run("search", query="relax", path_prefix="daily/")
        assert {hit["path"] for hit in hits.metadata["results"]} <= {
            "daily/2026-06-01/notes.md",
            "daily/2026-06-03/notes.md",
        }


async def test_node_search_uses_the_same_hybrid(workspace_dir: Path) -> None:
    write(workspace_dir, NOTES)
    async with vector_app(workspace_dir) as app:
        embedded_index(app)
        nodes = await app.run("node_search", query="ways to unwind", limit=2)
        assert nodes.metadata["results"][0]["path"] == "digest/hobbies.md"
        assert all(not node["path"].startswith("daily/") for node in nodes.metadata["results"])


async def test_the_index_loop_embeds_in_the_background(workspace_dir: Path) -> None:
    write(workspace_dir, NOTES)
    async with vector_app(
        workspace_dir,
        **{"jobs.index_update_loop.steps": [{"backend": "index_update_loop", "embed_idle_s": 0.05}]},
    ) as app:
        loop = asyncio.create_task(app.run("index_update_loop"))
        try:
            index = app.component("index").service
            for _ in range(400):  # the loop embeds batch by batch (4 per batch here)
                await asyncio.sleep(0.05)
                if index.ready and index.vectors.pending() == 0:
                    break
            assert index.vectors.pending() == 0
            answer = await app.run("search", query="how do I relax")
            assert answer.metadata["results"][0]["path"] == "digest/hobbies.md"

            write(workspace_dir, {"digest/music.md": "# Music\n\nPiano practice helps me unwind.\n"})
            for _ in range(400):
                await asyncio.sleep(0.05)
                if index.store.paths_under("digest/music.md") and index.vectors.pending() == 0:
                    break
            found = await app.run("node_search", query="piano")
            assert found.metadata["results"][0]["path"] == "digest/music.md"
        finally:
            loop.cancel()


async def test_a_failing_embedder_leaves_keyword_search_working(workspace_dir: Path) -> None:
    write(workspace_dir, NOTES)
    async with vector_app(workspace_dir) as app:
        index = app.component("index").service
        index.ensure_ready()
        embedder().fail_next = 1
        with pytest.raises(ConnectionError):
            index.vectors.embed_batch()
        health = await app.run("health_check")
        entry = health.metadata["components"]["index"]
        assert entry["status"] == "degraded" and "embedding failed" in entry["reason"]
        answer = await app.run("search", query="dentist")
        assert answer.success and answer.metadata["results"][0]["path"].startswith("daily/")
        assert answer.metadata["vectors_pending"] == chunk_count(app)

        index.embed_pending()  # the endpoint is back
        health = await app.run("health_check")
        assert health.metadata["components"]["index"]["status"] == "ok"


async def test_health_and_status_report_vectors_pending_and_model(workspace_dir: Path) -> None:
    write(workspace_dir, NOTES)
    async with vector_app(workspace_dir) as app:
        index = app.component("index").service
        index.ensure_ready()
        status = await app.run("status")
        vectors = status.metadata["components"]["index"]["vectors"]
        assert vectors["vectors"] == 0 and vectors["vectors_pending"] == chunk_count(app)
        assert vectors["model"]["model"] == "hashed-v1"
        index.embed_pending()
        health = await app.run("health_check")
        assert health.metadata["components"]["index"]["vectors"]["vectors"] == chunk_count(app)
        assert health.metadata["components"]["embedding"]["status"] == "ok"


async def test_vectors_off_gives_keyword_search_and_no_vector_figures(app) -> None:
    write(app.workspace_dir, NOTES)
    index = app.component("index").service
    assert index.vectors is None and "embedding" not in app.components
    answer = await app.run("search", query="how do I relax")
    assert answer.metadata["results"] == [] and "vectors_pending" not in answer.metadata
    assert "vectors" not in index.stats()


def test_what_is_embedded_for_a_chunk_and_its_key() -> None:
    from reme.index.embedding import MAX_EMBED_CHARS, embedding_key, embedding_text
    from reme.index.store import ChunkRow

    row = ChunkRow("c1", "daily/2026-06-01/a.md", 3, 4, ["2026-06-01", "Session 1"], "Painting calms me.")
    moved = ChunkRow("c2", "digest/a.md", 9, 10, ["Hobbies"], "Painting calms me.")
    assert embedding_text(row) == "Painting calms me."  # the text alone, no breadcrumbs
    assert embedding_key(embedding_text(row)) == embedding_key(embedding_text(moved))  # content, not place
    huge = ChunkRow("c3", "a.md", 1, 1, [], "x" * (3 * MAX_EMBED_CHARS))
    assert len(embedding_text(huge)) == MAX_EMBED_CHARS


async def test_another_process_s_writes_are_adopted_by_the_keys_it_wrote(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that sees another writer's batch looks up only the keys that batch stored (its
    write log), not every chunk still pending; without the log it falls back to all of them."""
    from reme.index.vectors import VectorIndex

    write(workspace_dir, {f"digest/n{i}.md": f"# N{i}\n\nnote {i} on topic{i}.\n" for i in range(12)})
    async with vector_app(workspace_dir) as app:
        index = app.component("index").service
        index.ensure_ready()
        chunks = index.store.counts()["chunks"]
        reader = VectorIndex(
            index.metadata_dir, index.store, embedder(), batch_size=4, context=index.vectors.context
        )
        assert reader.pending() == chunks == index.vectors.pending()  # both loaded (a full look-up each)
        asked: list[int] = []
        original = VectorCache.get
        monkeypatch.setattr(
            VectorCache, "get", lambda self, keys: asked.append(len(keys)) or original(self, keys)
        )
        assert index.vectors.embed_batch() == 4  # "another process" stores one batch
        assert reader.pending() == chunks - 4 and asked == [4]
        index.embed_pending()
        assert reader.pending() == 0 and reader.figures()["vectors"] == chunks
        assert sum(asked) == chunks  # each key looked up once, when it was written
        reader.close()


def _neighbour_file(first: str, last: str) -> str:
    return f"# Notes\n\n## One\n\n{first}\n\n## Two\n\nZebra lamp.\n\n## Three\n\n{last}\n"


NEIGHBOURS = {
    "digest/a.md": _neighbour_file("Zebra rides.", "Garden tomatoes."),  # a neighbour about zebras
    "digest/b.md": _neighbour_file("Brake pads.", "Dentist cleaning."),  # neighbours about nothing of it
}


def _middle_scores(index, filters: SearchFilters = SearchFilters()) -> dict[str, float]:
    """path -> vector score of the file's "Zebra lamp" chunk (the same text, so the same vector)."""
    ranked = index.vectors.search("zebra lamp", 50, filters)
    rows = index.store.chunks_by_id([cid for cid, _ in ranked])
    return {rows[cid].path: score for cid, score in ranked if "Zebra lamp" in rows[cid].text}


async def test_a_chunk_whose_neighbours_match_the_query_ranks_higher(workspace_dir: Path) -> None:
    write(workspace_dir, NEIGHBOURS)
    async with vector_app(workspace_dir) as app:
        index = embedded_index(app)
        assert index.vectors.context == 0.3  # the default
        scores = _middle_scores(index)
        assert scores["digest/a.md"] > scores["digest/b.md"]
        assert 0 < scores["digest/a.md"] <= 1  # still a cosine (of the normalised mixed vector)


async def test_vector_context_zero_ranks_by_each_chunk_s_own_vector(workspace_dir: Path) -> None:
    from tests.embedders import hashed_vector

    from reme.index.embedding import embedding_text

    write(workspace_dir, {**NEIGHBOURS, **NOTES})
    async with vector_app(workspace_dir, **{"components.index.vector_context": 0}) as app:
        index = embedded_index(app)
        for query in ("zebra lamp", "how do I relax", "dentist cleaning"):
            ranked = index.vectors.search(query, 100, SearchFilters())
            rows = index.store.chunks_by_id([cid for cid, _ in ranked])
            assert len(rows) == index.store.counts()["chunks"]
            q = hashed_vector(query, embedder().dimension)
            own = sorted(
                (
                    (cid, float(hashed_vector(embedding_text(row), embedder().dimension) @ q))
                    for cid, row in rows.items()
                ),
                key=lambda item: (-item[1], item[0]),
            )
            assert [cid for cid, _ in ranked] == [cid for cid, _ in own]
            assert [score for _, score in ranked] == pytest.approx([score for _, score in own], abs=1e-6)
        scores = _middle_scores(index)
        assert scores["digest/a.md"] == scores["digest/b.md"]  # neighbours play no part


async def test_editing_a_chunk_re_mixes_its_neighbours(workspace_dir: Path) -> None:
    write(workspace_dir, NEIGHBOURS)
    async with vector_app(workspace_dir) as app:
        index = embedded_index(app)
        before = _middle_scores(index)
        assert before["digest/a.md"] > before["digest/b.md"]
        # only a.md's first chunk changes (then only b.md's): the middle chunks' own text never does
        write(workspace_dir, {"digest/a.md": _neighbour_file("Brake pads.", "Garden tomatoes.")})
        index.sync_paths("digest/a.md")
        index.embed_pending()
        edited = _middle_scores(index)
        assert edited["digest/a.md"] < before["digest/a.md"]  # its neighbour no longer matches
        assert edited["digest/a.md"] == pytest.approx(before["digest/b.md"])  # like b.md's now
        write(workspace_dir, {"digest/b.md": _neighbour_file("Zebra rides.", "Dentist cleaning.")})
        index.sync_paths("digest/b.md")
        index.embed_pending()
        after = _middle_scores(index)
        assert after["digest/a.md"] < before["digest/a.md"]  # lost its matching neighbour
        assert after["digest/b.md"] == pytest.approx(before["digest/a.md"])  # gained it
        assert after["digest/b.md"] > after["digest/a.md"]


async def test_filters_judge_the_chunk_itself_with_neighbour_context(workspace_dir: Path) -> None:
    write(workspace_dir, NEIGHBOURS)
    async with vector_app(workspace_dir) as app:
        index = embedded_index(app)
        everything = _middle_scores(index)
        assert everything["digest/a.md"] > everything["digest/b.md"]  # mixed, as unfiltered
        only_b = SearchFilters(path_prefix="digest/b")
        ranked = index.vectors.search("zebra lamp", 50, only_b)
        rows = index.store.chunks_by_id([cid for cid, _ in ranked])
        assert ranked and {row.path for row in rows.values()} == {"digest/b.md"}
        assert _middle_scores(index, only_b) == {"digest/b.md": pytest.approx(everything["digest/b.md"])}

"""The `openai_embedding` backend against a real local OpenAI-compatible server (the fake one):
batching, retries on 429/5xx, clear errors, and hybrid search through the application."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("numpy", reason="vectors need numpy (pip install 'reme[vectors]')")

import numpy as np  # noqa: E402

from reme import ReMe  # noqa: E402
from reme.errors import ReMeError  # noqa: E402
from reme.index.search import SearchFilters  # noqa: E402
from reme.llm.embed_openai import OpenAIEmbedder  # noqa: E402
from reme.llm.testing.fake_openai import FakeOpenAI, hashed_words  # noqa: E402


def client(server: FakeOpenAI, **settings) -> OpenAIEmbedder:
    return OpenAIEmbedder(base_url=server.base_url, model="fake-embed", backoff_s=0.001, **settings)


def test_passages_are_sent_in_batches_and_normalised(fake_server: FakeOpenAI) -> None:
    embedder = client(fake_server, batch_size=3, api_key="sk-test")
    texts = [f"note {i} about solar panels" for i in range(7)]
    vectors = embedder.embed_passages(texts)
    assert vectors.shape == (7, 8) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    raw = np.asarray(hashed_words(texts[4], 8), dtype=np.float32)
    assert np.allclose(vectors[4], raw / np.linalg.norm(raw))
    # one probe for the dimension, then batches of 3, 3, 1 in order
    sizes = [len(body["input"]) for body in fake_server.embedding_requests]
    assert sizes == [1, 3, 3, 1]
    assert fake_server.embedding_requests[1]["model"] == "fake-embed"
    stamp = embedder.stamp.to_dict()
    assert stamp["backend"] == "openai" and stamp["dimension"] == 8
    assert re.fullmatch(r"fake-embed@[0-9a-f]{8}", stamp["model"])


def test_a_configured_dimension_needs_no_probe_and_prefixes_are_added(fake_server: FakeOpenAI) -> None:
    embedder = client(fake_server, dimension=8, query_prefix="query: ", passage_prefix="passage: ")
    embedder.embed_query("what calms her")
    embedder.embed_passages(["painting"])
    assert [body["input"] for body in fake_server.embedding_requests] == [
        ["query: what calms her"],
        ["passage: painting"],
    ]


def test_transient_errors_are_retried_and_then_reported(fake_server: FakeOpenAI) -> None:
    embedder = client(fake_server, dimension=8, max_retries=2)
    fake_server.embedding_faults = [{"fault": "http", "status": 429}, {"fault": "http", "status": 503}]
    assert embedder.embed_passages(["a", "b"]).shape == (2, 8)
    assert len(fake_server.embedding_requests) == 3

    fake_server.embedding_faults = [{"fault": "http", "status": 500}] * 3
    with pytest.raises(ReMeError, match="HTTP 500"):
        embedder.embed_passages(["c"])

    fake_server.embedding_faults = [{"fault": "http", "status": 401}]
    before = len(fake_server.embedding_requests)
    with pytest.raises(ReMeError, match="HTTP 401"):
        embedder.embed_passages(["d"])
    assert len(fake_server.embedding_requests) == before + 1  # not retried: a key problem does not heal


def test_a_dimension_mismatch_is_a_clear_error(fake_server: FakeOpenAI) -> None:
    embedder = client(fake_server, dimension=8)
    fake_server.embedding_faults = [{"fault": "dimension", "dimension": 4}]
    with pytest.raises(ReMeError, match="dimension 4, but components.embedding.dimension is 8"):
        embedder.embed_passages(["x"])


def test_an_unreachable_endpoint_says_so() -> None:
    embedder = OpenAIEmbedder(
        base_url="http://127.0.0.1:9/v1", model="m", dimension=8, max_retries=1, backoff_s=0.001, timeout=2
    )
    with pytest.raises(ReMeError, match="cannot reach the embeddings endpoint"):
        embedder.embed_query("anything")


async def test_hybrid_search_through_the_openai_backend(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    fake_server.embedding_dimension = 256
    root = tmp_path / "ws"
    (root / "digest").mkdir(parents=True)
    (root / "digest/solar.md").write_text("# Solar\n\nThe inverter of the roof panels failed.\n")
    (root / "digest/tea.md").write_text("# Tea\n\nGreen tea steeps for two minutes.\n")
    overrides = {
        "components.embedding.enabled": True,
        "components.embedding.backend": "openai_embedding",
        "components.embedding.base_url": fake_server.base_url,
        "components.embedding.model": "fake-embed",
        "components.embedding.api_key": "sk-secret-value",
    }
    async with ReMe(workspace_dir=root, timezone="UTC", **overrides) as app:
        index = app.component("index").service
        index.ensure_ready()
        assert index.embed_pending() == index.store.counts()["chunks"]
        vector_only = index.vectors.search("panels roof", 1, SearchFilters())
        assert index.store.chunks_by_id([vector_only[0][0]])[vector_only[0][0]].path == "digest/solar.md"
        answer = await app.run("search", query="steeps minutes")
        assert answer.metadata["results"][0]["path"] == "digest/tea.md"
        assert answer.metadata["vectors_pending"] == 0
        health = await app.run("health_check")
        assert health.metadata["components"]["embedding"]["model"] == "fake-embed"
        assert "sk-secret-value" not in str(health.metadata) and "sk-secret-value" not in health.answer
        config = await app.run("app_config")
        assert "sk-secret-value" not in config.answer and "sk-secret-value" not in str(config.metadata)

        fake_server.embedding_faults = [{"fault": "http", "status": 500}] * 10  # the endpoint goes down
        down = await app.run("search", query="steeps minutes")
        assert down.success and down.metadata["results"][0]["path"] == "digest/tea.md"  # keyword alone


async def test_openai_backend_without_a_model_refuses_to_start(tmp_path: Path) -> None:
    overrides = {"components.embedding.enabled": True, "components.embedding.backend": "openai_embedding"}
    with pytest.raises(Exception, match="model is required"):
        async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **overrides):
            pass


async def test_an_unknown_embedding_backend_is_a_config_error(tmp_path: Path) -> None:
    overrides = {"components.embedding.enabled": True, "components.embedding.backend": "no_such_model"}
    with pytest.raises(Exception, match="no_such_model"):
        async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **overrides):
            pass


def openai_overrides(server: FakeOpenAI, **extra: object) -> dict[str, object]:
    return {
        "components.embedding.enabled": True,
        "components.embedding.backend": "openai_embedding",
        "components.embedding.base_url": server.base_url,
        "components.embedding.model": "fake-embed",
        "components.embedding.batch_size": 4,
        **extra,
    }


def poisoned_workspace(root: Path, notes: int, poison: str, server: FakeOpenAI) -> Path:
    """`notes` digest nodes, the first holding `poison`, which the fake endpoint rejects with HTTP 400."""
    (root / "digest").mkdir(parents=True)
    for number in range(notes):
        body = poison if number == 0 else f"note {number} about topic{number}"
        (root / f"digest/n{number}.md").write_text(f"# N{number}\n\n{body}.\n")
    server.embedding_reject = {"POISON"}
    return root


async def test_a_text_the_model_rejects_is_bisected_out_and_the_rest_is_embedded(
    fake_server: FakeOpenAI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """HTTP 400 on one text: the batch is bisected, that text alone is marked failed (counted,
    logged once, never sent again) and every other chunk gets its vector."""
    root = poisoned_workspace(tmp_path / "ws", 10, "POISON text the model refuses", fake_server)
    async with ReMe(workspace_dir=root, timezone="UTC", **openai_overrides(fake_server)) as app:
        index = app.component("index").service
        index.ensure_ready()
        chunks = index.store.counts()["chunks"]
        with caplog.at_level("WARNING", logger="reme.index.vectors"):
            assert index.embed_pending() == chunks  # the rejected one counted, not raised
            sent = len(fake_server.embedding_requests)
            assert index.embed_pending() == 0  # nothing left: the failed text is not retried
        assert len(fake_server.embedding_requests) == sent
        figures = index.vector_figures()
        assert (figures["vectors"], figures["vectors_pending"], figures["vectors_failed"]) == (
            chunks - 1,
            0,
            1,
        )
        assert figures["last_error"] is None
        assert sum("rejected a chunk text" in r.getMessage() for r in caplog.records) == 1
        status = await app.run("health_check")
        assert status.metadata["components"]["index"]["vectors"]["vectors_failed"] == 1

        (root / "digest/n0.md").write_text("# N0\n\nnow an acceptable text.\n")  # the chunk changes
        index.indexer.sync_paths(["digest/n0.md"])
        assert index.embed_pending() == 1
        assert index.vector_figures()["vectors_failed"] == 0


async def test_a_transient_error_is_no_rejection(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "digest").mkdir(parents=True)
    (root / "digest/a.md").write_text("# A\n\nsome text.\n")
    overrides = openai_overrides(
        fake_server, **{"components.embedding.max_retries": 0, "components.embedding.dimension": 8}
    )
    async with ReMe(workspace_dir=root, timezone="UTC", **overrides) as app:
        index = app.component("index").service
        index.ensure_ready()
        fake_server.embedding_down = True
        with pytest.raises(ReMeError, match="HTTP 503"):
            index.embed_pending()
        assert index.vector_figures()["vectors_failed"] == 0
        fake_server.embedding_down = False
        assert index.embed_pending() == index.store.counts()["chunks"]


def two_notes(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "digest").mkdir(parents=True)
    (root / "digest/solar.md").write_text("# Solar\n\nThe inverter of the roof panels failed.\n")
    (root / "digest/tea.md").write_text("# Tea\n\nGreen tea steeps for two minutes.\n")
    return root


async def test_a_down_endpoint_costs_a_search_one_attempt_then_none(
    fake_server: FakeOpenAI, tmp_path: Path
) -> None:
    """Queries make one attempt (no retries, even for the dimension probe) and a failure opens a
    breaker: the next searches answer from keywords without a request and say vectors are off."""
    overrides = openai_overrides(fake_server, **{"components.embedding.backoff_s": 0.001})
    async with ReMe(workspace_dir=two_notes(tmp_path), timezone="UTC", **overrides) as app:
        app.component("index").service.ensure_ready()
        fake_server.embedding_down = True  # dimension null: the probe is the first request
        first = await app.run("search", query="steeps minutes")
        assert first.success and first.metadata["results"][0]["path"] == "digest/tea.md"
        assert len(fake_server.embedding_requests) == 1  # one attempt, not 1 + max_retries
        assert (
            "semantic search is unavailable" in first.answer and "HTTP 503" in first.metadata["vector_error"]
        )
        second = await app.run("node_search", query="steeps minutes")
        assert second.metadata["results"][0]["path"] == "digest/tea.md"
        assert len(fake_server.embedding_requests) == 1  # the breaker: no request at all
        assert "semantic search is unavailable" in second.answer

        fake_server.embedding_down = False
        index = app.component("index").service
        index.vectors.breaker.cooldown_s = 0  # the pause is over
        index.embed_pending()
        back = await app.run("search", query="steeps minutes")
        assert "vector_error" not in back.metadata and back.metadata["vectors_pending"] == 0


async def test_a_slow_endpoint_costs_a_query_one_short_attempt(
    fake_server: FakeOpenAI, tmp_path: Path
) -> None:
    overrides = openai_overrides(
        fake_server, **{"components.embedding.dimension": 8, "components.embedding.query_timeout": 0.2}
    )
    async with ReMe(workspace_dir=two_notes(tmp_path), timezone="UTC", **overrides) as app:
        index = app.component("index").service
        index.ensure_ready()
        index.embed_pending()
        sent = len(fake_server.embedding_requests)
        fake_server.embedding_faults = [{"fault": "slow", "seconds": 1.0}] * 5
        answer = await app.run("search", query="steeps minutes")
        assert answer.metadata["results"][0]["path"] == "digest/tea.md"
        assert len(fake_server.embedding_requests) == sent + 1  # timed out once, not retried
        assert "semantic search is unavailable" in answer.answer


def test_query_timeout_must_be_positive(fake_server: FakeOpenAI) -> None:
    with pytest.raises(ValueError, match="query_timeout"):
        client(fake_server, query_timeout=0)


def test_the_stamp_names_the_endpoint_and_the_prefixes(fake_server: FakeOpenAI) -> None:
    def stamp(**settings: Any) -> str:
        settings = {"base_url": fake_server.base_url, **settings}
        return OpenAIEmbedder(model="fake-embed", dimension=8, **settings).stamp.model

    plain = stamp()
    assert plain == stamp(base_url=fake_server.base_url + "/")  # a trailing slash is the same endpoint
    assert (
        len(
            {
                plain,
                stamp(base_url="http://other:1/v1"),
                stamp(passage_prefix="passage: "),
                stamp(query_prefix="query: "),
            }
        )
        == 4
    )


async def test_another_endpoint_with_a_same_named_model_re_embeds(tmp_path: Path) -> None:
    root = two_notes(tmp_path)
    first, second = FakeOpenAI(), FakeOpenAI()
    try:
        async with ReMe(workspace_dir=root, timezone="UTC", **openai_overrides(first)) as app:
            index = app.component("index").service
            index.ensure_ready()
            chunks = index.store.counts()["chunks"]
            assert index.embed_pending() == chunks
        async with ReMe(workspace_dir=root, timezone="UTC", **openai_overrides(first)) as app:
            index = app.component("index").service
            index.ensure_ready()
            assert index.vectors.pending() == 0  # same endpoint: the cache is kept
        async with ReMe(workspace_dir=root, timezone="UTC", **openai_overrides(second)) as app:
            index = app.component("index").service
            index.ensure_ready()
            assert index.vectors.pending() == chunks  # another server: another space
            assert index.embed_pending() == chunks
            assert second.embedding_requests
    finally:
        first.close()
        second.close()


async def test_the_background_loop_gets_past_a_rejected_text(fake_server: FakeOpenAI, tmp_path: Path) -> None:
    import asyncio

    from reme.index.upkeep import UpkeepTiming, embed_in_background

    root = poisoned_workspace(tmp_path / "ws", 9, "POISON", fake_server)
    async with ReMe(workspace_dir=root, timezone="UTC", **openai_overrides(fake_server)) as app:
        index = app.component("index").service
        index.ensure_ready()
        chunks = index.store.counts()["chunks"]
        timing = UpkeepTiming(settle_s=0.5, catch_up_s=1.0, embed_idle_s=0.01, embed_retry_s=30.0)
        loop = asyncio.create_task(embed_in_background(index.vectors, index.indexer.stopping, timing))
        try:
            for _ in range(500):  # well under the 30 s retry the old loop was stuck in
                figures = index.vector_figures()
                if figures["vectors"] == chunks - 1:
                    break
                await asyncio.sleep(0.01)
            assert (figures["vectors"], figures["vectors_failed"], figures["vectors_pending"]) == (
                chunks - 1,
                1,
                0,
            )
        finally:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)

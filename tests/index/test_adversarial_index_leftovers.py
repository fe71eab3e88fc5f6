"""Leftovers of the index review: a text the embedder always fails on (not with a rejection) no
longer stalls embedding for good while an outage marks nothing; a link names a file with and
without an index; a query without searchable words says so; a traverse seed resolves like a link;
health notices a catalog whose tables were dropped by hand."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

np = pytest.importorskip("numpy", reason="vectors need numpy (pip install 'reme[vectors]')")

from tests.embedders import HashedWords, vector_overrides  # noqa: E402

from reme import ReMe  # noqa: E402
from reme.app.components.embedding import EmbeddingComponent  # noqa: E402
from reme.app.registry import COMPONENTS  # noqa: E402
from reme.errors import ReMeError  # noqa: E402
from reme.index.embedding import Stamp  # noqa: E402
from reme.index.vectors.queue import ISOLATE_AFTER, embed_isolating  # noqa: E402


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text, encoding="utf-8")


# 1. a text the embedder always fails on ----------------------------------------------------------


class Poisoned(HashedWords):
    """Fails any batch holding "POISON" with a non-rejection error (the OpenAI backend's NaN error,
    a llama.cpp HTTP 500); fails everything while `down` (an outage)."""

    def __init__(self) -> None:
        super().__init__(dimension=64)
        self.down = False
        self.poison = True

    @property
    def stamp(self) -> Stamp:
        return Stamp("test", "poisoned", self.dimension)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if self.down:
            raise ReMeError("cannot reach the embeddings endpoint: connection refused")
        if self.poison and any("POISON" in text for text in texts):
            raise ReMeError("the embeddings endpoint returned NaN or infinite values; check its model")
        return super().embed_passages(texts)


NOTES = {f"digest/n{n}.md": f"# N{n}\n\nnote {n} about topic{n}.\n" for n in range(1, 8)}


class PoisonedComponent(EmbeddingComponent):
    """`components.embedding.backend=poisoned`: the `Poisoned` embedder as a component."""

    def __init__(self, app: object, name: str, *, batch_size: int = 4, **settings: object) -> None:
        super().__init__(app, name, batch_size=batch_size, **settings)
        self.embedder = Poisoned()


@pytest.fixture
async def poisoned(tmp_path: Path) -> AsyncIterator[tuple[ReMe, Poisoned]]:
    """An app embedding with `Poisoned` (batches of 4); digest/n0.md holds the poisoned text."""
    root = tmp_path / "ws"
    write(root, {"digest/n0.md": "# N0\n\nPOISON text the model chokes on.\n", **NOTES})
    overrides = vector_overrides(**{"components.embedding.backend": "poisoned"})
    with COMPONENTS.registered({"poisoned": PoisonedComponent}):
        async with ReMe(workspace_dir=root, timezone="UTC", **overrides) as app:
            app.component("index").service.ensure_ready()
            yield app, app.component("embedding").embedder


def background_attempt(index) -> int | None:
    """One round of the index loop's embedding (`embed_in_background` retries a failure later)."""
    try:
        return index.vectors.embed_batch()
    except ReMeError:
        return None


async def test_a_text_that_always_fails_is_isolated_and_every_other_text_embedded(poisoned) -> None:
    app, embedder = poisoned
    index = app.component("index").service
    chunks = index.store.counts()["chunks"]
    rounds: list[int | None] = []
    while len(rounds) < 50 and rounds[-1:] != [0]:  # until nothing is pending (bounded)
        rounds.append(background_attempt(index))
        if rounds.count(None) < ISOLATE_AFTER:  # the batch failed: retried later, nothing marked yet
            assert index.vector_figures()["vectors_failed"] == 0
    assert rounds.count(None) == ISOLATE_AFTER  # then it is bisected: the poisoned text alone is marked
    figures = index.vector_figures()
    assert (figures["vectors"], figures["vectors_pending"], figures["vectors_failed"]) == (chunks - 1, 0, 1)
    assert figures["last_error"] is None
    [example] = figures["vectors_failed_examples"]
    assert example["path"] == "digest/n0.md" and "NaN" in example["error"]
    health = await app.run("health_check")
    assert health.metadata["components"]["index"]["vectors"]["vectors_failed"] == 1

    (app.workspace_dir / "digest/n0.md").write_text("# N0\n\nnow a fine text.\n")  # the chunk changes
    index.indexer.sync_paths(["digest/n0.md"])
    assert index.vectors.embed_batch() == 1
    assert index.vector_figures()["vectors_failed"] == 0


async def test_reindex_isolates_the_text_at_once_and_embeds_the_rest(poisoned) -> None:
    """A one-shot run (`reindex`, watching off) has no later retry: it bisects right after a failure."""
    app, _ = poisoned
    done = await app.run("reindex")
    assert done.success, done.answer
    index = app.component("index").service
    figures = index.vector_figures()
    assert (figures["vectors"], figures["vectors_pending"], figures["vectors_failed"]) == (
        index.store.counts()["chunks"] - 1,
        0,
        1,
    )


async def test_an_outage_marks_no_text_failed(poisoned) -> None:
    app, embedder = poisoned
    embedder.poison = False
    embedder.down = True
    index = app.component("index").service
    for _ in range(3 * ISOLATE_AFTER):  # long enough to bisect: the control text fails too
        assert background_attempt(index) is None
    with pytest.raises(ReMeError, match="connection refused"):
        index.embed_pending()
    figures = index.vector_figures()
    assert figures["vectors_failed"] == 0 and "connection refused" in figures["last_error"]

    embedder.down = False  # the endpoint is back: every text gets its vector
    assert index.embed_pending() == index.store.counts()["chunks"]
    figures = index.vector_figures()
    assert (figures["vectors_pending"], figures["vectors_failed"], figures["last_error"]) == (0, 0, None)


class Flaky(Poisoned):
    """Also fails the first batch holding "flaky" (chance), then embeds it."""

    def __init__(self) -> None:
        super().__init__()
        self.flaked = False

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not self.flaked and any("flaky" in text for text in texts):
            self.flaked = True
            raise ReMeError("HTTP 500: server busy")
        return super().embed_passages(texts)


def test_bisecting_marks_only_the_text_that_keeps_failing_while_the_embedder_works() -> None:
    items = [("a", "alpha"), ("f", "flaky text"), ("p", "POISON"), ("b", "beta")]
    done = embed_isolating(Flaky(), items, 64, dict.fromkeys("afpb", ISOLATE_AFTER))
    assert sorted(key for key, _ in done.stored) == ["a", "b", "f"] and done.outage is None
    [(key, error)] = done.rejected
    assert key == "p" and "NaN" in error

    wrong = Poisoned()
    wrong.dimension = 32  # every vector has the wrong size: the embedder's fault, not a text's
    done = embed_isolating(wrong, items, 64, dict.fromkeys("afpb", ISOLATE_AFTER))
    assert isinstance(done.outage, ValueError) and not done.rejected and not done.stored


# 2. a link names a file --------------------------------------------------------------------------


@pytest.fixture(params=["index", "scan"])
async def linked_app(request, workspace_dir: Path) -> AsyncIterator[ReMe]:
    """With the index's graph, and without an index (links found by a scan)."""
    overrides = {} if request.param == "index" else {"components.index.enabled": False}
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **overrides) as started:
        yield started


async def test_a_link_never_names_a_folder(linked_app) -> None:
    """`[[digest/notes]]` names digest/notes.md, not the folder digest/notes/, with or without an
    index: moving the note retargets the link in both."""
    app = linked_app
    root = app.workspace_dir
    write(
        root,
        {
            "digest/notes.md": "# Notes\n",
            "digest/notes/inner.md": "# Inner\n",
            "daily/2026-06-01.md": "see [[digest/notes]]\n",
        },
    )
    moved = await app.run("move", src="digest/notes.md", dst="digest/renamed.md")
    assert moved.success, moved.answer
    assert (root / "daily/2026-06-01.md").read_text() == "see [[digest/renamed]]\n"


# 3. a query without searchable words -------------------------------------------------------------


async def test_a_query_without_searchable_words_says_so(app) -> None:
    write(app.workspace_dir, {"digest/solar.md": "# Solar\n\nThe panels on the roof.\n"})
    for job in ("search", "node_search"):
        answer = await app.run(job, query="the and of ?! 🙂")
        assert answer.success and answer.metadata["results"] == []
        assert "no searchable words" in answer.answer and "'the', 'and', 'of', '?!', '🙂'" in answer.answer
    many = await app.run("search", query=" ".join(["the"] * 40))
    assert "and 30 more" in many.answer and many.answer.count("'the'") == 10  # bounded
    found = await app.run("search", query="the roof")
    assert found.metadata["results"] and "no searchable words" not in found.answer
    missed = await app.run("search", query="volcano")
    assert missed.success and "no searchable words" not in missed.answer  # words, just no match


# 4. a traverse seed spelled like a link ----------------------------------------------------------


async def test_a_traverse_seed_resolves_as_links_do(app) -> None:
    write(
        app.workspace_dir,
        {"digest/wiki/a.md": "# A\n", "digest/b.md": "# B\n\nsee [[digest/wiki/a]] and [[a]].\n"},
    )
    for seed in ("digest/wiki/a", "wiki/a", "a"):
        answer = await app.run("traverse", path=seed, direction="backward")
        assert answer.success, answer.answer
        nodes = {node["path"]: node["exists"] for node in answer.metadata["nodes"]}
        assert nodes == {"digest/wiki/a.md": True, "digest/b.md": True}
        assert len(answer.metadata["edges"]) == 2  # both spellings of the link lead to it
        assert f"{seed} resolved to digest/wiki/a.md" in answer.answer and "(missing)" not in answer.answer
    gone = await app.run("traverse", path="nowhere")
    assert gone.success and "nowhere (missing)" in gone.answer and "resolved" not in gone.answer


# 5. a catalog table dropped by hand --------------------------------------------------------------


def drop_table(root: Path, table: str) -> None:
    with sqlite3.connect(root / "metadata" / "index.sqlite3") as db:
        db.execute(f"DROP TABLE {table}")
    db.close()


async def test_health_notices_a_dropped_catalog_table_and_reindex_restores_it(app) -> None:
    write(app.workspace_dir, {"digest/solar.md": "# Solar\n\nThe panels on the roof.\n"})
    assert (await app.run("search", query="panels")).metadata["results"]
    for table in ("chunks", "intents"):
        drop_table(app.workspace_dir, table)
    health = await app.run("health_check")
    entry = health.metadata["components"]["index"]
    assert entry["status"] == "degraded"
    assert "chunks, intents" in entry["reason"] and "run reindex" in entry["reason"]

    assert (await app.run("reindex")).success
    assert (await app.run("search", query="panels")).metadata["results"]
    assert (await app.run("health_check")).metadata["components"]["index"]["status"] == "ok"


async def test_a_table_dropped_while_stopped_is_rebuilt_at_the_next_start(workspace_dir: Path) -> None:
    write(workspace_dir, {"digest/solar.md": "# Solar\n\nThe panels on the roof.\n"})
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC") as app:
        assert (await app.run("search", query="panels")).metadata["results"]
    drop_table(workspace_dir, "chunks")
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC") as app:
        assert (await app.run("search", query="panels")).metadata["results"]
        health = await app.run("health_check")
        assert health.metadata["components"]["index"]["status"] == "ok"

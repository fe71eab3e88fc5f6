"""Crash during embedding: a process killed (SIGKILL) inside a batch's write, or between batches,
leaves the vector cache with whole batches only; a restart embeds exactly what is missing and
ends with the same vectors as an uninterrupted run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from tests.embedders import HashedWordsComponent, hashed_words_backend, vector_overrides

from reme import ReMe
from reme.index.vectors import VectorCache

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

pytest.importorskip("numpy", reason="vectors need numpy (pip install 'reme[vectors]')")

CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from reme import ReMe
    from reme.index import vectors
    from tests.embedders import hashed_words_backend, vector_overrides

    workspace, phase = sys.argv[1], sys.argv[2]
    die = lambda: os.kill(os.getpid(), signal.SIGKILL)
    original = vectors.VectorCache.put
    calls = []

    def put(self, items, *rest):
        calls.append(1)
        if phase == "inside_second_write" and len(calls) == 2:
            # the rows are written, the transaction is open: killed before its commit
            with self.transaction() as db:
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                               [(k, v.tobytes()) for k, v in items])
                die()
        original(self, items, *rest)
        if phase == "after_first_write":
            die()

    vectors.VectorCache.put = put

    async def main():
        with hashed_words_backend():
            async with ReMe(workspace_dir=workspace, timezone="UTC", **vector_overrides()) as app:
                index = app.component("index").service
                index.ensure_ready()
                index.embed_pending()

    asyncio.run(main())
    """
)


def write_notes(root: Path) -> None:
    for number in range(12):
        path = root / "digest" / f"note{number}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {number}\n\nTopic {number}: word{number} and word{number + 1}.\n")


async def cached_vectors(workspace: Path) -> dict[str, bytes]:
    """Restart, finish embedding, and return the cache's vectors (key → bytes)."""
    with hashed_words_backend():
        async with ReMe(workspace_dir=workspace, timezone="UTC", **vector_overrides()) as app:
            index = app.component("index").service
            index.ensure_ready()
            index.embed_pending()
            assert index.vectors.pending() == 0
            assert HashedWordsComponent.last is not None
            cache = VectorCache(index.vectors.db_path, HashedWordsComponent.last.stamp)
            try:
                return dict(cache.query("SELECT key, vector FROM vectors"))
            finally:
                cache.close()


@pytest.mark.parametrize("phase", ["after_first_write", "inside_second_write"])
async def test_a_kill_while_embedding_leaves_whole_batches_and_restart_finishes(
    tmp_path: Path, phase: str
) -> None:
    clean = tmp_path / "clean"
    write_notes(clean)
    expected = await cached_vectors(clean)

    crashed = tmp_path / "crashed"
    write_notes(crashed)
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(crashed), phase], cwd=Path(__file__).parents[2], capture_output=True
    )
    assert child.returncode == -9, child.stderr.decode()[-2000:]

    with hashed_words_backend():
        async with ReMe(workspace_dir=crashed, timezone="UTC", **vector_overrides()) as app:
            index = app.component("index").service
            index.ensure_ready()
            cache = index.vectors.cache()
            assert cache.count() == 4  # batch_size 4: exactly the first batch survived
            assert index.vectors.pending() == index.store.counts()["chunks"] - 4
            index.embed_pending()
            assert HashedWordsComponent.last is not None
            assert (
                sum(HashedWordsComponent.last.embedded.values()) == len(expected) - 4
            )  # only what was missing

    recovered = await cached_vectors(crashed)
    assert recovered.keys() == expected.keys()
    for key, blob in expected.items():
        assert np.array_equal(np.frombuffer(recovered[key], np.float32), np.frombuffer(blob, np.float32))

"""The neighbour mix of the vector index kept up incrementally (docs/spec.md §5.2): after every change the
rows it touches are re-mixed, and the result is the one a full computation gives — the same
previous / next rows and inverse norms, the same search results as a fresh index."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy", reason="vectors need numpy (pip install 'reme[vectors]')")

from tests.embedders import hashed_words_backend, vector_overrides  # noqa: E402

from reme import ReMe  # noqa: E402
from reme.index.search import SearchFilters  # noqa: E402
from reme.index.vectors import VectorIndex  # noqa: E402
from reme.index.vectors import mix as mix_module  # noqa: E402
from reme.index.vectors.mix import NeighbourMix  # noqa: E402

WORDS = [f"w{n}{'xyz'[n % 3]}" for n in range(24)]  # made-up words: every section differs
QUERIES = ("w0x w1y", "w4y w5z w6x", "w17z w18x w19y", "w12x w23z w2z")


@pytest.fixture(autouse=True)
def backend() -> Iterator[None]:
    with hashed_words_backend():
        yield


def note(number: int, sections: int = 4) -> str:
    """A note of `sections` sections (one chunk each), words picked by its number: every file differs."""
    parts = ["# Note\n"]
    for section in range(sections):
        words = " ".join(WORDS[(number * 5 + section * 3 + k) % len(WORDS)] for k in range(4))
        parts.append(f"## Part {section}\n\n{words} {number}-{section}.\n")
    return "\n".join(parts)


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def vector_app(workspace: Path, **extra: Any) -> ReMe:
    return ReMe(workspace_dir=workspace, timezone="UTC", **vector_overrides(**extra))


def reference_mix(vectors: VectorIndex) -> tuple[Any, Any, Any]:
    """The mix from first principles, row for row: the catalog's file order and the matrix."""
    rows, used, matrix = vectors.rows.row_of, vectors.rows.used, vectors.rows.matrix
    prev = np.full(used, -1, dtype=np.int64)
    nxt = np.full(used, -1, dtype=np.int64)
    inverse = np.zeros(used, dtype=np.float32)
    order = vectors.catalog.query("SELECT chunk_id, path FROM chunks ORDER BY path, seq")
    for i, (chunk_id, path) in enumerate(order):
        if chunk_id not in rows:
            continue
        row = rows[chunk_id]
        if i > 0 and order[i - 1][1] == path and order[i - 1][0] in rows:
            prev[row] = rows[order[i - 1][0]]
        if i + 1 < len(order) and order[i + 1][1] == path and order[i + 1][0] in rows:
            nxt[row] = rows[order[i + 1][0]]
    for row in rows.values():
        mixed = matrix[row] + vectors.context * sum(matrix[r] for r in (prev[row], nxt[row]) if r >= 0)
        norm = float(np.linalg.norm(mixed))
        inverse[row] = 1.0 / norm if norm else 0.0
    return prev, nxt, inverse


def by_chunk(vectors: VectorIndex) -> dict[str, tuple[str | None, str | None, float]]:
    """chunk id -> (previous chunk id, next chunk id, inverse norm): comparable across row layouts."""
    assert vectors.mix is not None
    prev, nxt, inverse = vectors.mix.current()
    ids = vectors.rows.chunk_at
    return {
        chunk_id: (
            ids[prev[row]] if prev[row] >= 0 else None,
            ids[nxt[row]] if nxt[row] >= 0 else None,
            float(inverse[row]),
        )
        for chunk_id, row in vectors.rows.row_of.items()
    }


def assert_mix_is_full(service: Any) -> None:
    """The incremental mix (taken by a search) equals the full one and a fresh index's; so do the results."""
    vectors = service.vectors
    vectors.search(QUERIES[0], 5, SearchFilters())  # follows the catalog, re-mixes what changed
    assert vectors.mix is not None
    prev, nxt, inverse = (array.copy() for array in vectors.mix.current())
    want_prev, want_next, want_inverse = reference_mix(vectors)
    assert np.array_equal(prev, want_prev) and np.array_equal(nxt, want_next)
    assert np.allclose(inverse, want_inverse, rtol=1e-5, atol=1e-7)
    assert not inverse[~vectors.rows.alive[: vectors.rows.used]].any()  # free rows hold no stale inverse

    fresh = VectorIndex(service.metadata_dir, service.store, service.embedder, context=vectors.context)
    try:
        fresh.refresh()
        ours, theirs = by_chunk(vectors), by_chunk(fresh)
        assert ours.keys() == theirs.keys()
        for chunk_id, (before, after, norm) in ours.items():
            assert theirs[chunk_id][:2] == (before, after)
            assert theirs[chunk_id][2] == pytest.approx(norm, rel=1e-5)
        for query in QUERIES:
            got = dict(vectors.search(query, 1000, SearchFilters()))
            expected = dict(fresh.search(query, 1000, SearchFilters()))
            assert got.keys() == expected.keys() and len(got) == len(vectors.rows)
            assert got == pytest.approx(expected, abs=1e-6)
    finally:
        fresh.close()


def count_calls(monkeypatch: pytest.MonkeyPatch, mix: NeighbourMix | None, name: str) -> list[int]:
    """Spy on `mix.<name>`: one entry per call (the number of rows for `mix_some`)."""
    assert mix is not None
    calls: list[int] = []
    method = getattr(mix, name)

    def spy(*args: Any) -> Any:
        calls.append(len(args[0]) if args else 0)
        return method(*args)

    monkeypatch.setattr(mix, name, spy)
    return calls


def embedded_and_mixed(app: ReMe) -> tuple[Any, VectorIndex]:
    """The index with every chunk embedded and mixed once (the first search mixes every row)."""
    service = app.component("index").service
    service.ensure_ready()
    service.embed_pending()
    service.vectors.search("w0x", 5, SearchFilters())
    return service, service.vectors


def sync(service: Any, *paths: str) -> None:
    service.sync_paths(list(paths))


async def test_the_incremental_mix_equals_a_full_one_after_every_change(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mix_module, "REMIX_FULL_FRACTION", float("inf"))  # never fall back
    write(workspace_dir, {f"digest/n{n}.md": note(n) for n in range(4)})
    async with vector_app(workspace_dir) as app:
        service = app.component("index").service
        service.ensure_ready()
        vectors = service.vectors
        full = count_calls(monkeypatch, vectors.mix, "mix_all")
        some = count_calls(monkeypatch, vectors.mix, "mix_some")
        assert_mix_is_full(service)  # nothing embedded yet: the one full computation, over no rows
        assert full == [0]
        capacity = vectors.rows.capacity

        for _ in range(3):  # embed some chunks
            assert vectors.embed_batch() == 4
        assert_mix_is_full(service)

        write(workspace_dir, {"digest/n4.md": note(4), "daily/2026-06-01/n5.md": note(5, 6)})  # add files
        sync(service, "digest/n4.md", "daily/2026-06-01/n5.md")
        vectors.embed_batch()
        assert_mix_is_full(service)

        edited = note(1).replace("## Part 2", "## Inserted\n\nw13y w14z w15x inserted.\n\n## Part 2")
        write(workspace_dir, {"digest/n1.md": edited})  # the later chunks shift: new ids, cached vectors
        sync(service, "digest/n1.md")
        assert_mix_is_full(service)
        vectors.embed_batch()
        assert_mix_is_full(service)

        (workspace_dir / "digest/n2.md").unlink()  # delete a file: its rows are freed
        sync(service, "digest/n2.md")
        assert_mix_is_full(service)
        assert vectors.rows.free

        shutil.move(workspace_dir / "digest/n3.md", workspace_dir / "digest/moved.md")  # rows reused
        sync(service, "digest/n3.md", "digest/moved.md")
        assert_mix_is_full(service)

        write(
            workspace_dir, {f"digest/m{n}.md": note(10 + n, 5) for n in range(6)}
        )  # more than the free rows
        sync(service, *(f"digest/m{n}.md" for n in range(6)))
        while vectors.embed_batch():  # embed the rest, checking after every batch
            assert_mix_is_full(service)
        assert vectors.pending() == 0 and not vectors.rows.free
        assert_mix_is_full(service)

        assert full == [0]  # every later change re-mixed only the rows it touched
        assert some and max(some[1:]) < len(vectors.rows)
        assert vectors.rows.capacity > capacity  # the mix arrays grew with the matrix
        assert vectors.mix is not None
        assert (
            vectors.mix.prev.shape[0]
            == vectors.mix.next.shape[0]
            == vectors.mix.inverse.shape[0]
            == vectors.rows.matrix.shape[0]
        )


async def test_a_search_after_one_batch_re_mixes_only_the_rows_it_touched(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace_dir, {f"digest/n{n}.md": note(n) for n in range(12)})
    async with vector_app(workspace_dir) as app:
        service, vectors = embedded_and_mixed(app)
        full = count_calls(monkeypatch, vectors.mix, "mix_all")
        some = count_calls(monkeypatch, vectors.mix, "mix_some")

        write(workspace_dir, {"digest/new.md": note(40, 6)})
        sync(service, "digest/new.md")
        assert vectors.embed_batch() == 4  # one batch: 4 of the new file's 6 chunks
        vectors.search("w0x", 5, SearchFilters())
        assert full == [] and some == [4]  # the new rows; their neighbours are new or still pending

        assert vectors.embed_batch() == 2
        vectors.search("w0x", 5, SearchFilters())
        assert full == [] and len(some) == 2 and 2 <= some[1] <= 6  # within the new file, of 54 rows
        vectors.search("w0x", 5, SearchFilters())
        assert full == [] and len(some) == 2  # nothing changed: nothing re-mixed
        assert_mix_is_full(service)


async def test_a_large_change_re_mixes_every_row(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace_dir, {f"digest/n{n}.md": note(n) for n in range(8)})
    async with vector_app(workspace_dir) as app:
        service, vectors = embedded_and_mixed(app)
        full = count_calls(monkeypatch, vectors.mix, "mix_all")
        (workspace_dir / "digest/n0.md").unlink()  # a whole file gone: nobody else's links change
        sync(service, "digest/n0.md")
        vectors.search("w0x", 5, SearchFilters())
        assert full == []
        for n in range(1, 4):  # a first section: every chunk shifts (new ids), 12 of 28 rows re-placed
            write(
                workspace_dir,
                {f"digest/n{n}.md": note(n).replace("## Part 0", f"## New\n\nnew {n}.\n\n## Part 0")},
            )
        sync(service, *(f"digest/n{n}.md" for n in range(1, 4)))
        assert_mix_is_full(service)
        assert full == [0]


async def test_vector_context_zero_never_computes_a_mix(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace_dir, {f"digest/n{n}.md": note(n) for n in range(3)})
    async with vector_app(workspace_dir, **{"components.index.vector_context": 0}) as app:
        service = app.component("index").service
        service.ensure_ready()
        vectors = service.vectors
        assert vectors.mix is None  # no neighbour links kept, no mix arrays
        calls: list[str] = []
        for name in ("follow", "placed", "current", "mix_all", "mix_some", "mixed"):
            monkeypatch.setattr(NeighbourMix, name, lambda *_, name=name: calls.append(name))
        service.embed_pending()
        assert vectors.search("w0x w1y", 5, SearchFilters())
        write(workspace_dir, {"digest/n1.md": note(7)})
        sync(service, "digest/n1.md")
        service.embed_pending()
        assert vectors.search("w0x w1y", 5, SearchFilters())
        assert calls == []
        assert vectors.mix is None

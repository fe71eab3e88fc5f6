"""The vector index follows the catalog through its change log: after a write, the next search re-reads
only the files written since its last look (not every chunk of the workspace), and ends exactly where
a fresh index that read everything does — rows, queue, neighbour mix and results. When the log cannot
tell (another catalog, a reader too far behind, a write that did not log), it re-reads everything."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("numpy", reason="vectors need numpy (pip install 'reme[vectors]')")

from tests.embedders import hashed_words_backend  # noqa: E402
from tests.index.test_vectors_mix import assert_mix_is_full, note, vector_app, write  # noqa: E402

from reme.index import store as store_module  # noqa: E402
from reme.index.search import SearchFilters  # noqa: E402
from reme.index.store import ChangeMark, ChunkRow, FileRecord, FileRow, MetadataStore  # noqa: E402


@pytest.fixture(autouse=True)
def backend() -> Iterator[None]:
    with hashed_words_backend():
        yield


def record(path: str, chunks: int = 2) -> FileRecord:
    rows = [ChunkRow(f"{path}#{n}", path, n + 1, n + 1, [], f"text {n}") for n in range(chunks)]
    return FileRecord(FileRow(path, 1, 1), rows)


def test_the_change_log_names_the_paths_written_since_a_mark(tmp_path: Path) -> None:
    store = MetadataStore(tmp_path / "catalog.sqlite3")
    start = store.change_mark()
    assert store.changed_paths(start) == set()
    store.apply([record("a.md"), record("b.md")], [], [])
    middle = store.change_mark()
    assert middle.generation == start.generation + 1 and middle.catalog_id == start.catalog_id
    store.begin_intents(["c.md"])
    store.apply([record("c.md")], ["a.md"], ["c.md"])
    store.apply([], [], [])  # a write of no path still counts, so a gap shows
    assert store.changed_paths(start) == {"a.md", "b.md", "c.md"}
    assert store.changed_paths(middle) == {"a.md", "c.md"}
    assert store.changed_paths(store.change_mark()) == set()
    assert store.changed_paths(ChangeMark("another catalog", middle.generation)) is None
    ahead = ChangeMark(start.catalog_id, store.generation() + 5)  # a mark from the future
    assert store.changed_paths(ahead) is None

    with sqlite3.connect(tmp_path / "catalog.sqlite3") as db:  # an older reme writes without logging
        db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
    assert store.changed_paths(middle) is None
    store.close()

    reopened = MetadataStore(tmp_path / "catalog.sqlite3")  # the same catalog keeps its id
    assert reopened.change_mark().catalog_id == start.catalog_id
    reopened.close()


def test_the_log_keeps_a_bounded_number_of_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "CHANGE_LOG_GENERATIONS", 3)
    store = MetadataStore(tmp_path / "catalog.sqlite3")
    old = store.change_mark()
    for n in range(10):
        store.apply([record(f"n{n}.md")], [], [])
    recent = ChangeMark(old.catalog_id, store.generation() - 2)
    assert store.changed_paths(recent) == {"n8.md", "n9.md"}
    assert store.changed_paths(old) is None  # further behind than the log keeps
    assert store.query("SELECT COUNT(*) FROM changes")[0][0] == 3
    store.close()


def spy_orders(monkeypatch: pytest.MonkeyPatch, catalog: MetadataStore) -> list[Any]:
    """Each `chunk_order` call's `paths` (None: every chunk was read)."""
    calls: list[Any] = []
    method = catalog.chunk_order

    def spy(paths: Any = None) -> list[tuple[str, str]]:
        calls.append(None if paths is None else set(paths))
        return method(paths)

    monkeypatch.setattr(catalog, "chunk_order", spy)
    return calls


async def test_each_write_re_reads_only_its_files_and_ends_like_a_fresh_index(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    files = {f"digest/n{n}.md": note(n, 1 + n % 4) for n in range(8)}
    write(workspace_dir, files)
    async with vector_app(workspace_dir) as app:
        service = app.component("index").service
        service.ensure_ready()
        vectors = service.vectors
        service.embed_pending()
        vectors.search("w0x", 5, SearchFilters())
        orders = spy_orders(monkeypatch, service.store)
        number = 100
        for step in range(30):
            action = rng.choice(("add", "edit", "edit", "delete", "move", "several"))
            paths = sorted(files)
            if action == "add" or len(paths) < 3:
                touched = [f"digest/n{number}.md"]
                files[touched[0]] = note(number, rng.randint(1, 5))
                write(workspace_dir, {touched[0]: files[touched[0]]})
            elif action == "edit":
                touched = [rng.choice(paths)]
                files[touched[0]] = note(number, rng.randint(1, 5))
                write(workspace_dir, {touched[0]: files[touched[0]]})
            elif action == "delete":
                touched = [rng.choice(paths)]
                del files[touched[0]]
                (workspace_dir / touched[0]).unlink()
            elif action == "move":
                source = rng.choice(paths)
                touched = [source, f"digest/moved{number}.md"]
                files[touched[1]] = files.pop(source)
                (workspace_dir / source).rename(workspace_dir / touched[1])
            else:
                touched = rng.sample(paths, 3)
                for path in touched:
                    files[path] = note(rng.randint(0, 99), rng.randint(1, 5))
                write(workspace_dir, {path: files[path] for path in touched})
            number += 1
            orders.clear()
            service.sync_paths(touched)
            if step % 3 == 0:
                vectors.embed_batch()  # some new chunks wait in the queue, some have rows
            vectors.search("w1y", 5, SearchFilters())
            assert orders == [set(touched)], (step, action)
            assert_mix_is_full(service)  # the same rows, queue, mix and results as a fresh index
            assert {chunk for chunks in vectors._by_path.values() for chunk in chunks} == {
                row[0] for row in service.store.query("SELECT chunk_id FROM chunks")
            }


async def test_a_write_the_log_cannot_name_re_reads_everything(
    workspace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workspace_dir, {f"digest/n{n}.md": note(n) for n in range(4)})
    async with vector_app(workspace_dir) as app:
        service = app.component("index").service
        service.ensure_ready()
        service.embed_pending()
        vectors = service.vectors
        vectors.search("w0x", 5, SearchFilters())
        orders = spy_orders(monkeypatch, service.store)

        other = MetadataStore(service.store.db_path)  # another process's write: logged, so followed in part
        other.apply([], ["digest/n0.md"], [])
        other.close()
        vectors.search("w1y", 5, SearchFilters())
        assert orders == [{"digest/n0.md"}]
        assert_mix_is_full(service)

        with sqlite3.connect(service.store.db_path) as db:  # an older reme drops a file without logging
            db.execute("DELETE FROM chunks WHERE path = 'digest/n1.md'")
            db.execute("DELETE FROM files WHERE path = 'digest/n1.md'")
            db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
        orders.clear()
        vectors.search("w1y", 5, SearchFilters())
        assert orders == [None]
        assert_mix_is_full(service)
        assert not any(chunk.startswith("digest/n1.md") for chunk in vectors.rows.row_of)
        assert "digest/n1.md" not in vectors._by_path

"""A live index and other processes' interrupted work, engine leftovers, readers during a reindex
(issue 11 items 4, 5, 6)."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from tests.index.test_index_crash import CHILD, clean_reindex, note, run_child, write_workspace

from reme import ReMe
from reme.index.guard import index_content

QUERIES = ["solar cobalt", "hydrogen nuclear grid", "turbine", "note 31"]
QUIET = {"components.index.watch": False}  # the live app learns of changes only through the index


async def searches(app) -> dict:
    results = {}
    for query in QUERIES:
        response = await app.run("search", query=query, limit=100)
        results[query] = [
            (h["path"], h["start_line"], h["end_line"], h["text"]) for h in response.metadata["results"]
        ]
    return results


def index_state(index) -> dict:
    return index_content(index.indexer)


async def fresh_state(root: Path, tmp_path: Path) -> dict:
    clean = tmp_path / "clean"
    shutil.rmtree(clean, ignore_errors=True)
    shutil.copytree(root, clean, ignore=shutil.ignore_patterns("metadata"))
    async with ReMe(workspace_dir=clean, timezone="UTC", **QUIET) as app:
        app.component("index").service.ensure_ready()
        return index_state(app.component("index").service)


def big_workspace(tmp_path: Path) -> Path:
    """700 notes, so a reindex spans several engine commits (batches)."""
    root = tmp_path / "ws"
    write_workspace(root, 1)
    for i in range(40, 700):
        (root / "digest" / f"n{i}.md").write_text(note(i, 3))
    return root


@pytest.fixture
async def live(tmp_path: Path):
    """A running app, already reconciled with version 1 of the workspace; then the files change."""
    root = tmp_path / "ws"
    write_workspace(root, 1)
    async with ReMe(workspace_dir=root, timezone="UTC", **QUIET) as app:
        app.component("index").service.ensure_ready()
        write_workspace(root, 2)
        yield app


@pytest.mark.parametrize("phase", ["after_intents", "after_engine_commit"])
async def test_a_live_service_finishes_what_a_killed_one_shot_writer_left(
    live, tmp_path: Path, phase: str
) -> None:
    root = live.workspace_dir
    child = run_child(root, phase, tmp_path)
    assert child.returncode == -9, child.stderr
    index = live.component("index").service
    assert index.store.intents()  # the killed process left its writes pending
    got = await searches(live)  # no restart: the next search notices and repairs
    expected = await clean_reindex(root, tmp_path)
    assert got == expected["results"]
    assert index.store.intents() == []
    health = (await live.run("health_check")).metadata["components"]["index"]
    assert health["status"] == "ok" and index.guard.last_catch_up["interrupted_writes"] > 0


@pytest.mark.slow
async def test_a_killed_reindex_leaves_a_live_service_a_complete_index(live, tmp_path: Path) -> None:
    root = live.workspace_dir
    for i in range(40, 700):  # a reindex spanning several engine commits
        (root / "digest" / f"n{i}.md").write_text(note(i, 3))
    live.component("index").service.indexer.reconcile()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    for wait_s in (0.8, 1.6):
        child = subprocess.Popen(
            [sys.executable, str(script), str(root), "reindex_forever"], stdout=subprocess.PIPE, text=True
        )
        try:
            assert child.stdout.readline().strip() == "started"
            time.sleep(wait_s)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        index = live.component("index").service
        assert index.stats()["files"] == 700 - 10 + 1  # never a partial catalog (+ digest/_buckets.md)
        await searches(live)  # catches up with the killed batch
        assert index_state(index) == await fresh_state(root, tmp_path)


def test_health_is_degraded_with_the_reason_while_writes_are_pending_or_counts_disagree(
    tmp_path: Path,
) -> None:
    import asyncio

    async def main() -> None:
        root = tmp_path / "ws"
        write_workspace(root, 1)
        async with ReMe(workspace_dir=root, timezone="UTC", **QUIET) as app:
            index = app.component("index").service
            index.ensure_ready()
            with index.indexer.writing():  # a live writer, in another thread, has noted its intents
                index.store.begin_intents(["digest/n1.md"])
                health = await asyncio.to_thread(index.health)
                flagged = await app.run("search", query="solar")
            assert health["status"] == "degraded" and "1 index write(s) pending" in health["reason"]
            assert flagged.metadata["index_pending_writes"] == 1 and "in flight" in flagged.answer
            assert "index_pending_writes" not in (await app.run("search", query="solar")).metadata
            assert (await asyncio.to_thread(index.health))["status"] == "ok"  # repaired once it is free
            index.keyword.delete_path("digest/n2.md")
            index.keyword.commit()  # the engine lost documents the catalog still counts
            health = index.health()
            assert health["status"] == "degraded" and "disagree" in health["reason"]

    asyncio.run(main())


# engine leftovers ---------------------------------------------------------------------------------


def plant_stale_deletes(engine: Path) -> int:
    """What a writer killed mid-commit leaves: delete files for the opstamps the next commits use."""
    meta = json.loads((engine / "meta.json").read_text())
    planted = 0
    for segment in meta["segments"]:
        segment_id = segment["segment_id"].replace("-", "")
        for opstamp in range(meta["opstamp"], meta["opstamp"] + 400):
            stale = engine / f"{segment_id}.{opstamp}.del"
            if not stale.exists():
                stale.write_bytes(b"left by a killed commit")
                planted += 1
    return planted


def engine_of(root: Path) -> Path:
    [engine] = (root / "metadata" / "keyword").glob("keyword-*")
    return engine


async def test_stale_engine_files_are_removed_at_start_instead_of_failing_every_commit(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    write_workspace(root, 1)
    async with ReMe(workspace_dir=root, timezone="UTC", **QUIET) as app:
        app.component("index").service.ensure_ready()
    assert plant_stale_deletes(engine_of(root))
    async with ReMe(workspace_dir=root, timezone="UTC", **QUIET) as app:
        index = app.component("index").service
        assert index.last_repair["rebuild"] is False  # cleaned and repaired, no full rebuild
        assert (await app.run("write", path="digest/n0.md", content="zeppelin airship\n")).success
        hits = (await app.run("search", query="zeppelin")).metadata["results"]
        assert [hit["path"] for hit in hits] == ["digest/n0.md"]
        assert (await app.run("health_check")).metadata["components"]["index"]["status"] == "ok"


async def test_a_commit_blocked_by_leftovers_is_cleaned_and_retried_while_running(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write_workspace(root, 1)
    async with ReMe(workspace_dir=root, timezone="UTC", **QUIET) as app:
        index = app.component("index").service
        index.ensure_ready()
        plant_stale_deletes(engine_of(root))
        assert (await app.run("write", path="digest/n0.md", content="zeppelin airship\n")).success
        hits = (await app.run("search", query="zeppelin")).metadata["results"]
        assert [hit["path"] for hit in hits] == ["digest/n0.md"]
        assert index.health()["status"] == "ok"


async def test_an_index_failure_is_shown_by_health(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "ws"
    write_workspace(root, 1)
    async with ReMe(workspace_dir=root, timezone="UTC", **QUIET) as app:
        index = app.component("index").service
        index.ensure_ready()

        def broken_commit() -> None:
            raise OSError("disk full")

        monkeypatch.setattr(index.keyword, "commit", broken_commit)
        assert (await app.run("write", path="digest/n0.md", content="zeppelin\n")).success  # the file is safe
        health = index.health()
        assert health["status"] == "degraded" and "disk full" in health["reason"]
        monkeypatch.undo()
        index.sync_paths(["digest/n0.md"])
        assert index.health()["status"] == "ok"


# readers and writers during a reindex ----------------------------------------------------------------


async def test_readers_see_a_complete_index_and_writers_get_in_during_a_reindex(tmp_path: Path) -> None:
    root = big_workspace(tmp_path)
    (root / "digest/top.md").write_text("zeppelin zeppelin airship\n")
    async with ReMe(workspace_dir=root, timezone="UTC", **QUIET) as app:
        index = app.component("index").service
        index.ensure_ready()
        seen: list[tuple[list[str], bool]] = []

        def between_batches(done: int, total: int) -> None:
            top = [hit.path for hit in index.searcher.hydrate(index.keyword.search("zeppelin", 3))]
            free: list[bool] = []

            def writer() -> None:
                with index.indexer.writing_if_free() as got:
                    free.append(got)

            thread = threading.Thread(target=writer)
            thread.start()
            thread.join()
            seen.append((top, free[0]))

        report = index.reindex(between_batches)
        assert len(seen) >= 3 and len(report.indexed) == 691 + 1  # + digest/_buckets.md
        assert all(top == ["digest/top.md"] for top, _ in seen)  # never missing, at any batch
        assert all(free for _, free in seen[:-1])  # another writer could take the lock between batches
        assert index.health()["status"] == "ok"


async def test_stop_ends_a_reindex_after_its_batch_with_a_consistent_index(tmp_path: Path) -> None:
    root = big_workspace(tmp_path)
    async with ReMe(workspace_dir=root, timezone="UTC", **QUIET) as app:
        index = app.component("index").service
        index.ensure_ready()
        calls: list[int] = []

        def stop_at_first(done: int, total: int) -> None:
            calls.append(done)
            index.indexer.stop()

        index.store.set_meta("layout", "an older layout")  # as if chunk_chars had changed
        report = index.reindex(stop_at_first)
        assert calls == [200] and report.to_dict()["stopped"] is True
        assert index.health()["status"] == "ok" and index.stats()["files"] == 690 + 1  # + digest/_buckets.md
        assert index.store.get_meta("layout") == "an older layout"  # the next start rebuilds again
        assert not index.ready


@pytest.mark.slow
async def test_sigterm_during_a_served_reindex_stops_it_at_a_batch_with_a_consistent_index(
    tmp_path: Path,
) -> None:
    import sqlite3

    import httpx
    from tests.support import start_service_process

    root = big_workspace(tmp_path)
    service = start_service_process(root, "service.port=0", "timezone=UTC", "components.index.watch=false")
    try:

        def ready() -> bool:
            reply = httpx.post(f"{service.url}/health_check", json={}, timeout=60).json()
            return reply["metadata"]["components"]["index"]["ready"]

        while not ready():  # the start-up reconcile is done: what follows is the reindex
            time.sleep(0.05)
        replies: list[httpx.Response] = []
        request = threading.Thread(
            target=lambda: replies.append(httpx.post(f"{service.url}/reindex", json={}, timeout=120))
        )
        request.start()
        catalog = sqlite3.connect(root / "metadata/index.sqlite3")
        while not catalog.execute("SELECT COUNT(*) FROM intents").fetchone()[0]:  # a batch is in flight
            time.sleep(0.005)
        catalog.close()
        assert service.stop() == 0
        request.join(60)
    finally:
        service.stop()
    assert replies and "stopped by shutdown" in replies[0].json()["answer"], replies[0].text
    async with ReMe(workspace_dir=root, timezone="UTC", **QUIET) as app:
        index = app.component("index").service
        assert index.health()["status"] == "ok"
        assert index_state(index) == await fresh_state(root, tmp_path)


KILLED_REINDEX = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from reme import ReMe
    from reme.index import store

    async def main():
        async with ReMe(workspace_dir=sys.argv[1], timezone="UTC", **{"components.index.watch": False}) as app:
            await asyncio.to_thread(app.component("index").service.ensure_ready)
            original = store.MetadataStore.begin_intents

            def begin_then_die(self, paths):
                original(self, paths)
                os.kill(os.getpid(), signal.SIGKILL)

            store.MetadataStore.begin_intents = begin_then_die
            await app.run("reindex")

    asyncio.run(main())
    """
)


@pytest.mark.slow
async def test_the_update_loop_finishes_another_process_s_interrupted_writes_without_a_search(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    write_workspace(root, 1)
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        index = app.component("index").service
        await asyncio.to_thread(index.ensure_ready)
        app.start_background()  # the update loop runs, watching, as in the service
        script = tmp_path / "killed_reindex.py"
        script.write_text(KILLED_REINDEX)
        child = subprocess.run(
            [sys.executable, str(script), str(root)], capture_output=True, text=True, timeout=60
        )
        assert child.returncode == -9, child.stderr
        assert index.store.intents()  # no file changed, so the watcher has nothing to say
        deadline = time.monotonic() + 30
        while index.store.intents() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert index.store.intents() == []
        assert index.guard.last_catch_up["interrupted_writes"] == 30 + 1  # + digest/_buckets.md

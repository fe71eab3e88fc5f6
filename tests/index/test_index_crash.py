"""Crash consistency: an indexing process killed (SIGKILL) at any point, then a restart, gives the
same catalog and the same search results as a clean reindex of the same files."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from reme import ReMe

WORDS = [
    "solar",
    "wind",
    "battery",
    "cobalt",
    "lithium",
    "grid",
    "turbine",
    "panel",
    "inverter",
    "storage",
    "hydrogen",
    "nuclear",
]

# The child process: start the app on the workspace, arm one kill point, reconcile with the disk.
CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys, time
    from reme import ReMe
    from reme.index import keyword, store

    workspace, phase = sys.argv[1], sys.argv[2]

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def arm():
        if phase == "after_intents":
            original = store.MetadataStore.begin_intents
            def begin_then_die(self, paths):
                original(self, paths)
                die()
            store.MetadataStore.begin_intents = begin_then_die
        elif phase == "before_engine_commit":
            keyword.KeywordIndex.commit = lambda self: die()
        elif phase == "after_engine_commit":
            original_commit = keyword.KeywordIndex.commit
            def commit_then_die(self):
                original_commit(self)
                die()
            keyword.KeywordIndex.commit = commit_then_die
        elif phase == "inside_catalog_transaction":
            original_apply = store.MetadataStore.apply
            def apply_then_die(self, records, deleted, settled):
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute("DELETE FROM chunks")
                die()
            store.MetadataStore.apply = apply_then_die

    async def main():
        async with ReMe(workspace_dir=workspace, timezone="UTC") as app:
            arm()
            print("started", flush=True)
            await asyncio.to_thread(app.component("index").service.ensure_ready)
            while phase == "reindex_forever":
                await app.run("reindex")
            print("finished", flush=True)

    asyncio.run(main())
    """
)


def note(i: int, version: int) -> str:
    words = " ".join(WORDS[(i * 7 + k * version) % len(WORDS)] for k in range(40))
    link = f"[[digest/n{(i + 1) % 30}.md]]"
    return f"---\nname: note {i} v{version}\n---\n# Note {i}\n\n{words}\n\n{link}\n"


def write_workspace(root: Path, version: int) -> None:
    """30 digest notes; version 2 edits a third, deletes a third and adds new ones."""
    for i in range(30):
        path = root / "digest" / f"n{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        if version == 1 or i % 3 == 0:
            path.write_text(note(i, 1))
        elif i % 3 == 1:
            path.write_text(note(i, 2))
        elif path.exists():
            path.unlink()
    if version == 2:
        for i in range(30, 40):
            (root / "daily" / "2026-06-01").mkdir(parents=True, exist_ok=True)
            (root / "daily" / "2026-06-01" / f"n{i}.md").write_text(note(i, 2))


async def snapshot(root: Path) -> dict:
    """Catalog rows and ranked search results, everything a reader can observe."""
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        index = app.component("index").service
        results = {}
        for query in ["solar cobalt", "hydrogen nuclear grid", "turbine", "note 31"]:
            response = await app.run("search", query=query, limit=100)
            results[query] = [
                (h["path"], h["start_line"], h["end_line"], h["text"]) for h in response.metadata["results"]
            ]
        catalog = {
            "files": index.store.query("SELECT path, mtime_ns, size, name FROM files ORDER BY path"),
            "chunks": index.store.query(
                "SELECT chunk_id, path, start_line, end_line, text FROM chunks ORDER BY chunk_id"
            ),
            "links": index.store.query("SELECT source, target FROM links ORDER BY source, target"),
            "intents": index.store.intents(),
            "docs": (index.store.keyword_doc_total(), index.keyword.num_docs),
        }
        return {"results": results, "catalog": catalog, "health": index.health()["status"]}


def run_child(root: Path, phase: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return subprocess.run(
        [sys.executable, str(script), str(root), phase], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
async def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    write_workspace(root, 1)
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        app.component("index").service.ensure_ready()
    write_workspace(root, 2)
    return root


async def clean_reindex(root: Path, tmp_path: Path) -> dict:
    clean = tmp_path / "clean"
    shutil.copytree(root, clean, ignore=shutil.ignore_patterns("metadata"))
    return await snapshot(clean)


@pytest.mark.slow
@pytest.mark.parametrize(
    "phase", ["after_intents", "before_engine_commit", "after_engine_commit", "inside_catalog_transaction"]
)
async def test_killed_writer_is_repaired_on_restart(workspace: Path, tmp_path: Path, phase: str) -> None:
    child = run_child(workspace, phase, tmp_path)
    assert child.returncode == -9, child.stderr  # really killed, at the armed point
    assert "started" in child.stdout and "finished" not in child.stdout
    after = await snapshot(workspace)
    expected = await clean_reindex(workspace, tmp_path)
    assert after["catalog"]["intents"] == []
    assert after["catalog"]["docs"][0] == after["catalog"]["docs"][1]
    for key in ("files", "chunks", "links"):
        assert after["catalog"][key] == expected["catalog"][key], key
    assert after["results"] == expected["results"]
    assert after["health"] == "ok"


@pytest.mark.slow
async def test_killed_during_a_reindex_at_some_moment(workspace: Path, tmp_path: Path) -> None:
    for i in range(40, 200):  # enough files for a reindex to span several engine commits
        (workspace / "digest" / f"n{i}.md").write_text(note(i, 3))
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen(
        [sys.executable, str(script), str(workspace), "reindex_forever"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "started"
        time.sleep(1.5)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    after = await snapshot(workspace)
    expected = await clean_reindex(workspace, tmp_path)
    for key in ("files", "chunks", "links", "intents"):
        assert after["catalog"][key] == expected["catalog"][key], key
    assert after["results"] == expected["results"]


async def test_lost_engine_is_rebuilt_from_the_files(workspace: Path, tmp_path: Path) -> None:
    for engine in (workspace / "metadata" / "keyword").glob("keyword-*"):
        shutil.rmtree(engine)
    after = await snapshot(workspace)
    expected = await clean_reindex(workspace, tmp_path)
    assert after["catalog"]["docs"] == expected["catalog"]["docs"]
    assert after["results"] == expected["results"]


async def test_corrupt_engine_is_replaced_and_rebuilt(workspace: Path, tmp_path: Path) -> None:
    [engine] = (workspace / "metadata" / "keyword").glob("keyword-*")
    (engine / "meta.json").write_text("{not json")
    after = await snapshot(workspace)
    expected = await clean_reindex(workspace, tmp_path)
    assert after["catalog"]["docs"] == expected["catalog"]["docs"]
    assert after["results"] == expected["results"]


async def test_corrupt_catalog_is_replaced_and_rebuilt(workspace: Path, tmp_path: Path) -> None:
    (workspace / "metadata" / "index.sqlite3").write_bytes(b"this is not a database" * 100)
    after = await snapshot(workspace)
    expected = await clean_reindex(workspace, tmp_path)
    assert after["catalog"] == expected["catalog"]
    assert after["results"] == expected["results"]


async def test_changed_chunk_size_rebuilds(workspace: Path, tmp_path: Path) -> None:
    async with ReMe(workspace_dir=workspace, timezone="UTC", **{"components.index.chunk_chars": 200}) as app:
        index = app.component("index").service
        index.ensure_ready()
        small = index.store.counts()["chunks"]
    assert small > (await clean_reindex(workspace, tmp_path))["catalog"]["docs"][0]


async def test_a_busy_catalog_is_waited_for_never_deleted(tmp_path: Path, monkeypatch) -> None:
    """Only a corrupt catalog is thrown away: one locked by another process's long write is not
    (deleting it would pull the database, and its committed WAL, from under that process)."""
    import sqlite3

    from reme.app.application import ComponentError
    from reme.index.store import MetadataStore

    root = tmp_path / "ws"
    write_workspace(root, 1)
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        app.component("index").service.ensure_ready()
    holder = sqlite3.connect(root / "metadata" / "index.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    monkeypatch.setattr(MetadataStore, "BUSY_TIMEOUT_S", 0.2)
    try:
        with pytest.raises(ComponentError, match="locked"):
            async with ReMe(workspace_dir=root, timezone="UTC"):
                pass
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert MetadataStore(root / "metadata" / "index.sqlite3").counts()["files"] == 31  # + _buckets.md


async def test_changed_transcript_chunk_size_rebuilds(tmp_path: Path) -> None:
    """transcript_chunk_chars is part of the index layout: changing it re-chunks the transcripts."""
    import json

    root = tmp_path / "ws"
    (root / "session" / "dialog").mkdir(parents=True)
    lines = [
        json.dumps({"id": f"m{i}", "role": "user", "content": f"message {i} " + "z" * 80, "created_at": "t"})
        for i in range(12)
    ]
    (root / "session" / "dialog" / "s1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    counts = []
    for size in (400, 100):
        settings = {"components.index.transcript_chunk_chars": size}
        async with ReMe(workspace_dir=root, timezone="UTC", **settings) as app:
            index = app.component("index").service
            index.ensure_ready()
            counts.append(index.store.counts()["chunks"])
    assert counts[1] > counts[0] >= 1

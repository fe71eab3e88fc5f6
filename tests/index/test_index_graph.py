"""Link graph through the index component: pending ↔ real edges, inbound links, sync_paths."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def write(root: Path, path: str, text: str) -> None:
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(text, encoding="utf-8")


@pytest.fixture
def index(app):
    return app.component("index").service


def pending(index) -> set[tuple[str, str]]:
    return {(edge.source, edge.target) for edge in index.graph.pending_edges()}


def test_edge_is_pending_until_target_appears_and_again_after_delete(app, index) -> None:
    root = app.workspace_dir
    write(root, "daily/2026-06-01/a.md", "See [[digest/wiki/b.md]] and ![[resource/2026-06-01/r.pdf]].\n")
    index.sync_paths(["daily/2026-06-01/a.md"])
    assert pending(index) == {
        ("daily/2026-06-01/a.md", "digest/wiki/b.md"),
        ("daily/2026-06-01/a.md", "resource/2026-06-01/r.pdf"),
    }

    write(root, "digest/wiki/b.md", "---\nname: B\n---\nbody\n")
    index.sync_paths(["digest/wiki/b.md"])
    write(root, "resource/2026-06-01/r.pdf", "%PDF")  # not indexed: existence is read from disk
    assert pending(index) == set()
    assert index.graph.exists("digest/wiki/b.md")
    assert [link.source for link in index.graph.inlinks("digest/wiki/b.md")] == ["daily/2026-06-01/a.md"]

    os.remove(root / "digest/wiki/b.md")
    assert len(index.sync_paths(["digest/wiki/b.md"]).deleted) == 1
    assert pending(index) == {("daily/2026-06-01/a.md", "digest/wiki/b.md")}
    # the source's edges survive the target's deletion (it is the source's text that holds them)
    assert [link.target for link in index.graph.outlinks("daily/2026-06-01/a.md")] == [
        "digest/wiki/b.md",
        "resource/2026-06-01/r.pdf",
    ]


def test_editing_the_source_replaces_its_edges(app, index) -> None:
    root = app.workspace_dir
    write(root, "digest/x.md", "[[digest/y.md]]\nis_a:: [[digest/z.md]]\n")
    index.sync_paths(["digest/x.md"])
    assert {(link.target, link.predicate) for link in index.graph.outlinks("digest/x.md")} == {
        ("digest/y.md", None),
        ("digest/z.md", "is_a"),
    }
    write(root, "digest/x.md", "now only [[digest/w.md]] and `[[digest/code.md]]`\n")
    index.sync_paths(["digest/x.md"])
    assert [link.target for link in index.graph.outlinks("digest/x.md")] == ["digest/w.md"]
    assert index.graph.inlinks("digest/y.md") == []


def test_front_matter_links_are_typed_edges(app, index) -> None:
    write(
        app.workspace_dir,
        "daily/2026-06-01/card.md",
        "---\nsource_conversation: '[[session/dialog/s1.jsonl]]'\n---\ntext\n",
    )
    index.sync_paths("daily/2026-06-01/card.md")
    [link] = index.graph.outlinks("daily/2026-06-01/card.md")
    assert (link.target, link.predicate) == ("session/dialog/s1.jsonl", "source_conversation")


def test_inbound_of_a_file_and_of_a_folder(app, index) -> None:
    root = app.workspace_dir
    write(
        root,
        "daily/2026-06-01/a.md",
        "[[digest/wiki/b.md]] [[digest/wiki/sub/c.md#h]] [[digest/wikipedia.md]]\n",
    )
    write(root, "digest/other.md", "[[digest/wiki/b.md|B]] and again [[digest/wiki/b.md]]\n")
    index.sync_paths(["daily", "digest"])
    assert index.inbound("digest/wiki/b.md") == [
        {
            "source_path": "daily/2026-06-01/a.md",
            "target_path": "digest/wiki/b.md",
            "resolved_path": "digest/wiki/b.md",
        },
        {
            "source_path": "digest/other.md",
            "target_path": "digest/wiki/b.md",
            "resolved_path": "digest/wiki/b.md",
        },
    ]
    assert index.inbound("digest/wiki/") == [
        {
            "source_path": "daily/2026-06-01/a.md",
            "target_path": "digest/wiki/b.md",
            "resolved_path": "digest/wiki/b.md",
        },
        {
            "source_path": "daily/2026-06-01/a.md",
            "target_path": "digest/wiki/sub/c.md",
            "resolved_path": "digest/wiki/sub/c.md",
        },
        {
            "source_path": "digest/other.md",
            "target_path": "digest/wiki/b.md",
            "resolved_path": "digest/wiki/b.md",
        },
    ]
    with pytest.raises(ValueError):
        index.inbound("../outside.md")


def test_sync_paths_is_a_cheap_no_op_when_unchanged_and_handles_folders(app, index) -> None:
    root = app.workspace_dir
    index.ensure_ready()  # the first call reconciles the whole workspace; later ones sync what they name
    os.remove(root / "digest/_buckets.md")  # the generated bucket page; this test counts its own files
    index.sync_paths(["digest/_buckets.md"])
    write(root, "digest/t/a.md", "alpha\n")
    write(root, "digest/t/b.md", "beta\n")
    assert len(index.sync_paths(["digest/t"]).indexed) == 2
    assert index.sync_paths(["digest/t/a.md", "digest/t/b.md"]).to_dict() == {
        "indexed": 0,
        "deleted": 0,
        "unchanged": 2,
    }
    for name in ("a.md", "b.md"):
        os.remove(root / "digest/t" / name)
    os.rmdir(root / "digest/t")
    assert len(index.sync_paths(["digest/t"]).deleted) == 2  # a deleted folder: its catalogued files go
    assert index.stats()["files"] == 0


def test_unreadable_files_are_catalogued_with_an_error_not_raised(app, index) -> None:
    root = app.workspace_dir
    write(root, "digest/bad-yaml.md", "---\nname: [unclosed\n---\nsearchable body kiwi\n")
    (root / "digest/binary.md").write_bytes(b"\xff\xfe\x00kiwi")
    index.sync_paths(["digest/bad-yaml.md", "digest/binary.md"])
    bad = index.store.file("digest/bad-yaml.md")
    assert bad is not None and "YAML" in bad.error
    assert index.store.file("digest/binary.md").error
    hits = index.keyword.search("kiwi", 5)
    assert len(hits) == 1  # the body of the bad-YAML note is still searchable


def test_reindex_reports_progress_and_rebuilds_everything(app, index) -> None:
    for i in range(5):
        write(app.workspace_dir, f"digest/p{i}.md", f"note {i} links [[digest/p{(i + 1) % 5}.md]]")
    index.ensure_ready()
    calls: list[tuple[int, int]] = []
    report = index.reindex(lambda done, total: calls.append((done, total)))
    assert sorted(report.indexed) == ["digest/_buckets.md"] + [f"digest/p{i}.md" for i in range(5)]
    assert calls[-1] == (6, 6)  # with the generated bucket page
    assert index.stats()["links"] == 5 and index.graph.pending_edges() == []


def test_a_file_that_cannot_be_indexed_does_not_block_the_others(app, index, monkeypatch) -> None:
    import reme.index.sync as sync

    real_chunk_windows = sync.chunk_windows

    def failing_for_one(path: str, text: str, **kwargs):
        yield from real_chunk_windows(path, text, **kwargs)  # chunks reach the engine first ...
        if path == "digest/poison.md":
            raise RecursionError("pathological nesting")  # ... then a later window fails

    monkeypatch.setattr(sync, "chunk_windows", failing_for_one)
    write(app.workspace_dir, "digest/poison.md", "> " * 50 + "kiwi")
    write(app.workspace_dir, "digest/fine.md", "kiwi")
    index.ensure_ready()
    assert "RecursionError" in index.store.file("digest/poison.md").error
    assert index.store.chunks_by_id([c for c, _ in index.keyword.search("kiwi", 5)]).keys()
    assert {
        row.path for row in index.store.chunks_by_id([c for c, _ in index.keyword.search("kiwi", 5)]).values()
    } == {"digest/fine.md"}  # the failed file's first window is not left in the engine
    assert index.store.intents() == [] and index.health()["status"] == "ok"
    monkeypatch.setattr(sync, "chunk_windows", real_chunk_windows)
    write(app.workspace_dir, "digest/poison.md", "kiwi again")
    index.sync_paths(["digest/poison.md"])
    assert index.store.file("digest/poison.md").error is None


def test_searches_do_not_wait_for_a_reconcile_running_elsewhere(app, index) -> None:
    import threading

    write(app.workspace_dir, "digest/a.md", "kiwi")
    started, release = threading.Event(), threading.Event()

    def slow_progress(done: int, total: int) -> None:  # the update loop's long first reconcile
        started.set()
        release.wait(30)

    loop = threading.Thread(target=index.ensure_ready, args=(slow_progress,))
    loop.start()
    try:
        assert started.wait(30)
        assert index.ensure_ready(wait=False) is None and not index.ready
    finally:
        release.set()
        loop.join(30)
    assert index.ready and index.store.file("digest/a.md") is not None


def test_a_catalog_of_another_schema_version_is_started_afresh(tmp_path) -> None:
    from reme.index.store import FileRecord, FileRow, MetadataStore

    store = MetadataStore(tmp_path / "index.sqlite3")
    store.apply([FileRecord(FileRow("digest/a.md", 1, 1))], [], [])
    store.set_meta("schema_version", "0")
    store.close()
    reopened = MetadataStore(tmp_path / "index.sqlite3")
    assert reopened.counts()["files"] == 0 and reopened.get_meta("schema_version") != "0"


def test_sync_paths_never_follows_a_symlink(app, index, tmp_path) -> None:
    """What `reconcile` cannot see (it never follows links) `sync_paths` must not index either:
    a linked folder may lead outside the workspace."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("zebra password")
    (app.workspace_dir / "daily").mkdir(exist_ok=True)
    (app.workspace_dir / "daily/link").symlink_to(outside, target_is_directory=True)
    index.ensure_ready()
    assert len(index.sync_paths(["daily/link"]).indexed) == 0
    assert len(index.sync_paths(["daily/link/secret.md"]).indexed) == 0
    assert index.keyword.search("zebra", 5) == [] and index.store.file("daily/link/secret.md") is None


def test_links_out_of_the_workspace_never_exist(app, index, tmp_path) -> None:
    """A note may hold any link text; the graph must not probe the disk outside the workspace."""
    outside = tmp_path / "outside.md"
    outside.write_text("real file outside")
    escape = os.path.relpath(outside, app.workspace_dir)
    assert escape.startswith("..")
    write(app.workspace_dir, "digest/a.md", f"[[{outside}]] [[{escape}]]\n")
    index.sync_paths(["digest/a.md"])
    assert not index.graph.exists(str(outside)) and not index.graph.exists(escape)
    nodes, _ = index.graph.traverse(["digest/a.md"], 1, "forward")
    assert [(n.path, n.exists) for n in nodes] == [
        ("digest/a.md", True),
        (str(outside), False),
        (escape, False),
    ]


def test_a_linked_source_folder_is_not_walked(app, index, tmp_path) -> None:
    """Reconcile and sync_paths agree on links: a linked digest/ gives nothing to index, every time."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "a.md").write_text("zebra")
    digest = app.workspace_dir / "digest"
    if digest.exists():
        shutil.rmtree(digest)  # holds only the generated _buckets.md
    digest.symlink_to(outside, target_is_directory=True)
    index.ensure_ready()
    report = index.indexer.reconcile()
    assert (report.indexed, report.deleted, report.unchanged) == ([], [], 0)
    assert index.keyword.search("zebra", 5) == []

"""Multi-file transactions: all files change or none; a dead writer's half-done one is rolled back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import reme.workspace.transaction as transaction
from reme.errors import Conflict, ReMeError
from reme.workspace.layout import Workspace
from reme.workspace.links import ScanLinks
from reme.workspace.textio import sha256_of
from reme.workspace.transaction import MAX_FILES, Change, commit, journal_dir, recover


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.ensure_layout()
    return workspace


def put(ws: Workspace, path: str, text: str) -> str:
    target = ws.root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return sha256_of(text)


def test_writes_creates_and_deletes_together(ws: Workspace) -> None:
    old = put(ws, "digest/wiki/a.md", "old a\n")
    gone = put(ws, "digest/wiki/b.md", "b\n")
    done = commit(
        ws,
        ScanLinks(ws),
        [
            Change("digest/wiki/a.md", "new a\n", old),
            Change("digest/wiki/c.md", "c\n", None),
            Change("digest/wiki/b.md", None, gone),
        ],
    )
    assert [entry["sha256"] for entry in done] == [sha256_of("new a\n"), sha256_of("c\n"), None]
    assert (ws.root / "digest/wiki/a.md").read_text() == "new a\n" and (
        ws.root / "digest/wiki/c.md"
    ).is_file()
    assert not (ws.root / "digest/wiki/b.md").exists() and not list(journal_dir(ws).glob("*.json"))


@pytest.mark.parametrize("conflict", ["changed", "exists", "gone"])
def test_one_stale_file_writes_nothing(ws: Workspace, conflict: str) -> None:
    old = put(ws, "digest/wiki/a.md", "a\n")
    if conflict == "exists":
        put(ws, "digest/wiki/c.md", "someone else's\n")
    changes = [Change("digest/wiki/c.md", "c\n", None), Change("digest/wiki/a.md", "new\n", old)]
    if conflict == "changed":
        put(ws, "digest/wiki/a.md", "edited meanwhile\n")
    if conflict == "gone":
        (ws.root / "digest/wiki/a.md").unlink()
    before = {p: p.read_bytes() for p in (ws.root / "digest").rglob("*.md")}
    with pytest.raises(Conflict):
        commit(ws, ScanLinks(ws), changes)
    assert {p: p.read_bytes() for p in (ws.root / "digest").rglob("*.md")} == before


def test_bad_requests_are_refused(ws: Workspace) -> None:
    with pytest.raises(ReMeError, match="same file twice"):
        commit(ws, ScanLinks(ws), [Change("x.md", "a", None), Change("x.md", "b", None)])
    with pytest.raises(ValueError):
        commit(ws, ScanLinks(ws), [Change("metadata/x.json", "a", None)])
    with pytest.raises(ReMeError, match="at most 512 files, got 513; split the work"):
        commit(ws, ScanLinks(ws), [Change(f"n/{i}.md", "a", None) for i in range(MAX_FILES + 1)])


def test_a_dead_writers_half_done_transaction_is_rolled_back(ws: Workspace) -> None:
    put(ws, "digest/wiki/a.md", "new a, written before the kill\n")
    put(ws, "digest/wiki/c.md", "created before the kill\n")
    folder = journal_dir(ws)
    folder.mkdir(parents=True)
    intent = {
        "id": "dead",
        "files": [
            {"path": "digest/wiki/c.md", "before": None},
            {"path": "digest/wiki/a.md", "before": "old a\n"},
            {"path": "digest/wiki/d.md", "before": None},  # not reached by the writer
        ],
    }
    (folder / "dead.json").write_text(json.dumps(intent), encoding="utf-8")
    (folder / "junk.json").write_text("{not json", encoding="utf-8")
    reports = recover(ws)
    assert {r["id"]: r["state"] for r in reports} == {"dead": "rolled_back", "junk": "unreadable"}
    assert (ws.root / "digest/wiki/a.md").read_text() == "old a\n" and not (
        ws.root / "digest/wiki/c.md"
    ).exists()
    assert not list(folder.glob("*.json")) and recover(ws) == []


def test_a_file_edited_after_the_crash_is_kept_and_reported(ws: Workspace) -> None:
    put(ws, "digest/wiki/a.md", "new a, written before the kill\n")
    put(ws, "digest/wiki/c.md", "created before the kill, then edited by a person\n")
    folder = journal_dir(ws)
    folder.mkdir(parents=True)
    intent = {
        "id": "dead",
        "files": [
            {
                "path": "digest/wiki/c.md",
                "before": None,
                "after_sha256": sha256_of("created before the kill\n"),
            },
            {
                "path": "digest/wiki/a.md",
                "before": "old a\n",
                "after_sha256": sha256_of("new a, written before the kill\n"),
            },
            {"path": "digest/wiki/d.md", "before": None, "after_sha256": sha256_of("d\n")},  # not reached
        ],
    }
    (folder / "dead.json").write_text(json.dumps(intent), encoding="utf-8")
    [report] = recover(ws)
    assert report["state"] == "conflict" and report["conflicts"] == ["digest/wiki/c.md"]
    assert "digest/wiki/c.md" in report["error"]
    assert (ws.root / "digest/wiki/c.md").read_text() == "created before the kill, then edited by a person\n"
    assert (ws.root / "digest/wiki/a.md").read_text() == "old a\n"  # what the writer did is undone
    assert not (ws.root / "digest/wiki/d.md").exists() and not list(folder.glob("*.json"))


def test_a_write_that_fails_part_way_rolls_back_what_it_wrote(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = put(ws, "digest/wiki/a.md", "old a\n")
    apply_change, calls = transaction.apply_change, []

    def full_disk(w: Workspace, relative: str, content: str | None) -> None:
        calls.append(relative)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        apply_change(w, relative, content)

    monkeypatch.setattr(transaction, "apply_change", full_disk)
    before = {p: p.read_bytes() for p in (ws.root / "digest").rglob("*.md")}
    with pytest.raises(OSError, match="No space"):
        commit(
            ws,
            ScanLinks(ws),
            [Change("digest/wiki/c.md", "c\n", None), Change("digest/wiki/a.md", "new a\n", old)],
        )
    assert {p: p.read_bytes() for p in (ws.root / "digest").rglob("*.md")} == before
    assert not list(journal_dir(ws).iterdir())  # no intent, no lock left for recovery

"""A writer killed mid-way (issue 11 items 3, 8): half-done moves are finished, leftovers removed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reme import ReMe
from reme.workspace import atomic
from reme.workspace.layout import Workspace
from reme.workspace.links import ScanLinks
from reme.workspace.moving import move, recover_moves

INBOUND = 40

# Moves digest/old.md to digest/new.md and kills itself (SIGKILL) at the chosen atomic write: the
# first is the move intent, the rest are the link rewrites.
KILLED_MOVE = """
import os, signal, sys
from reme.workspace import move_journal, moving
from reme.workspace.layout import Workspace
from reme.workspace.links import ScanLinks

kill_at = int(sys.argv[2])
writes = 0
real_write = moving.atomic_write


def dying_write(path, data, root=None):
    global writes
    writes += 1
    if writes == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    real_write(path, data, root)


moving.atomic_write = move_journal.atomic_write = dying_write
ws = Workspace(sys.argv[1])
moving.move(ws, ScanLinks(ws), "digest/old.md", "digest/new.md")
"""


def linked_workspace(root: Path) -> None:
    (root / "digest").mkdir(parents=True)
    (root / "daily").mkdir()
    (root / "digest/old.md").write_text("---\nname: Old\n---\nthe note\n")
    for i in range(INBOUND):
        (root / f"daily/ref-{i:03}.md").write_text(
            f"ref {i}: [[digest/old.md]] and [[digest/old.md|again]]\n"
        )


def killed_move(root: Path, kill_at: int) -> None:
    done = subprocess.run([sys.executable, "-c", KILLED_MOVE, str(root), str(kill_at)], timeout=60)
    assert done.returncode == -9


def links_to(root: Path, target: str) -> int:
    return sum(f.read_text().count(f"[[{target}") for f in (root / "daily").glob("ref-*.md"))


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", [2, 3, 17, INBOUND + 1])
async def test_a_move_killed_while_rewriting_links_is_finished_and_reported_at_start(tmp_path, kill_at):
    root = tmp_path / "ws"
    linked_workspace(root)
    killed_move(root, kill_at)
    assert (root / "digest/new.md").exists() and links_to(root, "digest/old.md") > 0  # half done
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        assert links_to(root, "digest/old.md") == 0
        assert links_to(root, "digest/new.md") == 2 * INBOUND
        health = (await app.run("health_check")).metadata
        (recovered,) = health["components"]["workspace"]["recovered_moves"]
        assert recovered["state"] == "finished" and recovered["src"] == "digest/old.md"
        assert len(recovered["retargeted_files"]) == INBOUND - (kill_at - 2)
        assert list((root / "metadata/moves").iterdir()) == []
        stat = await app.run("stat", path="digest/new.md")
        assert stat.metadata["inlink_count"] == INBOUND  # `[[x]]` and `[[x|again]]` are one edge


@pytest.mark.slow
async def test_a_move_killed_before_its_rename_changes_nothing_and_is_dropped(tmp_path):
    root = tmp_path / "ws"
    linked_workspace(root)
    before = {p: p.read_bytes() for p in root.rglob("*.md")}
    killed_move(root, 1)  # dies writing its intent: nothing renamed, nothing rewritten
    assert {p: p.read_bytes() for p in root.rglob("*.md")} == before
    killed_move(root, 2)  # intent written and the file renamed: killed at the first rewrite
    (root / "digest/new.md").rename(root / "digest/old.md")  # as if the rename had never happened
    ws = Workspace(root)
    (report,) = recover_moves(ws, ScanLinks(ws))
    assert report["state"] == "not_moved"
    assert {p: p.read_bytes() for p in root.rglob("*.md")} == before
    assert list((root / "metadata/moves").glob("*.json")) == []


def test_a_live_move_is_not_recovered_by_another_writer(tmp_path):
    root = tmp_path / "ws"
    linked_workspace(root)
    ws = Workspace(root)
    seen: list[list] = []
    real = atomic.atomic_write

    def watching_write(path, data, root=None):
        if path.suffix == ".md":
            seen.append(recover_moves(ws, ScanLinks(ws)))  # another writer looks while the move runs
        real(path, data, root)

    import reme.workspace.moving as moving

    moving.atomic_write = watching_write
    try:
        move(ws, ScanLinks(ws), "digest/old.md", "digest/new.md")
    finally:
        moving.atomic_write = real
    assert seen and all(report == [] for report in seen)
    assert links_to(root, "digest/new.md") == 2 * INBOUND


async def test_move_into_a_folder_named_with_a_trailing_slash(tmp_path):
    root = tmp_path / "ws"
    linked_workspace(root)
    async with ReMe(workspace_dir=root, timezone="UTC", **{"components.index.enabled": False}) as app:
        moved = await app.run("move", src="digest/old.md", dst="daily/archive/")
        assert moved.success and moved.metadata["dst"] == "daily/archive/old.md"
        assert (root / "daily/archive/old.md").is_file() and not (root / "daily.md").exists()
        assert not (root / "daily/archive.md").exists()
        assert links_to(root, "daily/archive/old.md") == 2 * INBOUND


@pytest.mark.slow
async def test_temporary_files_of_a_dead_writer_are_removed_at_start(tmp_path):
    root = tmp_path / "ws"
    linked_workspace(root)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    leftovers = [
        root / f"daily/.ref-001.md.{pid}.abcd1234{atomic.TEMP_SUFFIX}",
        root / "digest" / (f".old.md.{pid}.zz_1x9q0{atomic.TEMP_SUFFIX}"),
    ]
    for leftover in leftovers:
        leftover.write_text("half a no")
    alive = root / f"daily/.ref-002.md.{os.getpid()}.keep0000{atomic.TEMP_SUFFIX}"
    alive.write_text("being written")
    async with ReMe(workspace_dir=root, timezone="UTC"):
        assert not any(leftover.exists() for leftover in leftovers)
        assert alive.exists()  # a live writer's file (this process) is left alone


@pytest.mark.slow
async def test_a_live_service_finishes_a_move_another_process_left_half_done(tmp_path):
    root = tmp_path / "ws"
    linked_workspace(root)
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        killed_move(root, 9)
        assert links_to(root, "digest/old.md") > 0
        health = (await app.run("health_check")).metadata["components"]["workspace"]
        assert [move["state"] for move in health["recovered_moves"]] == ["finished"]
        assert links_to(root, "digest/old.md") == 0
        hits = await app.run("search", query="ref 7")
        assert "[[digest/new.md]]" in hits.metadata["results"][0]["text"]

"""A folder flipped between a real folder and a symlink to the outside while writes run (issue 11
item 7): no write may land outside the workspace."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from reme.workspace import writing
from reme.workspace.layout import Workspace
from reme.workspace.links import ScanLinks

WRITES = 400


def flipper(root: Path, outside: Path, stop: threading.Event) -> None:
    """Swap `digest/flip` between the real folder and a link to `outside`, as fast as it can."""
    flip, parked = root / "digest/flip", root / "digest/parked"
    while not stop.is_set():
        with contextlib.suppress(OSError):
            os.rename(flip, parked)
            os.symlink(outside, flip)
        with contextlib.suppress(OSError):
            os.unlink(flip)
            os.rename(parked, flip)


def test_writes_never_land_outside_while_a_folder_flips_to_a_symlink(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    outside.mkdir()
    ws = Workspace(root)
    ws.ensure_layout()
    (root / "digest/flip").mkdir()
    stop = threading.Event()
    thread = threading.Thread(target=flipper, args=(root, outside, stop))
    thread.start()
    written, refused = 0, 0
    try:
        for i in range(WRITES):
            try:
                writing.write(ws, ScanLinks(ws), f"digest/flip/note-{i}.md", f"note {i}\n")
                written += 1
            except (OSError, ValueError):
                refused += 1  # refused or raced: a clear failure, nothing written outside
    finally:
        stop.set()
        thread.join()
    assert list(outside.iterdir()) == []
    inside = {p.name for folder in ("flip", "parked") if (root / "digest" / folder).is_dir()
              for p in (root / "digest" / folder).iterdir()}  # fmt: skip
    assert written > 0 and written + refused == WRITES
    assert len(inside) == written  # every acknowledged write is in the workspace


def test_deletes_and_moves_never_touch_the_outside_while_a_folder_flips(tmp_path: Path) -> None:
    from reme.workspace.moving import delete, move

    root, outside = tmp_path / "ws", tmp_path / "outside"
    outside.mkdir()
    ws = Workspace(root)
    ws.ensure_layout()
    (root / "digest/flip").mkdir()
    for i in range(WRITES // 2):
        (root / f"digest/flip/del-{i}.md").write_text("mine\n")
        (root / f"digest/flip/mv-{i}.md").write_text("mine\n")
        (outside / f"del-{i}.md").write_text("bait\n")  # same names outside: must survive
        (outside / f"mv-{i}.md").write_text("bait\n")
    bait = {p.name: p.read_text() for p in outside.iterdir()}
    stop = threading.Event()
    thread = threading.Thread(target=flipper, args=(root, outside, stop))
    thread.start()
    try:
        for i in range(WRITES // 2):
            with contextlib.suppress(OSError, ValueError):
                delete(ws, ScanLinks(ws), f"digest/flip/del-{i}.md")
            with contextlib.suppress(OSError, ValueError):
                move(ws, ScanLinks(ws), f"digest/flip/mv-{i}.md", f"digest/flip/moved-{i}.md", retarget=False)
    finally:
        stop.set()
        thread.join()
    assert {p.name: p.read_text() for p in outside.iterdir()} == bait

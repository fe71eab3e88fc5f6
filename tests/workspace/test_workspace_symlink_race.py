"""A folder flipped between a real folder and a symlink to the outside while writes run (issue 11
item 7): no write, delete or move may touch anything outside the workspace."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from reme.workspace import writing
from reme.workspace.layout import Workspace
from reme.workspace.links import ScanLinks
from reme.workspace.moving import delete, move

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


@contextlib.contextmanager
def flipping(ws: Workspace, outside: Path) -> Iterator[None]:
    """`digest/flip` flips for the duration of the block."""
    stop = threading.Event()
    thread = threading.Thread(target=flipper, args=(ws.root, outside, stop))
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def setup(tmp_path: Path) -> tuple[Workspace, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = Workspace(tmp_path / "ws")
    ws.ensure_layout()
    (ws.root / "digest/flip").mkdir()
    return ws, outside


def test_writes_never_land_outside_while_a_folder_flips_to_a_symlink(tmp_path: Path) -> None:
    ws, outside = setup(tmp_path)
    written, refused = 0, 0
    with flipping(ws, outside):
        for i in range(WRITES):
            try:
                writing.write(ws, ScanLinks(ws), f"digest/flip/note-{i}.md", f"note {i}\n")
                written += 1
            except (OSError, ValueError):
                refused += 1  # refused or raced: a clear failure, nothing written outside
    assert list(outside.iterdir()) == []
    inside = {p.name for folder in ("flip", "parked") if (ws.root / "digest" / folder).is_dir()
              for p in (ws.root / "digest" / folder).iterdir()}  # fmt: skip
    assert written > 0 and written + refused == WRITES
    assert len(inside) == written  # every acknowledged write is in the workspace


def test_deletes_and_moves_never_touch_the_outside_while_a_folder_flips(tmp_path: Path) -> None:
    ws, outside = setup(tmp_path)
    for i in range(WRITES // 2):
        for name in (f"del-{i}.md", f"mv-{i}.md"):
            (ws.root / "digest/flip" / name).write_text("mine\n")
            (outside / name).write_text("bait\n")  # the same names outside: they must survive
    bait = {p.name: p.read_text() for p in outside.iterdir()}
    with flipping(ws, outside):
        for i in range(WRITES // 2):
            with contextlib.suppress(OSError, ValueError):
                delete(ws, ScanLinks(ws), f"digest/flip/del-{i}.md")
            with contextlib.suppress(OSError, ValueError):
                move(ws, ScanLinks(ws), f"digest/flip/mv-{i}.md", f"digest/flip/moved-{i}.md", retarget=False)
    assert {p.name: p.read_text() for p in outside.iterdir()} == bait

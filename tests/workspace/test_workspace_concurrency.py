"""Serialised, atomic writes (docs/spec.md §14): concurrent processes lose nothing, a killed writer corrupts nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from reme.workspace import frontmatter, writing
from reme.workspace.layout import Workspace
from reme.workspace.links import ScanLinks

NOTES = ("digest/shared-a.md", "digest/shared-b.md")
END = "<!-- end -->\n"

WORKER = textwrap.dedent(
    """
    import sys
    from reme.workspace import frontmatter, writing
    from reme.workspace.layout import Workspace
    from reme.workspace.links import ScanLinks

    root, tag, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ws = Workspace(root)
    links = ScanLinks(ws)
    notes = ("digest/shared-a.md", "digest/shared-b.md")
    for i in range(rounds):
        note = notes[i % 2]
        writing.edit(ws, links, note, "<!-- end -->", f"- {tag} {i}\\n<!-- end -->")
        writing.frontmatter_update(ws, links, note, {f"{tag}_{i}": i})
        text = (ws.root / notes[(i + 1) % 2]).read_text(encoding="utf-8")  # unlocked read of the other note
        document = frontmatter.parse(text)
        if document.error or not text.endswith("<!-- end -->\\n"):
            sys.exit(f"partial file seen: {text!r}")
    """
)


@pytest.mark.slow
def test_two_processes_editing_the_same_notes_lose_no_write(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_layout()
    for note in NOTES:
        (ws.root / note).write_text("---\nname: shared\n---\n" + END)
    rounds = 40
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(ws.root), tag, str(rounds)], stderr=subprocess.PIPE, text=True
        )
        for tag in ("p1", "p2")
    ]
    for worker in workers:
        _, errors = worker.communicate(timeout=120)
        assert worker.returncode == 0, errors
    for index, note in enumerate(NOTES):
        text = (ws.root / note).read_text()
        document = frontmatter.parse(text)
        mine = [i for i in range(rounds) if i % 2 == index]
        expected_lines = {f"- {tag} {i}" for tag in ("p1", "p2") for i in mine}
        assert set(document.body.splitlines()) == expected_lines | {END.strip()}
        assert len(document.body.splitlines()) == len(expected_lines) + 1
        assert document.metadata == {
            "name": "shared",
            **{f"{tag}_{i}": i for tag in ("p1", "p2") for i in mine},
        }


async def test_concurrent_jobs_in_one_process_are_serialised(app):
    (app.workspace_dir / "digest/log.md").write_text(END)
    results = await asyncio.gather(
        *(
            app.run("edit", path="digest/log.md", old="<!-- end -->", new=f"- {i}\n<!-- end -->")
            for i in range(40)
        )
    )
    assert all(result.success for result in results)
    lines = (app.workspace_dir / "digest/log.md").read_text().splitlines()
    assert sorted(lines[:-1], key=lambda line: int(line[2:])) == [f"- {i}" for i in range(40)]


CRASH_AT_RENAME = textwrap.dedent(
    """
    import os, signal, sys
    from reme.workspace import writing
    from reme.workspace.layout import Workspace
    from reme.workspace.links import ScanLinks

    keep = os.replace

    def die(src, dst, **kwargs):
        if os.path.basename(str(dst)) != "note.md":  # the previous version is kept first (issue 23.11)
            return keep(src, dst, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    os.replace = die  # the new text is fully in the temporary file; the note's rename never happens
    ws = Workspace(sys.argv[1])
    writing.write(ws, ScanLinks(ws), "digest/note.md", "NEW " * 100000)
    """
)


@pytest.mark.slow
def test_a_writer_killed_before_the_rename_leaves_the_old_file(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_layout()
    (ws.root / "digest/note.md").write_text("old text\n")
    result = subprocess.run([sys.executable, "-c", CRASH_AT_RENAME, str(ws.root)], timeout=60)
    assert result.returncode == -signal.SIGKILL
    assert (ws.root / "digest/note.md").read_text() == "old text\n"
    leftovers = [p for p in (ws.root / "digest").iterdir() if p.name != "note.md"]
    assert len(leftovers) == 1 and leftovers[0].name.startswith(".note.md.")
    [kept] = (ws.root / "journal/replaced/digest/note.md").iterdir()
    assert kept.read_text() == "old text\n"
    os.utime(leftovers[0], (time.time() - 3600, time.time() - 3600))
    writing.write(
        ws, ScanLinks(ws), "digest/note.md", "next\n"
    )  # the next write sweeps the dead writer's file
    assert [p.name for p in (ws.root / "digest").iterdir()] == ["note.md"]


WRITE_LOOP = textwrap.dedent(
    """
    import sys
    from reme.workspace import writing
    from reme.workspace.layout import Workspace
    from reme.workspace.links import ScanLinks

    ws = Workspace(sys.argv[1])
    links = ScanLinks(ws)
    print("ready", flush=True)
    version = 0
    while True:
        version += 1
        writing.write(ws, links, "digest/note.md", (f"v{version} " * 400000) + "end\\n")
    """
)


@pytest.mark.slow
def test_a_writer_killed_at_any_moment_leaves_a_complete_file(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_layout()
    note = ws.root / "digest/note.md"
    note.write_text("v0 end\n")
    for delay in (0.15, 0.4, 0.9):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITE_LOOP, str(ws.root)], stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(delay)
        writer.kill()
        writer.wait(30)
        assert _is_complete(note.read_text())


def _is_complete(text: str) -> bool:
    """A whole version: `vN ` repeated (or the seed) and the closing `end`."""
    if text == "v0 end\n":
        return True
    words = text.split(" ")
    return words[-1] == "end\n" and len(words) == 400001 and len(set(words[:-1])) == 1


def test_lock_files_live_under_metadata_locks(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_layout()
    other = Workspace(ws.root, lock_timeout=0.5)  # a second view of the same workspace in this process
    with (
        ws.lock("digest/a.md", "digest/b.md"),
        ws.lock("digest/a.md"),
        other.lock("digest/b.md"),
    ):  # re-entrant
        held = sorted(p.name for p in Path(ws.root / "metadata/locks").iterdir())
    assert held == sorted(ws.locks.lock_file(p).name for p in ("digest/a.md", "digest/b.md"))


HOLDER = textwrap.dedent(
    """
    import sys, time
    from reme.workspace.layout import Workspace

    ws = Workspace(sys.argv[1])
    with ws.lock("digest/busy.md"):
        print("holding", flush=True)
        time.sleep(float(sys.argv[2]))
    """
)


@pytest.mark.slow
def test_a_lock_held_by_another_process_times_out_cleanly_and_changes_nothing(tmp_path):
    from reme.workspace.locks import LockTimeoutError

    ws = Workspace(tmp_path / "ws", lock_timeout=0.3)
    ws.ensure_layout()
    (ws.root / "digest/busy.md").write_text("before\n")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(ws.root), "3"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        with pytest.raises(LockTimeoutError, match="digest/busy.md"):
            writing.edit(ws, ScanLinks(ws), "digest/busy.md", "before", "after")
        assert (ws.root / "digest/busy.md").read_text() == "before\n"
    finally:
        holder.kill()
        holder.wait(10)
    assert writing.edit(ws, ScanLinks(ws), "digest/busy.md", "before", "after")["count"] == 1


def test_stale_temporary_files_are_swept_once_per_folder_not_on_every_write(tmp_path, monkeypatch):
    """Listing a folder costs in proportion to its size; a write must not pay that every time."""
    from reme.workspace import atomic

    sweeps: list[Path] = []
    monkeypatch.setattr(atomic, "_remove_stale_temps", sweeps.append)
    for i in range(5):
        atomic.atomic_write(tmp_path / "many" / f"note-{i}.md", "text\n")
    atomic.atomic_write(tmp_path / "other" / "note.md", "text\n")
    assert sweeps == [tmp_path / "many", tmp_path / "other"]

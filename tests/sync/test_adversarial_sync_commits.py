"""Adversarial checks of how sync commits local changes (docs/sync.md, "Commits say what happened"):
a rename whose deletion and addition were written by two jobs (`move` then `write`, a rename by hand
then `edit`) must land in one commit, so that plain `git log --follow` on the workspace's repository
keeps the note's history from before the rename, while each job keeps its own commit and name.
Real jobs, real git, a bare remote in tmp_path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.sync.conftest import Machine, git

from reme import ReMe
from reme.workspace.write_log import note, running

NOTE = "# Solar\n\nThe sun is a star.\n\nIt is old.\n\nIt is hot.\n\nIt is far.\n"
CHANGED = NOTE.replace("It is hot.", "It is hot, said the job.")
INIT = "reme: the workspace as it was when sync started"


def _hand_write(app: ReMe, path: str, text: str) -> None:
    target = app.workspace_dir / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


async def _started(machine: Machine, remote: Path, notes: dict[str, str]) -> ReMe:
    """Machine a with these notes, initialised on the remote (one commit holding them)."""
    a = await machine("a")
    for path, text in notes.items():
        _hand_write(a, path, text)
    assert (await a.run("sync_init", remote=str(remote))).success
    return a


async def _synced(app: ReMe) -> list[str]:
    response = await app.run("sync")
    assert response.success and response.metadata["pushed"], response.answer
    return list(response.metadata["committed"])


def _follow(app: ReMe, path: str) -> list[tuple[str, list[str]]]:
    """`git log --follow --name-status` of `path`, newest first: (subject, name-status lines) a commit."""
    out = git(app.workspace_dir, "log", "--follow", "--name-status", "--format=%x1e%s", "--", path)
    entries = []
    for record in filter(None, out.split("\x1e")):
        subject, *lines = record.strip().splitlines()
        entries.append((subject, [line for line in lines if line]))
    return entries


def _renamed(status: list[str], old: str, new: str) -> bool:
    return any(re.fullmatch(rf"R\d+\t{re.escape(old)}\t{re.escape(new)}", line) for line in status)


def _job(app: ReMe, commit: str) -> tuple[list[str], str, set[str]]:
    """A commit's ReMe-Job trailer values, its subject and the paths it changed (renames as two)."""
    jobs = git(app.workspace_dir, "show", "-s", "--format=%(trailers:key=ReMe-Job,valueonly)", commit).split()
    subject = git(app.workspace_dir, "show", "-s", "--format=%s", commit).strip()
    paths = set(
        git(
            app.workspace_dir, "diff-tree", "--no-commit-id", "--no-renames", "--name-only", "-r", commit
        ).split()
    )
    return jobs, subject, paths


REWRITTEN = "# Sun\n\nNothing of the old text is left in this version at all.\n"


@pytest.mark.parametrize(
    ("job", "params", "text"),
    [
        ("edit", {"old": "It is hot.", "new": "It is hot, said the job."}, CHANGED),
        ("write", {"content": CHANGED}, CHANGED),
        ("write", {"content": REWRITTEN}, REWRITTEN),  # nothing in common: found by the copy write keeps
    ],
    ids=["edit", "write", "write-all-new"],
)
async def test_a_move_then_a_job_writing_the_new_path_keeps_the_history_for_git_log_follow(
    machine: Machine, remote: Path, job: str, params: dict[str, str], text: str
) -> None:
    """The move's commit is the whole rename (the content as it was), the job's commit changes the
    note under its new name; each commit names its own job."""
    a = await _started(machine, remote, {"notes/solar.md": NOTE})
    assert (await a.run("move", src="notes/solar.md", dst="notes/sun.md")).success
    assert (await a.run(job, path="notes/sun.md", **params)).success
    committed = await _synced(a)

    follow = _follow(a, "notes/sun.md")
    assert [subject.split(":")[0] for subject, _ in follow] == [job, "move", INIT.split(":")[0]], follow
    assert follow[-1][0] == INIT and follow[-1][1] == ["A\tnotes/solar.md"]
    assert follow[1][1] == ["R100\tnotes/solar.md\tnotes/sun.md"], follow
    assert follow[0][1] == ["M\tnotes/sun.md"], follow
    by_job = {_job(a, commit)[0][0]: _job(a, commit) for commit in committed}
    assert set(by_job) == {"move", job}
    assert by_job["move"][1] == "move: 2 file(s)" and by_job["move"][2] == {"notes/solar.md", "notes/sun.md"}
    assert by_job[job][1].startswith(f"{job}: ") and "notes/sun.md" in by_job[job][2]
    kept = by_job[job][2] - {"notes/sun.md"}  # write keeps what it replaced (docs/overwrites.md)
    assert all(path.startswith("journal/replaced/notes/sun.md/") for path in kept) and len(kept) == (
        job == "write"
    )
    assert all(len(found[0]) == 1 for found in by_job.values())  # one job a commit
    assert (a.workspace_dir / "notes/sun.md").read_text() == text
    assert git(a.workspace_dir, "status", "--porcelain").strip() == ""


async def test_a_write_then_a_move_is_one_commit_that_git_follows(machine: Machine, remote: Path) -> None:
    a = await _started(machine, remote, {"notes/solar.md": NOTE})
    assert (await a.run("write", path="notes/solar.md", content=CHANGED)).success
    assert (await a.run("move", src="notes/solar.md", dst="notes/sun.md")).success
    await _synced(a)
    follow = _follow(a, "notes/sun.md")
    assert [subject for subject, _ in follow][-1] == INIT, follow
    assert follow[0][0].startswith("move: ") and _renamed(follow[0][1], "notes/solar.md", "notes/sun.md")


async def test_a_note_moved_twice_and_written_between_keeps_its_history(
    machine: Machine, remote: Path
) -> None:
    """move a→b, write b, move b→c, edit c, one sync: git follows c back to a; then once more over
    two syncs (move, sync, move and write, sync)."""
    a = await _started(machine, remote, {"notes/a.md": NOTE})
    assert (await a.run("move", src="notes/a.md", dst="notes/b.md")).success
    assert (await a.run("write", path="notes/b.md", content=CHANGED)).success
    assert (await a.run("move", src="notes/b.md", dst="notes/c.md")).success
    assert (await a.run("edit", path="notes/c.md", old="It is far.", new="It is far away.")).success
    await _synced(a)
    follow = _follow(a, "notes/c.md")
    assert [subject.split(":")[0] for subject, _ in follow] == ["edit", "move", INIT.split(":")[0]], follow
    assert _renamed(follow[1][1], "notes/a.md", "notes/c.md")

    assert (await a.run("move", src="notes/c.md", dst="notes/d.md")).success
    await _synced(a)
    assert (await a.run("move", src="notes/d.md", dst="notes/e.md")).success
    assert (await a.run("write", path="notes/e.md", content=NOTE + "\nA last line.\n")).success
    await _synced(a)
    follow = _follow(a, "notes/e.md")
    assert [subject.split(":")[0] for subject, _ in follow] == [
        "write",
        "move",
        "move",
        "edit",
        "move",
        INIT.split(":")[0],
    ], follow
    assert _renamed(follow[1][1], "notes/d.md", "notes/e.md") and _renamed(
        follow[2][1], "notes/c.md", "notes/d.md"
    )
    assert follow[-1][1] == ["A\tnotes/a.md"]


async def test_a_rename_by_hand_then_a_job_edit_keeps_the_history(machine: Machine, remote: Path) -> None:
    """A note renamed in a file manager, then edited by a job: the hand commit holds the rename (said
    as a hand edit), the job's commit the edit."""
    a = await _started(machine, remote, {"notes/solar.md": NOTE})
    (a.workspace_dir / "notes/solar.md").rename(a.workspace_dir / "notes/sun.md")
    assert (
        await a.run("edit", path="notes/sun.md", old="It is hot.", new="It is hot, said the job.")
    ).success
    committed = await _synced(a)
    follow = _follow(a, "notes/sun.md")
    assert [subject.split(":")[0] for subject, _ in follow][0] == "edit" and follow[-1][0] == INIT, follow
    assert follow[1][0].startswith("edited by hand on ") and _renamed(
        follow[1][1], "notes/solar.md", "notes/sun.md"
    )
    assert sorted(_job(a, commit)[0][0] for commit in committed) == ["edit", "sync"]


async def test_renames_split_both_ways_between_two_jobs_are_each_whole(
    machine: Machine, remote: Path
) -> None:
    """Job alpha deleted one.md whose content beta wrote at uno.md, and beta deleted two.md whose
    content alpha wrote at dos.md: no order puts each deleting job first, yet each rename is whole."""
    one, two = NOTE, NOTE.replace("Solar", "Lunar").replace("sun", "moon")
    a = await _started(machine, remote, {"notes/one.md": one, "notes/two.md": two})
    root = a.workspace_dir
    (root / "notes/one.md").unlink()
    (root / "notes/two.md").unlink()
    _hand_write(a, "notes/uno.md", one.replace("It is far.", "It is far, said beta."))
    _hand_write(a, "notes/dos.md", two)
    with running("alpha"):
        note(root, "notes/one.md", None)
        note(root, "notes/dos.md", two.encode())
    with running("beta"):
        note(root, "notes/two.md", None)
        note(root, "notes/uno.md", (root / "notes/uno.md").read_bytes())
    committed = await _synced(a)
    for old, new in (("notes/one.md", "notes/uno.md"), ("notes/two.md", "notes/dos.md")):
        follow = _follow(a, new)
        assert follow[-1][0] == INIT and any(_renamed(status, old, new) for _, status in follow), follow
    assert {_job(a, commit)[0][0] for commit in committed} == {"alpha", "beta"}
    assert git(root, "status", "--porcelain").strip() == ""

"""Adversarial review of sync through git (docs/spec.md §18, docs/sync.md): two machines living one
memory. Each test is a case found to lose or hide a user's data, or to wedge sync, before its fix."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from tests.sync.conftest import Machine, git, tree

import reme.service.doctor_sync as doctor_sync
import reme.workspace.gitrepo as gitrepo
from reme import ReMe
from reme.workspace.gitmerge import merge

NOTE = "# Solar\n\nOne.\n\nTwo.\n\nThree.\n\nFour.\n"


async def _pair(machine: Machine, remote: Path, files: dict[str, str | bytes]) -> tuple[ReMe, ReMe]:
    """Machine a with these files, initialised on the remote; machine b cloned from it."""
    a = await machine("a")
    for path, content in files.items():
        target = a.workspace_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
    init = await a.run("sync_init", remote=str(remote))
    assert init.success, init.answer
    b = await machine("b")
    clone = await b.run("sync_clone", remote=str(remote))
    assert clone.success, clone.answer
    return a, b


async def _sync(app: ReMe) -> dict[str, object]:
    response = await app.run("sync")
    assert response.success, response.answer
    return response.metadata


async def test_files_named_as_no_job_may_name_them_clone_and_sync(machine: Machine, remote: Path) -> None:
    """A note made by hand as `why?.md` or `Meeting: Q3.md` synced and was written, then the sync (and the
    clone) failed on re-indexing it, after the push: every later sync that merged it failed too."""
    odd = ["notes/why?.md", "notes/Meeting: Q3.md", "notes/-rf.md", "notes/--upload-pack=x.md"]
    a, b = await _pair(machine, remote, {path: NOTE for path in odd})
    assert set(odd) <= set(tree(b.workspace_dir))
    for path in odd:
        (a.workspace_dir / path).write_text(NOTE.replace("One.", "One, from a."))
        (b.workspace_dir / path).write_text(NOTE.replace("Four.", "Four, from b."))
    await _sync(a)
    merged = await _sync(b)
    assert set(odd) <= set(merged["merged"])  # type: ignore[arg-type]
    await _sync(a)
    for path in odd:
        text = (a.workspace_dir / path).read_text()
        assert "One, from a." in text and "Four, from b." in text
    assert tree(a.workspace_dir) == tree(b.workspace_dir)


async def test_a_file_with_nul_bytes_changed_on_both_machines_is_a_conflict_not_a_crash(
    machine: Machine, remote: Path
) -> None:
    """UTF-16 text or a small binary is valid UTF-8 yet holds NUL bytes: `git merge-file` refused it and
    every sync after failed with an internal error until the file was fixed by hand."""
    a, b = await _pair(machine, remote, {"files/notes.txt": b"n\0o\0t\0e\0"})
    (a.workspace_dir / "files/notes.txt").write_bytes(b"A\0\n\0")
    (b.workspace_dir / "files/notes.txt").write_bytes(b"B\0\n\0")
    await _sync(a)
    clash = await _sync(b)
    [beside] = clash["conflicts"]  # type: ignore[misc]
    assert (b.workspace_dir / "files/notes.txt").read_bytes() == b"B\0\n\0"
    assert (b.workspace_dir / beside).read_bytes() == b"A\0\n\0"


async def test_a_topic_changed_differently_on_both_machines_keeps_both(
    machine: Machine, remote: Path
) -> None:
    """interests.yaml merges topic by topic; a topic both machines changed kept the local one and dropped
    the other without a word (no conflict file), like a key both changed."""
    path = "daily/2026-01-01/interests.yaml"
    base = "topics:\n- id: solar\n  title: Solar\n- id: wind\n  title: Wind\n"
    a, b = await _pair(machine, remote, {path: base})
    (a.workspace_dir / path).write_text(base.replace("title: Solar", "title: Solar panels"))
    (b.workspace_dir / path).write_text(base.replace("title: Solar", "title: Solar power"))
    await _sync(a)
    clash = await _sync(b)
    [beside] = clash["conflicts"]  # type: ignore[misc]
    assert "Solar power" in (b.workspace_dir / path).read_text()  # the local version, in place
    assert "Solar panels" in (b.workspace_dir / beside).read_text()  # the remote one, beside it
    health = await b.run("health_check")
    assert health.metadata["components"]["sync"]["conflicts"] == [beside]


def test_a_topic_deleted_on_one_side_and_changed_on_the_other_is_a_conflict() -> None:
    base = b"topics:\n- id: solar\n  title: Solar\n- id: wind\n  title: Wind\n"
    ours = b"topics:\n- id: wind\n  title: Wind\n"
    theirs = b"topics:\n- id: solar\n  title: Solar, revised\n- id: wind\n  title: Wind\n"
    assert merge("daily/2026-01-01/interests.yaml", base, ours, theirs).conflict


async def test_a_message_removed_from_a_transcript_on_one_machine_stays_removed(
    machine: Machine, remote: Path
) -> None:
    """A password pasted in a chat, taken out of the transcript by hand on one machine, came back from
    the other machine's copy at the next sync (the union ignored what one side removed or rewrote)."""

    def line(number: int, text: str) -> str:
        return json.dumps({"id": f"m{number}", "created_at": f"2026-01-01T10:0{number}:00Z", "content": text})

    path = "session/dialog/s1.jsonl"
    base = line(1, "hello") + "\n" + line(2, "my password is hunter2") + "\n" + line(3, "thanks") + "\n"
    a, b = await _pair(machine, remote, {path: base})
    removed = base.replace(line(2, "my password is hunter2") + "\n", "")
    (a.workspace_dir / path).write_text(removed.replace("thanks", "thanks!"))
    (b.workspace_dir / path).write_text(base + line(4, "one more, on b") + "\n")
    await _sync(a)
    await _sync(b)
    await _sync(a)
    for app in (a, b):
        text = (app.workspace_dir / path).read_text()
        assert "hunter2" not in text
        assert '"thanks!"' in text and "one more, on b" in text  # both sides' other changes kept
        assert not [name for name in tree(app.workspace_dir) if ".conflict-" in name]


def test_a_tag_removed_on_one_side_stays_removed_when_the_other_edits_the_body() -> None:
    """Front matter: a key changed on one side takes that side; a list is a union only when both changed it."""
    base = b"---\ntags: [solar, draft]\n---\n# Solar\n\nOne.\n\nTwo.\n"
    ours = b"---\ntags: [solar]\n---\n# Solar\n\nOne.\n\nTwo.\n"
    theirs = b"---\ntags: [solar, draft]\n---\n# Solar\n\nOne.\n\nTwo, edited.\n"
    merged = merge("notes/solar.md", base, ours, theirs)
    assert not merged.conflict
    assert b"draft" not in merged.content and b"Two, edited." in merged.content
    both = merge(
        "notes/solar.md",
        base,
        ours.replace(b"[solar]", b"[solar, pv]"),
        theirs.replace(b"draft]", b"draft, sun]"),
    )
    assert b"pv" in both.content and b"sun" in both.content  # changed on both sides: the union


async def test_a_push_the_host_refuses_says_why_at_once(machine: Machine, remote: Path) -> None:
    """A protected branch or a hook refusing the push was taken for a remote that moved on: three
    rounds, then "kept changing; nothing was lost, sync again" (forever), never the host's reason."""
    a = await machine("a")
    await a.run("write", path="notes/solar.md", content=NOTE, name="solar")
    assert (await a.run("sync_init", remote=str(remote))).success
    tries = remote / "pushes.log"
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(
        f"#!/bin/sh\necho push >> '{tries}'\necho 'GH006: Protected branch update failed' >&2\nexit 1\n"
    )
    hook.chmod(0o755)
    await a.run("edit", path="notes/solar.md", old="One.", new="One, edited.")
    refused = await a.run("sync")
    assert not refused.success
    assert "refused" in refused.answer and "GH006: Protected branch" in refused.answer, refused.answer
    assert "kept changing" not in refused.answer
    assert tries.read_text().count("push") == 1
    assert "One, edited." in (a.workspace_dir / "notes/solar.md").read_text()


async def test_sync_never_commits_into_a_conflict_a_plain_git_left(machine: Machine, remote: Path) -> None:
    """A `git stash pop` or cherry-pick by hand that stopped on a conflict: sync staged the half-done
    file as resolved and pushed it (or failed half way through a partial commit)."""
    a, _b = await _pair(machine, remote, {"notes/solar.md": NOTE})
    work = a.workspace_dir
    who = ["-c", "user.name=me", "-c", "user.email=me@example.org"]
    (work / "notes/solar.md").write_text(NOTE.replace("Two.", "Two, stashed."))
    git(work, *who, "stash", "-q")
    (work / "notes/solar.md").write_text(NOTE.replace("Two.", "Two, committed."))
    git(work, *who, "commit", "-qam", "by hand")
    git(work, *who, "stash", "pop", check=False)
    assert git(work, "ls-files", "-u")  # the conflict git left
    remote_before = git(remote, "rev-parse", "main")
    refused = await a.run("sync")
    assert not refused.success
    assert "unresolved" in refused.answer and "git status" in refused.answer, refused.answer
    assert git(work, "ls-files", "-u")  # still the user's to resolve
    assert git(remote, "rev-parse", "main") == remote_before


@pytest.fixture
def hanging_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An ssh that connects and never answers, noting its process id: the remote that hangs."""
    pid_file = tmp_path / "ssh.pid"
    script = tmp_path / "hang-ssh"
    script.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nexec sleep 120\n")
    script.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(script))
    return pid_file


def _gone(pid: int) -> bool:
    """The process has ended (exited or a zombie waiting to be reaped), waiting for it a little."""
    for _ in range(100):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


async def test_a_remote_that_hangs_times_out_and_leaves_no_transfer_behind(
    machine: Machine, hanging_ssh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fetch past its time limit killed git alone: its ssh stayed, waiting on the remote, one more
    at every scheduled sync."""
    monkeypatch.setattr(gitrepo, "GIT_TIMEOUT", 1.0)
    a = await machine("a")
    await a.run("write", path="notes/solar.md", content=NOTE, name="solar")
    before = tree(a.workspace_dir)
    hung = await a.run("sync_init", remote="ssh://git@memory.example/me/memory.git")
    assert not hung.success
    assert "took longer" in hung.answer and "nothing was lost" in hung.answer, hung.answer
    assert tree(a.workspace_dir).items() >= before.items()  # every file as it was (a .gitignore added)
    assert _gone(int(hanging_ssh.read_text()))


def test_doctor_gives_a_remote_that_hangs_its_own_short_time(
    tmp_path: Path, hanging_ssh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reme doctor` waited out the 300 s of a fetch on a remote that hangs (REMOTE_TIMEOUT was unused)."""
    monkeypatch.setattr(doctor_sync, "REMOTE_TIMEOUT", 1.0)
    work = tmp_path / "w"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    git(work, "remote", "add", "origin", "ssh://git@memory.example/me/memory.git")
    checks = doctor_sync.sync_checks(work, {})
    failed = [check for check in checks if check.status == "fail"]
    assert failed and "took longer than 1s" in failed[0].detail, checks


async def test_a_nested_repository_and_a_symlink_never_wedge_the_other_machine(
    machine: Machine, remote: Path
) -> None:
    """A repository cloned inside the workspace is committed as a link to a commit the other machine
    lacks: its every sync failed ("is not a blob"). A symlink came out there as a file holding the
    link's target, which that machine committed back, and the first machine's sync failed for good."""
    a, b = await _pair(machine, remote, {"notes/solar.md": NOTE})
    (a.workspace_dir / "notes/latest.md").symlink_to("solar.md")
    nested = a.workspace_dir / "project"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "readme.md").write_text("# project\n")
    git(nested, "add", ".")
    git(nested, "-c", "user.name=me", "-c", "user.email=me@example.org", "commit", "-qm", "project")
    await _sync(a)
    for app in (b, b, a, a):
        await _sync(app)
    link = b.workspace_dir / "notes/latest.md"
    assert link.is_symlink() and link.read_text() == NOTE
    assert (a.workspace_dir / "notes/latest.md").is_symlink()
    assert (nested / "readme.md").read_text() == "# project\n"  # the nested repository untouched
    assert git(b.workspace_dir, "status", "--porcelain") == ""

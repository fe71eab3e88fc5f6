"""Adversarial checks of sync (docs/spec.md §18) and time (§17): each test asserts the behaviour the
spec and docs/sync.md, docs/time.md describe, for a case found to go wrong."""

from __future__ import annotations

import subprocess
from datetime import date
from pathlib import Path

import pytest
from tests.sync.conftest import Machine, git, tree

import reme.workspace.gitsync as gitsync
from reme.workspace.gitmerge import merge
from reme.workspace.relative_dates import annotate

NOTE = "# Solar\n\nOne.\n\nTwo.\n\nThree.\n"


async def _pair(machine: Machine, remote: Path, files: dict[str, str]):  # type: ignore[no-untyped-def]
    a = await machine("a")
    for path, text in files.items():
        target = a.workspace_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    init = await a.run("sync_init", remote=str(remote))
    assert init.success, init.answer
    b = await machine("b")
    clone = await b.run("sync_clone", remote=str(remote))
    assert clone.success, clone.answer
    return a, b


# ---- sync -----------------------------------------------------------------------------------------


async def test_a_note_renamed_differently_on_both_machines_syncs_and_keeps_both(
    machine: Machine, remote: Path
) -> None:
    """rename/rename: the old path is gone on both sides (a base-only stage); both new names are kept."""
    a, b = await _pair(machine, remote, {"notes/solar.md": NOTE})
    assert (await a.run("move", src="notes/solar.md", dst="notes/sun.md")).success
    assert (await b.run("move", src="notes/solar.md", dst="notes/helio.md")).success
    assert (await a.run("sync")).success
    for _ in range(2):
        response = await b.run("sync")
        assert response.success, response.answer
    assert (await a.run("sync")).success
    assert tree(a.workspace_dir) == tree(b.workspace_dir)
    # nothing lost: the note's text is there under a name it was given
    names = {path for path in tree(b.workspace_dir) if path.startswith("notes/")}
    assert names & {"notes/sun.md", "notes/helio.md"}, names


async def test_sync_init_keeps_metadata_out_even_when_a_gitignore_exists(
    machine: Machine, remote: Path
) -> None:
    """§18: sync_init writes the generated .gitignore (at least metadata/, locks, temp files)."""
    a = await machine("a")
    await a.run("write", path="notes/x.md", content="# X\n\nhello\n", name="x")
    (a.workspace_dir / ".gitignore").write_text(".obsidian/\n")  # the user's own
    response = await a.run("sync_init", remote=str(remote))
    assert response.success, response.answer
    tracked = git(a.workspace_dir, "ls-files").splitlines()
    assert not [path for path in tracked if path.startswith("metadata/")], tracked[:5]
    assert not [path for path in tracked if path.endswith(".lock")], tracked[:5]


async def test_a_metadata_file_tracked_in_the_remote_never_breaks_sync(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    """metadata/ is never synced (docs/sync.md): a remote that carries one must not wedge every sync."""
    a = await machine("a")
    await a.run("write", path="notes/x.md", content="# X\n\nhello\n", name="x")
    assert (await a.run("sync_init", remote=str(remote))).success
    plain = tmp_path / "plain"
    subprocess.run(["git", "clone", "-q", str(remote), str(plain)], check=True)
    (plain / "metadata").mkdir()
    (plain / "metadata/dream.json").write_text('{"from": "another machine"}\n')
    git(plain, "add", "-f", "metadata/dream.json")
    git(plain, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "metadata by mistake")
    git(plain, "push", "-q", "origin", "HEAD:main")
    (a.workspace_dir / "metadata/dream.json").write_text('{"from": "a"}\n')
    for _ in range(2):
        response = await a.run("sync")
        assert response.success, response.answer
    assert (a.workspace_dir / "metadata/dream.json").read_text() == '{"from": "a"}\n'


async def test_an_interrupted_merge_then_an_edit_does_not_block_sync_forever(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/sync.md: the intent lets the next sync finish, and a file written meanwhile is committed
    first and merged again (a merge cut off by a crash, then a hand edit to a file it had not written)."""
    a, b = await _pair(
        machine, remote, {"notes/one.md": "# one\n\nbase.\n", "notes/two.md": "# two\n\nbase.\n"}
    )
    for name in ("one", "two"):
        await a.run("edit", path=f"notes/{name}.md", old="base.", new="from a.")
    assert (await a.run("sync")).success
    real = gitsync.atomic_write
    calls: list[object] = []

    def crash_on_second(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args[0])
        if len(calls) == 2:
            raise OSError("simulated crash while writing the merge")
        return real(*args, **kwargs)

    monkeypatch.setattr(gitsync, "atomic_write", crash_on_second)
    assert not (await b.run("sync")).success
    monkeypatch.setattr(gitsync, "atomic_write", real)
    two = b.workspace_dir / "notes/two.md"
    two.write_text(two.read_text() + "\nhand edit on b\n")
    response = await b.run("sync")
    assert response.success, response.answer
    assert (await a.run("sync")).success
    assert "hand edit on b" in (a.workspace_dir / "notes/two.md").read_text()
    assert "from a." in (b.workspace_dir / "notes/one.md").read_text()


async def test_history_of_a_renamed_note_lists_versions_that_restore_and_diff_can_use(
    machine: Machine, remote: Path
) -> None:
    """history follows renames, and restore/diff find a revision from before the rename under its old path."""
    a = await machine("a")
    await a.run("write", path="notes/solar.md", content="# Solar\n\nv1.\n", name="solar")
    assert (await a.run("sync_init", remote=str(remote))).success
    assert (await a.run("move", src="notes/solar.md", dst="notes/sun.md")).success
    await a.run("edit", path="notes/sun.md", old="v1.", new="v2.")
    assert (await a.run("sync")).success
    versions = (await a.run("history", path="notes/sun.md")).metadata["versions"]
    oldest = versions[-1]["rev"]  # from before the rename, listed by history
    diff = await a.run("diff", path="notes/sun.md", rev_a=oldest)
    assert diff.success and "new file mode" not in diff.answer, diff.answer
    restored = await a.run("restore", path="notes/sun.md", rev=oldest)
    assert restored.success, restored.answer
    assert "v1." in (a.workspace_dir / "notes/sun.md").read_text()


def test_lines_added_on_both_sides_keep_every_remote_line() -> None:
    """docs/sync.md: lines both sides added at the same place are kept both, a remote line equal to
    one of the local lines included (the remote entry keeps its `- status` line)."""
    base = "# Log\n\nstart.\n"
    ours = base + "\n## 10:00 standup\n- status: done\n"
    theirs = base + "\n## 11:00 call with Ana\n- status: done\n"
    merged = merge("daily/2026-01-01/log.md", base.encode(), ours.encode(), theirs.encode())
    text = merged.content.decode()
    assert merged.conflict or "## 11:00 call with Ana\n- status: done\n" in text, text


# ---- time -----------------------------------------------------------------------------------------

BAD_DATE = "---\nname: bad\ndate: 2024-02-30\n---\n# Bad\n\nWe met yesterday about zeppelins.\n"


async def test_a_note_with_an_impossible_date_in_front_matter_stays_searchable(
    machine: Machine, tmp_path: Path
) -> None:
    """§2.1: front matter that cannot be read leaves the file readable and searchable, and the error
    is never raised; a date that does not exist (`date: 2024-02-30`) stays text."""
    (tmp_path / "a/notes").mkdir(parents=True)
    (tmp_path / "a/notes/bad.md").write_text(BAD_DATE)
    a = await machine("a")
    found = await a.run("search", query="zeppelins")
    assert "notes/bad.md" in [hit["path"] for hit in found.metadata["results"]], found.answer
    stat = await a.run("stat", path="notes/bad.md")
    assert stat.success, stat.answer
    dry = await a.run("annotate_dates", path="notes", dry_run=True)
    assert dry.success, dry.answer


async def test_a_note_with_an_impossible_date_changed_on_both_machines_syncs(
    machine: Machine, remote: Path
) -> None:
    a, b = await _pair(machine, remote, {"notes/bad.md": BAD_DATE})
    path = "notes/bad.md"
    (a.workspace_dir / path).write_text(BAD_DATE.replace("# Bad", "# Bad (a)"))
    (b.workspace_dir / path).write_text(BAD_DATE.replace("zeppelins.", "zeppelins, said b."))
    assert (await a.run("sync")).success
    response = await b.run("sync")
    assert response.success, response.answer


@pytest.mark.parametrize(
    "text",
    ["We spoke at least three days ago.", "It happened at most two weeks ago.", "just under a month ago"],
)
def test_counts_that_are_ranges_are_left_as_they_are(text: str) -> None:
    """§17.1 / docs/time.md: vague counts and ranges are never resolved to one day ("never a guess")."""
    assert annotate(text, date(2024, 1, 10)) == text


async def test_diff_from_before_a_note_existed_to_before_its_rename_answers(
    machine: Machine, remote: Path
) -> None:
    """`diff` between a revision without the note and one where it had its old name is no git error."""
    a = await machine("a")
    await a.run("write", path="notes/other.md", content="# Other\n", name="other")
    assert (await a.run("sync_init", remote=str(remote))).success
    await a.run("write", path="notes/solar.md", content="# Solar\n\nv1.\n", name="solar")
    assert (await a.run("sync")).success
    assert (await a.run("move", src="notes/solar.md", dst="notes/sun.md")).success
    assert (await a.run("sync")).success
    versions = (await a.run("history", path="notes/sun.md")).metadata["versions"]
    before_rename = versions[-1]
    assert before_rename["path"] == "notes/solar.md"
    first = (await a.run("history", path="notes/other.md")).metadata["versions"][-1]["rev"]
    diff = await a.run("diff", path="notes/sun.md", rev_a=first, rev_b=before_rename["rev"])
    assert diff.success, diff.answer


async def test_a_damaged_repository_is_named_not_taken_for_one_without_a_remote(tmp_path: Path) -> None:
    from reme import ReMe

    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    git(ws, "remote", "add", "origin", str(tmp_path / "remote.git"))
    (ws / ".git" / "HEAD").write_text("garbage\n")
    async with ReMe(workspace_dir=ws, timezone="UTC", **{"scheduler.cron": False}) as app:
        health = await app.run("health_check")
        synced = await app.run("sync")
    assert "sync: error" in health.answer and "not a git repository" in health.answer, health.answer
    assert not synced.success and "no remote is configured" not in synced.answer, synced.answer

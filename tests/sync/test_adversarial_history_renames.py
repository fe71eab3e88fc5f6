"""Adversarial checks of `history` and `restore` (docs/spec.md §18, docs/sync.md "History, diff and
restore") for notes renamed on one machine while edited on another, renamed more than once, renamed
back, deleted and created again, and renamed by case only. Real git, a bare remote in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.sync.conftest import Machine, git

from reme import ReMe
from reme.workspace import githistory

NOTE = "# Solar\n\nThe sun is a star.\n\nIt is old.\n\nIt is hot.\n"


async def _synced(app: ReMe) -> None:
    response = await app.run("sync")
    assert response.success, response.answer


async def _history(app: ReMe, path: str, **params: object) -> list[dict[str, object]]:
    response = await app.run("history", path=path, **params)
    assert response.success, response.answer
    return list(response.metadata["versions"])


def _hand_write(app: ReMe, path: str, text: str) -> None:
    target = app.workspace_dir / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def _notes(app: ReMe) -> list[str]:
    return sorted(path.name for path in (app.workspace_dir / "notes").iterdir())


async def test_a_rename_on_one_machine_and_an_edit_on_the_other_keep_the_edit_in_history(
    machine: Machine, remote: Path
) -> None:
    """A renames solar.md to sun.md while B edits solar.md: after both sync, history of sun.md lists
    B's edit and the merge that made the note as it is, on both machines, and restore writes each."""
    a = await machine("a")
    _hand_write(a, "notes/solar.md", NOTE)
    assert (await a.run("sync_init", remote=str(remote))).success
    b = await machine("b")
    assert (await b.run("sync_clone", remote=str(remote))).success
    assert (await a.run("move", src="notes/solar.md", dst="notes/sun.md")).success
    edited = NOTE.replace("It is hot.", "It is hot, said b.")
    _hand_write(b, "notes/solar.md", edited)
    await _synced(a)
    await _synced(b)
    await _synced(a)
    b_edit = git(b.workspace_dir, "log", "-1", "--format=%H", "--grep=edited by hand", "--all").strip()
    merge = git(b.workspace_dir, "log", "-1", "--format=%H", "--merges").strip()
    assert b_edit and merge
    for app in (a, b):
        assert _notes(app) == ["sun.md"] and (app.workspace_dir / "notes/sun.md").read_text().endswith(
            "It is hot, said b.\n"
        )
        versions = await _history(app, "notes/sun.md")
        listed = {str(v["rev"]): v["path"] for v in versions}
        assert listed.get(b_edit) == "notes/solar.md", versions  # B's edit, under the name it had then
        assert listed.get(merge) == "notes/sun.md", versions  # the merge: rename and edit together
        assert [v["file"] for v in versions] == [0] * len(versions)

    move = next(v for v in await _history(a, "notes/sun.md") if v["job"] == "move")
    restored = await a.run("restore", path="notes/sun.md", rev=str(move["rev"]))
    assert restored.success, restored.answer
    assert (a.workspace_dir / "notes/sun.md").read_text() == NOTE and _notes(a) == ["sun.md"]
    restored = await a.run("restore", path="notes/sun.md", rev=b_edit)  # B's version, listed above
    assert restored.success, restored.answer
    assert (a.workspace_dir / "notes/sun.md").read_text() == edited and _notes(a) == ["sun.md"]
    diff = await a.run("diff", path="notes/sun.md", rev_a=b_edit, rev_b=merge)
    assert diff.success and diff.metadata["diff"] == "", diff.answer  # same content, two names


async def test_a_note_renamed_twice_keeps_every_version_under_the_name_it_had(
    machine: Machine, remote: Path
) -> None:
    a = await machine("a")
    _hand_write(a, "notes/a.md", NOTE)
    assert (await a.run("sync_init", remote=str(remote))).success
    for old, new, line in (("a", "b", "It is old, b."), ("b", "c", "It is old, c.")):
        assert (await a.run("move", src=f"notes/{old}.md", dst=f"notes/{new}.md")).success
        await _synced(a)
        _hand_write(a, f"notes/{new}.md", NOTE.replace("It is old.", line))
        await _synced(a)
    versions = await _history(a, "notes/c.md")
    assert [v["path"] for v in versions] == [
        "notes/c.md",
        "notes/c.md",
        "notes/b.md",
        "notes/b.md",
        "notes/a.md",
    ]
    restored = await a.run("restore", path="notes/c.md", rev=str(versions[2]["rev"]))  # b's hand edit
    assert restored.success, restored.answer
    assert "It is old, b." in (a.workspace_dir / "notes/c.md").read_text() and _notes(a) == ["c.md"]
    restored = await a.run("restore", path="notes/c.md", rev=str(versions[-1]["rev"]))
    assert restored.success, restored.answer
    assert (a.workspace_dir / "notes/c.md").read_text() == NOTE and _notes(a) == ["c.md"]
    old_name = await a.run("history", path="notes/a.md")  # the first name: its version, and where it went
    assert [v["rev"] for v in old_name.metadata["versions"]] == [versions[-1]["rev"]]
    assert "no file at notes/a.md now: deleted or renamed away" in old_name.answer


async def test_a_note_renamed_back_lists_the_versions_of_both_names(machine: Machine, remote: Path) -> None:
    a = await machine("a")
    _hand_write(a, "notes/a.md", NOTE)
    assert (await a.run("sync_init", remote=str(remote))).success
    assert (await a.run("move", src="notes/a.md", dst="notes/b.md")).success
    await _synced(a)
    _hand_write(a, "notes/b.md", NOTE.replace("It is old.", "Edited while named b."))
    await _synced(a)
    assert (await a.run("move", src="notes/b.md", dst="notes/a.md")).success
    await _synced(a)
    versions = await _history(a, "notes/a.md")
    assert [v["path"] for v in versions] == ["notes/a.md", "notes/b.md", "notes/b.md", "notes/a.md"]
    restored = await a.run("restore", path="notes/a.md", rev=str(versions[-1]["rev"]))
    assert restored.success, restored.answer
    assert (a.workspace_dir / "notes/a.md").read_text() == NOTE and _notes(a) == ["a.md"]


async def test_a_note_deleted_and_created_again_is_not_spliced_with_the_earlier_one(
    machine: Machine, remote: Path
) -> None:
    """The versions of the file that had the path before are marked (`file` 1) and the answer says
    which commit deleted it; restore brings either back."""
    a = await machine("a")
    _hand_write(a, "notes/x.md", "# Old note\n\nAbout tides.\n")
    assert (await a.run("sync_init", remote=str(remote))).success
    _hand_write(a, "notes/x.md", "# Old note\n\nAbout tides and moons.\n")
    await _synced(a)
    assert (await a.run("delete", path="notes/x.md")).success
    await _synced(a)
    deleted_in = git(a.workspace_dir, "rev-parse", "HEAD").strip()
    gone = await a.run("history", path="notes/x.md")  # a note deleted now: its versions, restorable
    assert [v["file"] for v in gone.metadata["versions"]] == [0, 0], gone.answer
    assert f"no file at notes/x.md now: deleted or renamed away in {deleted_in[:12]}" in gone.answer
    _hand_write(a, "notes/x.md", "# Recipes\n\nBread: flour, water, salt.\n")
    await _synced(a)
    _hand_write(a, "notes/x.md", "# Recipes\n\nBread: flour, water, salt, yeast.\n")
    await _synced(a)
    response = await a.run("history", path="notes/x.md")
    versions = response.metadata["versions"]
    assert [v["file"] for v in versions] == [0, 0, 1, 1], versions
    assert f"earlier, different file at notes/x.md, deleted in {deleted_in[:12]}" in response.answer
    assert response.metadata["stopped_early"] is False
    restored = await a.run("restore", path="notes/x.md", rev=str(versions[2]["rev"]))
    assert restored.success, restored.answer
    assert (a.workspace_dir / "notes/x.md").read_text() == "# Old note\n\nAbout tides and moons.\n"
    restored = await a.run("restore", path="notes/x.md", rev=str(versions[0]["rev"]))
    assert restored.success, restored.answer
    assert (a.workspace_dir / "notes/x.md").read_text() == "# Recipes\n\nBread: flour, water, salt, yeast.\n"


async def test_a_rename_then_a_case_only_rename_keeps_the_history(machine: Machine, remote: Path) -> None:
    a = await machine("a")
    _hand_write(a, "notes/solar.md", NOTE)
    assert (await a.run("sync_init", remote=str(remote))).success
    assert (await a.run("move", src="notes/solar.md", dst="notes/sun.md")).success
    await _synced(a)
    moved = await a.run("move", src="notes/sun.md", dst="notes/Sun.md")
    assert moved.success, moved.answer
    await _synced(a)
    versions = await _history(a, "notes/Sun.md")
    assert [v["path"] for v in versions] == ["notes/Sun.md", "notes/sun.md", "notes/solar.md"]
    _hand_write(a, "notes/Sun.md", NOTE + "\nNew line.\n")
    await _synced(a)
    restored = await a.run("restore", path="notes/Sun.md", rev=str(versions[-1]["rev"]))
    assert restored.success, restored.answer
    assert (a.workspace_dir / "notes/Sun.md").read_text() == NOTE and _notes(a) == ["Sun.md"]


@pytest.mark.parametrize("job", ["edit", "write"])
async def test_a_rename_split_over_two_commits_is_followed_either_way(
    machine: Machine, remote: Path, job: str
) -> None:
    """sync commits each job's files apart, the move's commit holding the whole rename (the note as
    it was) and the job's the change after it; history reaches the version from before the rename."""
    a = await machine("a")
    _hand_write(a, "notes/solar.md", NOTE)
    assert (await a.run("sync_init", remote=str(remote))).success
    assert (await a.run("move", src="notes/solar.md", dst="notes/sun.md")).success
    changed = NOTE.replace("It is hot.", "It is hot, said the job.")
    if job == "edit":
        assert (
            await a.run("edit", path="notes/sun.md", old="It is hot.", new="It is hot, said the job.")
        ).success
    else:
        assert (await a.run("write", path="notes/sun.md", content=changed)).success
    await _synced(a)
    jobs = [
        subject.split(":")[0] for subject in git(a.workspace_dir, "log", "--format=%s", "-2").splitlines()
    ]
    assert jobs == [job, "move"]  # the rename whole in the move's commit, the job's change after it
    versions = await _history(a, "notes/sun.md")
    assert [v["path"] for v in versions] == ["notes/sun.md", "notes/sun.md", "notes/solar.md"], versions
    restored = await a.run("restore", path="notes/sun.md", rev=str(versions[-1]["rev"]))
    assert restored.success, restored.answer
    assert (a.workspace_dir / "notes/sun.md").read_text() == NOTE and _notes(a) == ["sun.md"]


async def test_history_walks_a_bounded_number_of_commits_and_says_when_it_stopped(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = await machine("a")
    _hand_write(a, "notes/solar.md", NOTE)
    assert (await a.run("sync_init", remote=str(remote))).success
    for n in range(3):
        _hand_write(a, "notes/solar.md", NOTE + f"\nEdit {n}.\n")
        await _synced(a)
    monkeypatch.setattr(githistory, "MAX_WALK", 2)
    response = await a.run("history", path="notes/solar.md")
    assert response.success and response.metadata["stopped_early"] is True, response.answer
    assert len(response.metadata["versions"]) == 2
    assert "stopped after 2 commits: older versions may exist" in response.answer
    short = await a.run("history", path="notes/solar.md", limit=1)
    assert len(short.metadata["versions"]) == 1 and short.metadata["stopped_early"] is False

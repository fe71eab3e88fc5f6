"""Adversarial file jobs: links, look-alike names, hard links, `.git/`, front matter and racing writers.

The promise under attack: no job reads or writes outside the workspace (nor into `.git/`), a refusal
says what to fix and changes nothing, and no job loses a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Iterator

import pytest
from tests.support import snapshot

from reme.app.components.workspace import workspace_of
from reme.workspace.layout import Workspace
from reme.workspace.locks import LockTimeoutError

METADATA = ("metadata",)  # derived state: lock files, the index


def refused(response) -> bool:
    """A clean refusal: failed, with a message, and not reme's own crash."""
    return not response.success and bool(response.answer) and "internal error" not in response.answer


# .git/ -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "params"),
    [
        ("write", {"path": ".git/config", "content": "[core]\n\tfsmonitor = touch /tmp/pwned\n"}),
        ("save", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch /tmp/pwned\n"}),
        ("write", {"path": ".git/hooks/post-merge.md", "content": "x"}),
        ("write", {"path": ".GIT/config", "content": "x"}),
        ("write", {"path": "digest/sub/.git/config", "content": "x"}),
        ("write", {"path": "digest/g/config", "content": "x"}),  # a link to .git/
        ("edit", {"path": ".git/config", "old": "bare", "new": "worktree"}),
        ("delete", {"path": ".git"}),
        ("delete", {"path": ".git/config"}),
        ("move", {"src": "digest/note.md", "dst": ".git/hooks/pre-commit"}),
        ("move", {"src": ".git/config", "dst": "digest/config.md"}),
        ("read", {"path": ".git/config"}),  # a remote's URL there may carry a token
        ("read", {"path": "digest/g/config"}),
        ("stat", {"path": ".git/config"}),
        ("list", {"path": ".git"}),
    ],
)
async def test_no_job_writes_into_the_git_folder_or_reads_it(app, job, params):
    root = app.workspace_dir
    (root / ".git/hooks").mkdir(parents=True)
    (root / ".git/config").write_text("[core]\n\tbare = false\n")
    (root / ".git/hooks/pre-commit").write_text("#!/bin/sh\n")
    (root / "digest/note.md").write_text("note\n")
    (root / "digest/g").symlink_to(root / ".git", target_is_directory=True)
    before = snapshot(root, skip=METADATA)
    response = await app.run(job, **params)
    assert refused(response), response.answer
    assert ".git" in response.answer
    assert snapshot(root, skip=METADATA) == before


# symlinks ----------------------------------------------------------------------------------------


async def test_a_symlink_loop_is_refused_clearly_and_the_link_can_be_deleted(app):
    root = app.workspace_dir
    (root / "digest/loop.md").symlink_to("loop.md")
    (root / "digest/ring").symlink_to("ring/x", target_is_directory=True)
    before = snapshot(root, skip=METADATA)
    for job, params in [
        ("read", {"path": "digest/loop.md"}),
        ("load", {"path": "digest/loop.md"}),
        ("stat", {"path": "digest/loop.md"}),
        ("write", {"path": "digest/loop.md", "content": "x"}),
        ("save", {"path": "digest/loop.md", "content": "x"}),
        ("edit", {"path": "digest/loop.md", "old": "a", "new": "b"}),
        ("write", {"path": "digest/ring/note.md", "content": "x"}),
        ("list", {"path": "digest/ring"}),
    ]:
        response = await app.run(job, **params)
        assert refused(response), (job, response.answer)
        assert "symbolic link" in response.answer, (job, response.answer)
    assert snapshot(root, skip=METADATA) == before
    assert (await app.run("list", path="digest")).success
    assert (await app.run("delete", path="digest/loop.md")).success
    assert not (root / "digest/loop.md").is_symlink()


async def test_moving_a_link_onto_the_file_it_points_at_loses_nothing(app):
    root = app.workspace_dir
    (root / "digest/real.md").write_text("the only copy\n")
    (root / "digest/alias.md").symlink_to("real.md")
    before = snapshot(root, skip=METADATA)
    response = await app.run("move", src="digest/alias.md", dst="digest/real.md", overwrite=True)
    assert refused(response) and "same file" in response.answer
    assert snapshot(root, skip=METADATA) == before
    assert (root / "digest/real.md").read_text() == "the only copy\n"


async def test_moving_a_folder_into_itself_through_a_link_is_refused_cleanly(app):
    root = app.workspace_dir
    (root / "digest/dir").mkdir()
    (root / "digest/dir/n.md").write_text("n\n")
    (root / "digest/alias").symlink_to("dir", target_is_directory=True)
    before = snapshot(root, skip=METADATA)
    response = await app.run("move", src="digest/dir", dst="digest/alias/sub")
    assert refused(response) and "into itself" in response.answer
    assert snapshot(root, skip=METADATA) == before


async def test_deleting_a_folder_that_holds_links_to_outside_leaves_the_outside_alone(app, tmp_path):
    root = app.workspace_dir
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_text("outside\n")
    (root / "digest/f").mkdir()
    (root / "digest/f/x.md").write_text("x\n")
    (root / "digest/f/folder").symlink_to(outside, target_is_directory=True)
    (root / "digest/f/file.md").symlink_to(outside / "keep.md")
    assert (await app.run("delete", path="digest/f")).success
    assert not (root / "digest/f").exists()
    assert (outside / "keep.md").read_text() == "outside\n"


async def test_a_write_never_reads_an_outside_file_swapped_in_under_its_lock(app, tmp_path):
    """The previous version kept by `write` must come from the workspace, never through a fresh link."""
    root = app.workspace_dir
    (tmp_path / "secret.txt").write_text("TOPSECRET-7f3a\n")
    (root / "resource/x.txt").write_text("mine\n")
    ws = workspace_of(app)
    real_lock = ws.lock

    @contextlib.contextmanager
    def swapping(*paths: str) -> Iterator[None]:
        with real_lock(*paths):
            if "resource/x.txt" in paths and not (root / "resource/x.txt").is_symlink():
                (root / "resource/x.txt").unlink()
                (root / "resource/x.txt").symlink_to(tmp_path / "secret.txt")
            yield

    ws.lock = swapping  # type: ignore[method-assign]
    response = await app.run("write", path="resource/x.txt", content="new\n")
    assert refused(response), response.answer
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert b"TOPSECRET-7f3a" not in path.read_bytes(), path
    assert (tmp_path / "secret.txt").read_text() == "TOPSECRET-7f3a\n"


# hard links --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "params"),
    [
        ("write", {"path": "digest/hl.md", "content": "changed\n"}),
        ("save", {"path": "digest/hl.md", "content": "changed\n"}),
        ("edit", {"path": "digest/hl.md", "old": "outside", "new": "changed"}),
        ("frontmatter_update", {"path": "digest/hl.md", "metadata": {"a": 1}}),
    ],
)
async def test_a_write_through_a_hard_link_never_changes_the_outside_file(app, tmp_path, job, params):
    outside = tmp_path / "victim.md"
    outside.write_text("outside\n")
    os.link(outside, app.workspace_dir / "digest/hl.md")
    assert (await app.run(job, **params)).success
    assert outside.read_text() == "outside\n"
    assert (app.workspace_dir / "digest/hl.md").read_text() != "outside\n"


# names -------------------------------------------------------------------------------------------


async def test_a_long_multibyte_name_within_255_bytes_can_be_written_and_replaced(app):
    name = "digest/" + "光" * 83 + ".md"  # 252 bytes: a valid name
    assert (await app.run("write", path=name, content="one\n")).success
    replaced = await app.run("write", path=name, content="two\n")
    assert replaced.success, replaced.answer
    assert (app.workspace_dir / name).read_text() == "two\n"
    assert not [p for p in (app.workspace_dir / "digest").iterdir() if p.name.startswith(".")]


async def test_a_name_over_255_bytes_is_refused(app):
    response = await app.run("write", path="digest/" + "光" * 85 + ".md", content="x")
    assert refused(response) and "255 bytes" in response.answer


async def test_a_second_unicode_form_of_an_existing_name_is_refused(app):
    root = app.workspace_dir
    assert (await app.run("write", path="digest/caf\u00e9.md", content="nfc\n")).success
    (root / "digest/note.md").write_text("note\n")
    before = snapshot(root, skip=METADATA)
    for job, params in [
        ("write", {"path": "digest/cafe\u0301.md", "content": "nfd\n"}),
        ("save", {"path": "digest/cafe\u0301.md", "content": "nfd\n"}),
        ("move", {"src": "digest/note.md", "dst": "digest/cafe\u0301.md"}),
    ]:
        response = await app.run(job, **params)
        assert refused(response) and "digest/caf\u00e9.md" in response.answer, (job, response.answer)
    assert snapshot(root, skip=METADATA) == before
    assert (await app.run("write", path="digest/caf\u00e9.md", content="again\n")).success


async def test_a_case_only_rename_moves_the_file(app):
    (app.workspace_dir / "digest/Note.md").write_text("note\n")
    assert (await app.run("move", src="digest/Note.md", dst="digest/note.md")).success
    assert sorted(p.name for p in (app.workspace_dir / "digest").glob("*ote.md")) == ["note.md"]


async def test_a_name_reme_uses_for_its_temporary_files_is_refused(app):
    """Such a file would be swept away as a dead writer's leftover."""
    before = snapshot(app.workspace_dir, skip=METADATA)
    response = await app.run("write", path="digest/.a.1.abcdef01.reme-tmp", content="data")
    assert refused(response) and ".reme-tmp" in response.answer
    assert snapshot(app.workspace_dir, skip=METADATA) == before


# previous versions -------------------------------------------------------------------------------


async def test_pruning_previous_versions_never_deletes_other_files(app):
    """Only the versions reme kept are pruned, whatever else sits in their folder."""
    root = app.workspace_dir
    (root / "digest/wiki").mkdir()
    for i in range(12):
        (root / f"digest/wiki/n{i:02d}.md").write_text(f"note {i}\n")
    assert (await app.run("write", path="digest/a.md", content="v1\n")).success
    assert (await app.run("move", src="digest/wiki", dst="journal/replaced/digest/a.md/wiki")).success
    assert (await app.run("move", src="journal/replaced/digest/a.md", dst="journal/old")).success
    assert (await app.run("move", src="journal/old/wiki", dst="journal/replaced/digest/a.md")).success
    response = await app.run("write", path="digest/a.md", content="v2\n")
    assert response.success
    kept = root / response.metadata["previous_version"]
    assert kept.read_text() == "v1\n"
    names = sorted(p.name for p in kept.parent.iterdir())
    assert [f"n{i:02d}.md" for i in range(12)] == [name for name in names if name.startswith("n")]


# front matter ------------------------------------------------------------------------------------


async def test_duplicate_keys_are_named_in_the_refusal_and_the_file_stays(app):
    path = app.workspace_dir / "digest/dup.md"
    path.write_text("---\na: 1\na: 2\n---\nbody\n")
    response = await app.run("frontmatter_update", path="digest/dup.md", metadata={"b": 3})
    assert refused(response)
    assert 'duplicate key "a"' in response.answer and "suppress" not in response.answer
    assert "\n" not in response.answer
    assert path.read_text() == "---\na: 1\na: 2\n---\nbody\n"


@pytest.mark.parametrize(
    "head",
    [
        "---\n!!python/object/apply:os.system ['touch /tmp/pwned']\n---\n",
        "---\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n---\n",
        "---\na: " + "[" * 100 + "]" * 100 + "\n---\n",
    ],
)
async def test_hostile_front_matter_is_refused_by_write_and_kept_by_edit(app, head):
    assert refused(await app.run("write", path="digest/h.md", content=head + "body\n"))
    assert not (app.workspace_dir / "digest/h.md").exists()
    (app.workspace_dir / "digest/h.md").write_text(head + "body\n")
    assert refused(await app.run("frontmatter_update", path="digest/h.md", metadata={"x": 1}))
    assert (await app.run("edit", path="digest/h.md", old="body", new="text")).success
    assert (app.workspace_dir / "digest/h.md").read_text() == head + "text\n"


async def test_a_bom_and_crlf_survive_front_matter_writes(app):
    path = app.workspace_dir / "digest/bom.md"
    path.write_bytes(b"\xef\xbb\xbf---\r\nname: x\r\n---\r\nbody\r\n")
    assert (await app.run("frontmatter_update", path="digest/bom.md", metadata={"b": 3})).success
    assert path.read_bytes() == b"\xef\xbb\xbf---\r\nname: x\r\nb: 3\r\n---\r\nbody\r\n"
    assert (await app.run("write", path="digest/bom.md", content="new\r\n", name="y")).success
    assert path.read_bytes() == b"\xef\xbb\xbf---\r\nname: y\r\nb: 3\r\n---\r\nnew\r\n"


async def test_edit_with_overlapping_matches_replaces_left_to_right(app):
    (app.workspace_dir / "digest/e.md").write_text("aaaa\n")
    response = await app.run("edit", path="digest/e.md", old="aa", new="a")
    assert response.success and response.metadata["count"] == 2
    assert (app.workspace_dir / "digest/e.md").read_text() == "aa\n"
    assert refused(await app.run("edit", path="digest/e.md", old="", new="x"))


# racing writers ----------------------------------------------------------------------------------


async def test_concurrent_saves_from_one_load_let_exactly_one_win(app):
    (app.workspace_dir / "digest/c.md").write_text("base\n")
    sha = (await app.run("load", path="digest/c.md")).metadata["sha256"]
    results = await asyncio.gather(
        *(app.run("save", path="digest/c.md", content=f"w{i}\n", expected_sha256=sha) for i in range(8))
    )
    winners = [i for i, result in enumerate(results) if result.success]
    assert len(winners) == 1
    assert all("conflict" in result.answer for result in results if not result.success)
    assert (app.workspace_dir / "digest/c.md").read_text() == f"w{winners[0]}\n"


def test_writers_of_a_file_and_of_a_link_to_it_exclude_each_other(tmp_path):
    """Compare-and-set through `alias.md` must wait for a writer of `real.md`: they are one file."""
    ws = Workspace(tmp_path / "ws", lock_timeout=0.2)
    ws.ensure_layout()
    (ws.root / "digest/real.md").write_text("x\n")
    (ws.root / "digest/alias.md").symlink_to("real.md")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with ws.lock("digest/real.md"):
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert holding.wait(10)
        with pytest.raises(LockTimeoutError), ws.lock("digest/alias.md"):
            pass
    finally:
        release.set()
        thread.join()

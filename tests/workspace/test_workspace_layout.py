"""Workspace layout (docs/spec.md §1): created on start, configurable names, user files and 0.4 workspaces untouched."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from reme import ReMe
from reme.app.application import ComponentError
from reme.workspace.layout import Workspace

OLD_DERIVED = ("metadata/file_graph.json", "metadata/bm25", "metadata/bm25/index.bin")


def tree(root: Path) -> dict[str, str]:
    """User files plus ReMe 0.4's own derived files; reme's new derived state under metadata/ is ignored."""
    return {
        key: "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if not (key := str(path.relative_to(root))).startswith("metadata") or key in OLD_DERIVED
    }


async def test_start_creates_the_layout(app):
    root = app.workspace_dir
    # journal/ is created by the first run that records something (a ReMe 0.4 workspace opens unchanged)
    assert sorted(p.name for p in root.iterdir()) == ["daily", "digest", "metadata", "resource", "session"]
    component = app.component("workspace")
    assert component.kind == "workspace" and component.root == root
    assert component.dirs == {
        "metadata": "metadata",
        "session": "session",
        "daily": "daily",
        "digest": "digest",
        "resource": "resource",
        "journal": "journal",
    }
    assert component.resolve("digest/a", markdown=True) == root / "digest/a.md"
    assert component.health()["status"] == "ok"


async def test_folder_names_are_configurable(tmp_path):
    overrides = {"components.workspace.dirs.daily": "days", "components.workspace.dirs.session": "chats"}
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **overrides) as app:
        assert (tmp_path / "ws/days").is_dir() and not (tmp_path / "ws/daily").exists()
        created = await app.run("daily_create", date="2026-06-01", session_id="s1")
        assert created.metadata["path"] == "days/2026-06-01/s1.md"
        text = (tmp_path / "ws/days/2026-06-01/s1.md").read_text()
        assert "source_conversation: '[[chats/dialog/s1.jsonl]]'" in text
        listed = await app.run("daily_list", date="2026-06-01")
        assert [note["path"] for note in listed.metadata["notes"]] == ["days/2026-06-01/s1.md"]


@pytest.mark.parametrize(
    "dirs",
    [{"daily": "../daily"}, {"daily": "digest"}, {"unknown": "x"}, {"metadata": ""}],
)
def test_bad_folder_names_are_refused(tmp_path, dirs):
    with pytest.raises(ValueError):
        Workspace(tmp_path, dirs)


async def test_a_file_where_a_layout_folder_belongs_stops_start_with_a_message(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "daily").write_text("I am a file")
    with pytest.raises(ComponentError, match="daily"):
        async with ReMe(workspace_dir=root, timezone="UTC"):
            pass
    assert (root / "daily").read_text() == "I am a file"


def make_reme04_workspace(root: Path) -> None:
    """A workspace as ReMe 0.4 left it: same folders, its own derived state in metadata/."""
    files = {
        "metadata/file_graph.json": '{"nodes": {}}',
        "metadata/bm25/index.bin": "opaque",
        "session/dialog/s1.jsonl": '{"role": "user", "content": "hi"}\n',
        "daily/2026-05-01.md": "---\nname: '2026-05-01'\ndescription: 1 note(s) today.\n---\n"
        "My own words.\n<!-- notes:auto -->\n- [[daily/2026-05-01/s1.md]] name: s1 description: old\n"
        "<!-- /notes:auto -->\n",
        "daily/2026-05-01/s1.md": "---\nname: s1\ndescription: First chat\nsession_id: s1\n"
        "source_conversation: '[[session/dialog/s1.jsonl]]'\n---\n- fact one\n",
        "daily/2026-05-01/interests.yaml": "topics: []\n",
        "daily/_proactive.yaml": "version: 2\n",
        "digest/wiki/solar.md": "---\nname: solar\n---\nSee [[daily/2026-05-01/s1.md]]\n",
        "digest/_buckets.md": "# buckets\n",
        "resource/2026-05-01/report.md": "raw material\n",
        "resource/loose.txt": "loose\n",
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    os.chmod(root / "resource/loose.txt", 0o640)


async def test_a_reme04_workspace_opens_unchanged_and_is_extended(tmp_path):
    root = tmp_path / "ws"
    make_reme04_workspace(root)
    before = tree(root)
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        assert tree(root) == before
        listed = await app.run("daily_list", date="2026-05-01")
        assert listed.metadata["notes"] == [
            {"path": "daily/2026-05-01/s1.md", "name": "s1", "description": "First chat"}
        ]
        read = await app.run("read", path="digest/wiki/solar")
        assert read.answer == "---\nname: solar\n---\nSee [[daily/2026-05-01/s1.md]]\n"
        reindexed = await app.run("daily_reindex", date="2026-05-01")
        assert reindexed.metadata["changed"] is True
        page = (root / "daily/2026-05-01.md").read_text()
        assert page.startswith("---\nname: '2026-05-01'\ndescription: 1 note(s) today.\n---\nMy own words.\n")
        assert "- [[daily/2026-05-01/s1.md]] name: s1 description: First chat\n" in page
    untouched = {k: v for k, v in tree(root).items() if k != "daily/2026-05-01.md"}
    assert untouched == {k: v for k, v in before.items() if k != "daily/2026-05-01.md"}
    assert oct(os.stat(root / "resource/loose.txt").st_mode & 0o777) == "0o640"


async def test_writes_keep_the_mode_of_an_existing_file(app):
    path = app.workspace_dir / "digest/private.md"
    path.write_text("secret\n")
    os.chmod(path, 0o600)
    assert (await app.run("edit", path="digest/private.md", old="secret", new="still secret")).success
    assert path.stat().st_mode & 0o777 == 0o600

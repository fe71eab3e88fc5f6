"""What is indexed (docs/spec.md §5.6): every Markdown file but metadata/, journal/, resource/, plus transcripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme import ReMe
from reme.index.sources import configured_scope, default_scope
from reme.workspace.layout import DEFAULT_DIRS

FILES = {
    "top.md": "kiwi at the top\n",
    "projects/ideas.md": "kiwi project idea\n",
    "projects/deep/er/note.markdown": "kiwi deep note\n",
    "daily/2026-06-01/card.md": "kiwi card\n",
    "session/dialog/s1.jsonl": '{"id": "1", "role": "user", "name": "a", "content": "kiwi chat", '
    '"created_at": "2026-06-01T10:00:00"}\n',
    "session/notes.md": "kiwi session note\n",
    "journal/dream/2026-06-01.md": "kiwi journal\n",
    "resource/2026-06-01/raw.md": "kiwi raw\n",
    "projects/data.txt": "kiwi text file\n",
    "projects/.hidden/secret.md": "kiwi hidden\n",
    "session/dialog/old/s0.jsonl": '{"id": "1", "role": "user", "content": "kiwi nested"}\n',
}
INDEXED = {
    "top.md",
    "projects/ideas.md",
    "projects/deep/er/note.markdown",
    "daily/2026-06-01/card.md",
    "session/dialog/s1.jsonl",
    "session/notes.md",
}


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text, encoding="utf-8")


async def found(app, query: str = "kiwi") -> set[str]:
    response = await app.run("search", query=query, limit=50)
    assert response.success, response.answer
    return {hit["path"] for hit in response.metadata["results"]}


async def test_notes_outside_daily_and_digest_are_found(app) -> None:
    write(app.workspace_dir, FILES)
    assert await found(app) == INDEXED
    index = app.component("index").service
    assert set(index.indexer.scan()) == INDEXED | {"digest/_buckets.md"}  # the generated bucket page too
    assert not any(path.startswith("metadata/") for path in index.store.stamps())


async def test_a_note_written_anywhere_is_indexed_at_once(app) -> None:
    response = await app.run("write", path="projects/ideas.md", content="a mango idea")
    assert response.success and response.metadata["indexed"] is True
    assert "not be indexed" not in response.answer
    assert await found(app, "mango") == {"projects/ideas.md"}


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("journal/mine.md", "'journal' is excluded"),
        ("projects/list.txt", ".md, .markdown files anywhere; .jsonl files in session/dialog/"),
    ],
)
async def test_write_of_a_file_that_will_not_be_indexed_says_so(app, path: str, why: str) -> None:
    response = await app.run("write", path=path, content="papaya")
    assert response.success  # written all the same
    assert (app.workspace_dir / path).read_text(encoding="utf-8").endswith("papaya")
    assert response.metadata["indexed"] is False
    assert why in response.metadata["not_indexed_reason"]
    assert "will not be indexed" in response.answer and why in response.answer
    assert await found(app, "papaya") == set()


async def test_include_and_exclude_lists_are_configurable(workspace_dir: Path) -> None:
    write(workspace_dir, FILES)
    overrides = {
        "components.index.exclude": ["projects/deep", "*.markdown", "session/notes.md"],
    }
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **overrides) as app:
        assert await found(app) == {
            "top.md",
            "projects/ideas.md",
            "daily/2026-06-01/card.md",
            "session/dialog/s1.jsonl",
            "journal/dream/2026-06-01.md",  # no longer excluded once the list is set
            "resource/2026-06-01/raw.md",
        }
        response = await app.run("write", path="drafts/x.markdown", content="fig")
        assert response.metadata["indexed"] is False and "'*.markdown'" in response.answer
    only = {"components.index.sources": [{"folder": "projects", "extensions": [".md", ".txt"]}]}
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **only) as app:
        assert await found(app) == {"projects/ideas.md", "projects/data.txt"}  # a layout change: rebuilt


def test_a_source_inside_an_excluded_folder_is_wanted_and_metadata_never_is() -> None:
    scope = configured_scope(DEFAULT_DIRS, [{"folder": "resource", "extensions": [".md"]}], None)
    assert scope.admits("resource/2026-06-01/raw.md")
    scope = configured_scope(DEFAULT_DIRS, None, [])
    assert scope.admits("journal/x.md") and scope.admits("resource/x.md")
    assert not scope.admits("metadata/x.md") and not scope.admits("METADATA/x.md")
    default = default_scope({**DEFAULT_DIRS, "journal": "logbook"})
    assert not default.admits("logbook/x.md") and default.admits("journal/x.md")


@pytest.mark.parametrize(
    ("sources", "exclude"),
    [(None, "journal"), (None, ["../up"]), (None, [""]), ([{"folder": "x", "extensions": ["md"]}], None)],
)
def test_bad_lists_are_refused_with_what_to_fix(sources, exclude) -> None:
    with pytest.raises(ValueError):
        configured_scope(DEFAULT_DIRS, sources, exclude)

"""Adversarial review of the index, search, traverse and proactive_read (each test asserts the
behaviour docs/spec.md asks for; they were written against defects found by running them)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reme import ReMe
from reme.index.chunk_markdown import markdown_windows

QUIET = {"scheduler.cron": False}


@pytest.fixture
async def quiet_app(tmp_path: Path) -> AsyncIterator[ReMe]:
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **QUIET) as started:
        yield started


def _note(app: ReMe, rel: str, data: bytes) -> Path:
    path = app.workspace_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


async def _hits(app: ReMe, query: str) -> list[dict]:
    response = await app.run("search", query=query)
    assert response.success, response.answer
    return response.metadata["results"]


# §4: every Markdown file is chunked, line numbers are the file's. A lone CR (old Mac line ending,
# or one pasted inside a line) made the parser and the chunker count lines differently.


async def test_a_lone_cr_inside_a_line_keeps_the_file_searchable(quiet_app: ReMe) -> None:
    body = "# T\n\nab\rcd\n" + "".join(f"line{i}\n" for i in range(20)) + "\n## End\n\nstraycrword\n"
    _note(quiet_app, "digest/stray.md", body.encode())
    assert (await quiet_app.run("reindex")).success
    hits = await _hits(quiet_app, "straycrword")
    assert [h["path"] for h in hits] == ["digest/stray.md"]


async def test_a_file_with_cr_only_line_endings_is_searchable(quiet_app: ReMe) -> None:
    _note(quiet_app, "digest/cr.md", b"# T\r\rline1\rline2\r\r## H2\r\rcrword here\r")
    assert (await quiet_app.run("reindex")).success
    hits = await _hits(quiet_app, "crword")
    assert [h["path"] for h in hits] == ["digest/cr.md"]


def test_a_lone_cr_does_not_shift_or_drop_later_sections() -> None:
    text = "# T\n\nab\rcd\n\n## S\n\nshiftword\n\n\n\n"
    lines = text.split("\n")
    chunks = [c for window in markdown_windows("x.md", text, 300) for c in window]
    found = [c for c in chunks if "shiftword" in c.text]
    assert found, [(c.start_line, c.end_line, c.text) for c in chunks]
    for chunk in found:
        assert "shiftword" in "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


# §13.2: "unreadable or unparsable YAML -> success=false, answer starts with `Error:`".


@pytest.mark.parametrize("horizon", [1, 7])
async def test_deeply_nested_proactive_yaml_is_an_error_not_a_bug(quiet_app: ReMe, horizon: int) -> None:
    nested = "x: " + "[" * 3000 + "]" * 3000 + "\n"
    _note(quiet_app, "daily/_proactive.yaml", nested.encode())
    _note(quiet_app, "daily/2026-06-21/interests.yaml", nested.encode())
    response = await quiet_app.run("proactive_read", date="2026-06-21", horizon_days=horizon)
    assert not response.success
    assert isinstance(response.answer, str) and response.answer.startswith("Error:"), response.answer


# §3/§5.6: derived state under metadata/ is rebuilt from the files when missing or inconsistent.


async def test_a_file_where_the_keyword_engine_folder_belongs_is_rebuilt(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    async with ReMe(workspace_dir=ws, timezone="UTC", **QUIET) as app:
        _note(app, "digest/a.md", b"# A\n\nzebraword\n")
        assert (await app.run("reindex")).success
    engine = next((ws / "metadata/keyword").iterdir())
    shutil.rmtree(engine)
    engine.write_text("garbage")
    async with ReMe(workspace_dir=ws, timezone="UTC", **QUIET) as app:  # today: ComponentError at start
        assert (await app.run("reindex")).success
        assert [h["path"] for h in await _hits(app, "zebraword")] == ["digest/a.md"]


# §2.2: "A target that names no existing file is resolved ...; ambiguous or none -> pending."
# A folder is not a file: a link to it is pending, and its traverse node does not exist.


async def test_a_link_to_a_folder_is_pending_not_resolved(quiet_app: ReMe) -> None:
    _note(quiet_app, "digest/sub/x.md", b"# X\n")
    _note(quiet_app, "digest/a.md", b"# A\n\n[[digest/sub]]\n")
    assert (await quiet_app.run("reindex")).success
    response = await quiet_app.run("traverse", path="digest/a.md")
    assert response.success, response.answer
    edges = response.metadata["edges"]
    assert [e["target"] for e in edges] == ["digest/sub"]
    assert edges[0].get("resolved") is None
    nodes = {n["path"]: n for n in response.metadata["nodes"]}
    assert not nodes.get("digest/sub", {"exists": False})["exists"]


# A file or folder whose name is not UTF-8 (copied from an old Latin-1 disk) made search, reindex
# and stat answer "internal error" for the whole workspace: no catalog path can hold it.


async def test_a_name_that_is_not_utf8_is_left_out_of_the_index_not_fatal(
    quiet_app: ReMe, caplog: pytest.LogCaptureFixture
) -> None:
    root = bytes(quiet_app.workspace_dir)
    _note(quiet_app, "digest/fine.md", b"# Fine\n\nsolar panels\n")
    os.makedirs(root + b"/digest/caf\xe9", exist_ok=True)
    for name in (b"/digest/caf\xe9/note.md", b"/digest/r\xe9sum\xe9.md"):
        with open(root + name, "wb") as handle:
            handle.write(b"# Latin\n\nsolar wind\n")
    reindexed = await quiet_app.run("reindex")
    assert reindexed.success, reindexed.answer
    assert [hit["path"] for hit in await _hits(quiet_app, "solar")] == ["digest/fine.md"]
    assert (await quiet_app.run("stat", path="digest")).success
    assert "is not UTF-8; rename it to index it" in caplog.text


async def test_a_watcher_event_for_a_name_that_is_not_utf8_changes_nothing(quiet_app: ReMe) -> None:
    from reme.app.components.index import index_service

    _note(quiet_app, "digest/fine.md", b"# Fine\n\nsolar panels\n")
    with open(bytes(quiet_app.workspace_dir) + b"/digest/r\xe9sum\xe9.md", "wb") as handle:
        handle.write(b"# Latin\n\nsolar wind\n")
    service = index_service(quiet_app)
    service.indexer.sync_paths([os.fsdecode(b"digest/r\xe9sum\xe9.md"), "digest/fine.md"])
    assert [hit["path"] for hit in await _hits(quiet_app, "solar")] == ["digest/fine.md"]

"""`AppPort.save_batch`: many writes, one index update, compare-and-set per file."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme import ReMe
from reme.app.port import AppPort
from reme.errors import Conflict


async def test_a_batch_is_written_and_indexed(app: ReMe, workspace_dir: Path) -> None:
    port = AppPort(app)
    files = [(f"notes/n{i}.md", f"# Note {i}\n\nzebra{i} lives here.\n", None) for i in range(250)]
    await port.save_batch(files)
    assert (workspace_dir / "notes" / "n249.md").read_text() == "# Note 249\n\nzebra249 lives here.\n"
    hits = (await app.run("search", query="zebra249")).metadata["results"]
    assert hits[0]["path"] == "notes/n249.md"


async def test_a_stale_version_stops_the_batch_and_what_was_written_is_indexed(
    app: ReMe, workspace_dir: Path
) -> None:
    port = AppPort(app)
    await port.save_batch([("notes/b.md", "old text\n", None)])
    with pytest.raises(Conflict):
        await port.save_batch([("notes/a.md", "quokka text\n", None), ("notes/b.md", "new\n", "0" * 64)])
    assert (workspace_dir / "notes" / "b.md").read_text() == "old text\n"
    hits = (await app.run("search", query="quokka")).metadata["results"]
    assert [hit["path"] for hit in hits] == ["notes/a.md"]

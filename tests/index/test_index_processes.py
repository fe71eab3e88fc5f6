"""Two processes on one workspace, and the live update loop following another process's writes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from reme import ReMe

    workspace, folder, count = sys.argv[1], sys.argv[2], int(sys.argv[3])

    async def main():
        async with ReMe(workspace_dir=workspace, timezone="UTC") as app:
            index = app.component("index").service
            for i in range(count):
                path = f"{folder}/f{i}.md"
                (Path(workspace) / path).parent.mkdir(parents=True, exist_ok=True)
                (Path(workspace) / path).write_text(f"{Path(folder).name} document {i} [[digest/shared.md]]")
                await asyncio.to_thread(index.sync_paths, [path])
                await asyncio.to_thread(index.sync_paths, ["digest/shared.md"])
            print(index.keyword.search(Path(folder).name, 100).__len__(), flush=True)

    asyncio.run(main())
    """
)


def start_writer(tmp_path: Path, root: Path, folder: str, count: int) -> subprocess.Popen:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    return subprocess.Popen(
        [sys.executable, str(script), str(root), folder, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_two_processes_write_the_same_index(app, tmp_path: Path) -> None:
    root = app.workspace_dir
    index = app.component("index").service
    index.ensure_ready()
    other = start_writer(tmp_path, root, "digest/beta", 12)
    shared = root / "digest/shared.md"
    for i in range(12):
        path = root / f"digest/alpha/f{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"alpha document {i}")
        shared.write_text(f"shared version {i}")  # both processes keep syncing this one too
        await asyncio.to_thread(index.sync_paths, [f"digest/alpha/f{i}.md", "digest/shared.md"])
    out, err = other.communicate(timeout=90)
    assert other.returncode == 0, err
    assert int(out.strip()) == 12  # the other process saw all its own writes

    assert len(index.keyword.search("beta", 100)) == 12  # and this one sees them too
    assert len(index.keyword.search("alpha", 100)) == 12
    (root / "digest/_buckets.md").unlink()  # the generated bucket page; this test counts its own files
    index.sync_paths(["digest"])
    stats = index.stats()
    assert stats["files"] == 25 and stats["keyword_docs"] == 25
    assert index.store.intents() == []
    assert len(index.inbound("digest/shared.md")) == 12
    response = await app.run("search", query="shared version")
    assert response.metadata["results"][0]["text"] == "shared version 11"


async def wait_for(predicate, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await asyncio.to_thread(predicate):
            return True
        await asyncio.sleep(0.1)
    return False


async def test_update_loop_reconciles_then_follows_another_process(app) -> None:
    root = app.workspace_dir
    index = app.component("index").service
    (root / "digest").mkdir(exist_ok=True)
    (root / "digest/early.md").write_text("written while the service was down: marmalade")
    app.start_background()
    assert await wait_for(lambda: index.store.file("digest/early.md") is not None)

    writer = (
        "import pathlib, sys; p = pathlib.Path(sys.argv[1]) / 'daily/2026-06-01/live.md';"
        "p.parent.mkdir(parents=True, exist_ok=True); p.write_text('# Live\\n\\nquokka sighting [[digest/early.md]]')"
    )
    subprocess.run([sys.executable, "-c", writer, str(root)], check=True, timeout=30)
    # the engine is written before the catalog: a search hydrates from the catalog, so wait for both
    assert await wait_for(
        lambda: (
            [c for c, _ in index.keyword.search("quokka", 5)] != []
            and index.store.file("daily/2026-06-01/live.md") is not None
        )
    )
    response = await app.run("search", query="quokka")
    assert response.metadata["results"][0]["path"] == "daily/2026-06-01/live.md"
    assert index.inbound("digest/early.md") == [
        {
            "source_path": "daily/2026-06-01/live.md",
            "target_path": "digest/early.md",
            "resolved_path": "digest/early.md",
        }
    ]

    (root / "daily/2026-06-01/live.md").unlink()
    assert await wait_for(lambda: index.store.file("daily/2026-06-01/live.md") is None)
    assert index.keyword.search("quokka", 5) == []

    # a burst of files is batched into few updates and all of them land
    for i in range(20):
        (root / f"digest/burst{i}.md").write_text(f"wombat {i}")
    assert await wait_for(lambda: len(index.keyword.search("wombat", 50)) == 20)

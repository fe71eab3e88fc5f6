"""`AppPort`: the pipelines' MemoryPort over the file jobs, with clear errors and nothing half-done."""

from __future__ import annotations

import multiprocessing

import pytest

from reme import ReMe
from reme.app.port import AppPort
from reme.errors import Conflict, LLMUnavailable, ReMeError


@pytest.fixture
async def port(workspace_dir):
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC") as app:
        yield AppPort(app)


async def test_load_and_save_with_compare_and_set(port, workspace_dir):
    assert await port.load("digest/wiki/a.md") is None
    first = await port.save("digest/wiki/a.md", "one\n")
    loaded = await port.load("digest/wiki/a.md")
    assert loaded is not None and loaded.content == "one\n" and loaded.sha256 == first.sha256
    (workspace_dir / "digest/wiki/a.md").write_text("someone else\n")
    with pytest.raises(Conflict, match="save failed"):
        await port.save("digest/wiki/a.md", "two\n", expected_sha256=first.sha256)
    assert (workspace_dir / "digest/wiki/a.md").read_text() == "someone else\n"


async def test_failed_job_is_a_reme_error_with_the_jobs_message(port):
    with pytest.raises(ReMeError, match="absolute"):
        await port.save("/etc/passwd", "x")


async def test_list_files_front_matter_and_cards(port):
    assert await port.list_files("daily/2026-06-01") == []
    path, created = await port.create_card("2026-06-01", "trip", session_id="s1")
    assert (path, created) == ("daily/2026-06-01/trip.md", True)
    assert await port.create_card("2026-06-01", "trip", session_id="s1") == (path, False)
    await port.update_front_matter(path, {"pending": True})
    assert (await port.front_matter(path))["pending"] is True
    await port.delete_front_matter(path, ["pending"])
    assert "pending" not in await port.front_matter(path)
    entries = await port.list_files("daily/2026-06-01", extensions=(".md",))
    assert [e.path for e in entries] == [path] and entries[0].size > 0
    await port.refresh_day("2026-06-01")
    assert port.exists("daily/2026-06-01.md")


async def test_state_round_trips_and_unreadable_state_is_empty(port, workspace_dir):
    assert port.read_state("dream") == {}
    port.write_state("dream", {"files": {"daily/a.md": [1.0, 3]}})
    assert port.read_state("dream") == {"files": {"daily/a.md": [1.0, 3]}}
    (workspace_dir / "metadata/dream.json").write_text("{not json")
    assert port.read_state("dream") == {}
    with pytest.raises(ValueError):
        port.write_state("../escape", {})


async def test_agent_tools_are_the_declared_jobs_only(port):
    specs = port.agent_tools(("read", "edit"))
    assert [spec.job for spec in specs] == ["read", "edit"] and specs[1].writes
    for job in ("delete", "shell"):  # a job without an `agent:` block, and no job at all
        with pytest.raises(ReMeError, match=f"job '{job}' is not usable as an agent tool"):
            port.agent_tools(("read", job))


async def test_model_without_llm_names_the_setting(port):
    with pytest.raises(LLMUnavailable, match="no LLM configured"):
        port.model("memory")


def _hold(lock_dir: str, ready, release) -> None:
    import asyncio
    from pathlib import Path

    from reme.app.port import _exclusive

    async def hold() -> None:
        async with _exclusive(Path(lock_dir), "dream"):
            ready.set()
            release.wait(10)

    asyncio.run(hold())


@pytest.mark.slow
async def test_exclusive_refuses_a_second_holder_in_this_and_another_process(port, workspace_dir):
    async with port.exclusive("dream"):
        with pytest.raises(ReMeError, match=r"a dream run is in progress since .* \(process \d+\)"):
            async with port.exclusive("dream"):
                pass
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    other = ctx.Process(target=_hold, args=(str(workspace_dir / "metadata/locks"), ready, release))
    other.start()
    try:
        assert ready.wait(30)
        with pytest.raises(ReMeError, match="in progress"):
            async with port.exclusive("dream"):
                pass
    finally:
        release.set()
        other.join(30)
    async with port.exclusive("dream"):  # the other process has exited: the lock is free again
        pass


async def test_the_file_jobs_caps_apply_to_the_port_too(workspace_dir):
    """The port calls the workspace functions the jobs' steps call, with the caps of the jobs' config."""
    steps = [{"backend": "save", "max_text_bytes": 16}]
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **{"jobs.save.steps": steps}) as app:
        port = AppPort(app)
        await port.save("notes/a.md", "short\n")
        with pytest.raises(ReMeError, match="save failed"):
            await port.save("notes/a.md", "far too long for the cap\n")
        assert (workspace_dir / "notes/a.md").read_text() == "short\n"
        refused = await app.run("save", path="notes/a.md", content="far too long for the cap\n")
        assert not refused.success  # the job and the port refuse alike

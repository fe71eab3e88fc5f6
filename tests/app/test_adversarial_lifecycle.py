"""Closing the application while jobs run: they finish (or are stopped at a safe point) before any
component closes, every caller gets an answer, later jobs are refused, and the next start is clean.

A job is held mid-flight by a lock the test takes itself: the workspace's write lock of the note (a
`write` waits for it) or the index's writer lock (a `reindex` waits for it).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from reme import ReMe, ReMeSync
from reme.app.jobs import JobContext
from reme.app.registry import STEPS
from reme.errors import ReMeError
from reme.llm.testing.fake_openai import FakeOpenAI

NOTE = "notes/solar.md"
TEXT = "# Solar\n\nPanels turn light into power.\n"
QUIET = {"scheduler.cron": False}


def note_lock(app: ReMe, path: str = NOTE) -> FileLock:
    """The workspace's write lock of `path`, as another writer (another process) would take it."""
    return FileLock(app.component("workspace").workspace.locks.lock_file(path))  # type: ignore[attr-defined]


def index_lock(workspace_dir: Path) -> FileLock:
    """The index's writer lock (`metadata/index.lock`), as another process's index would take it."""
    return FileLock(workspace_dir / "metadata" / "index.lock")


@contextmanager
def held(lock: FileLock) -> Iterator[FileLock]:
    lock.acquire()
    try:
        yield lock
    finally:
        if lock.is_locked:
            lock.release()


async def stays_pending(task: asyncio.Future[Any], seconds: float = 0.5) -> bool:
    """Whether `task` is still pending after it had `seconds` to finish (it must not finish)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not task.done() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    return not task.done()


async def until(condition: Callable[[], object], seconds: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    assert condition()


async def clean_restart(workspace_dir: Path) -> dict[str, Any]:
    """Start the workspace again: nothing to recover, every lock free; the workspace's health."""
    for lock_file in [
        *(workspace_dir / "metadata" / "locks").glob("*.lock"),
        workspace_dir / "metadata" / "index.lock",
    ]:
        with FileLock(lock_file, timeout=0):  # raises when a lock is still held
            pass
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **QUIET) as again:
        health = (await again.run("health_check")).metadata["components"]["workspace"]
        assert "recovered_transactions" not in health and "recovered_moves" not in health, health
        hits = await again.run("search", query="panels light power")
        assert NOTE in [hit["path"] for hit in hits.metadata["results"]], hits.answer
        return health


@pytest.fixture
async def app(workspace_dir: Path) -> AsyncIterator[ReMe]:
    started = ReMe(workspace_dir=workspace_dir, timezone="UTC", **QUIET)
    await started.start()
    yield started
    await started.close()


# -- close waits for running jobs --------------------------------------------------------------------


@pytest.mark.parametrize("grace_s", [None, 0.0], ids=["within-grace", "past-grace"])
async def test_close_lets_a_running_write_finish_before_components_close(
    app: ReMe, workspace_dir: Path, grace_s: float | None
) -> None:
    """Was: close() returned at once; the write landed after the index had closed (its caller was
    told success, the index sync failed on a closed database). Past the grace period the write,
    already in its worker thread, still finishes: nothing closes under it."""
    with held(note_lock(app)) as lock:
        job = asyncio.create_task(app.run("write", path=NOTE, content=TEXT))
        await asyncio.sleep(0)  # the job has begun: it waits for the lock
        closing = asyncio.create_task(app.close() if grace_s is None else app.close(grace_s=grace_s))
        assert await stays_pending(closing), "close() returned while a write was still running"
        assert app.state == "closing"
        lock.release()
        response = await job
        await closing
    assert response.success and response.answer == f"Created {NOTE}", response.answer
    assert response.metadata["indexed"] is True, response.metadata
    assert (workspace_dir / NOTE).read_text(encoding="utf-8") == TEXT
    assert app.state == "closed"
    await clean_restart(workspace_dir)


async def test_a_job_started_after_close_began_is_refused_and_writes_nothing(
    app: ReMe, workspace_dir: Path
) -> None:
    """Was: a job started while close() ran went ahead (and, once closed, raised 'not started')."""
    with held(note_lock(app)) as lock:
        first = asyncio.create_task(app.run("write", path=NOTE, content=TEXT))
        await asyncio.sleep(0)
        closing = asyncio.create_task(app.close())
        await asyncio.sleep(0)
        late = await app.run("write", path="notes/late.md", content="# Late\n")
        chunks = [chunk async for chunk in app.stream("chat", query="anything?")]
        lock.release()
        await closing
    assert not late.success and late.error == "unavailable"
    assert "closing" in late.answer and "did not run" in late.answer, late.answer
    assert chunks[0]["type"] == "error" and "closing" in chunks[0]["message"], chunks
    assert chunks[-1] == {"type": "done", "success": False}
    assert (await first).success
    after = await app.run("write", path="notes/later.md", content="# Later\n")
    assert not after.success and "closed" in after.answer and "did not run" in after.answer, after.answer
    assert not (workspace_dir / "notes" / "late.md").exists()
    assert not (workspace_dir / "notes" / "later.md").exists()


async def test_reindex_running_at_close_ends_consistent_and_says_so(app: ReMe, workspace_dir: Path) -> None:
    """close() asks long work to stop at a consistent point: the reindex answers what it did, the
    index it leaves serves the next start without any recovery."""
    assert (await app.run("write", path=NOTE, content=TEXT)).success
    with held(index_lock(workspace_dir)) as lock:
        job = asyncio.create_task(app.run("reindex"))
        await asyncio.sleep(0)
        closing = asyncio.create_task(app.close())
        assert await stays_pending(closing), "close() returned while a reindex was still running"
        lock.release()
        response = await job
        await closing
    assert response.success and "stopped by shutdown" in response.answer, response.answer
    assert "the index is consistent" in response.answer
    await clean_restart(workspace_dir)


async def test_a_model_job_past_the_grace_period_is_stopped_and_its_caller_told(
    workspace_dir: Path, fake_server: FakeOpenAI
) -> None:
    """A job still waiting on a model when the grace period ends is stopped; its caller is told why."""
    fake_server.set_script([{"fault": "hang"}])
    llm = {
        "backend": "openai",
        "model": "fake-model",
        "base_url": fake_server.base_url,
        "api_key": "k",
        "timeout": 60,
    }
    app = ReMe(
        workspace_dir=workspace_dir,
        timezone="UTC",
        **QUIET,
        **{f"components.llm.{k}": v for k, v in llm.items()},
    )
    await app.start()
    assert (await app.run("write", path=NOTE, content=TEXT)).success
    job = asyncio.create_task(app.run("chat", query="what do I know about solar?"))
    await until(lambda: fake_server.requests)
    await app.close(grace_s=0)
    response = await job
    assert not response.success and response.error == "unavailable"
    assert "job 'chat' was stopped" in response.answer and "application closed" in response.answer
    assert "may be partly done" in response.answer, response.answer
    assert sorted(p.name for p in (workspace_dir / "notes").iterdir()) == ["solar.md"]
    await clean_restart(workspace_dir)


# -- close twice, from inside a job, start again ----------------------------------------------------


async def test_close_called_twice_at_once_closes_each_component_once(
    app: ReMe, workspace_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Was: the second close() closed the components again under the first ('closing component
    workspace failed': KeyError)."""
    assert (await app.run("write", path=NOTE, content=TEXT)).success
    await asyncio.gather(app.close(), app.close())
    await app.close()
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []
    assert app.state == "closed" and not app.components
    await clean_restart(workspace_dir)


async def close_from_inside(ctx: JobContext) -> None:
    await ctx.app.close()  # type: ignore[attr-defined]


async def test_close_from_inside_a_job_is_refused_and_the_app_keeps_running(workspace_dir: Path) -> None:
    """Was: close() from inside a job closed the components under that very job."""
    job = {"steps": [{"backend": "test_close_from_inside"}]}
    with STEPS.registered({"test_close_from_inside": close_from_inside}):
        async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **QUIET, **{"jobs.closer": job}) as app:
            response = await app.run("closer")
            assert not response.success and response.error == "user", response
            assert "close() was called from inside a job" in response.answer, response.answer
            assert app.state == "started"
            assert (await app.run("write", path=NOTE, content=TEXT)).success
    await clean_restart(workspace_dir)


async def test_start_while_closing_is_refused_and_start_after_close_is_clean(
    app: ReMe, workspace_dir: Path
) -> None:
    """Was: start() during close() answered 'started' for an application about to be closed."""
    with held(note_lock(app)) as lock:
        job = asyncio.create_task(app.run("write", path=NOTE, content=TEXT))
        await asyncio.sleep(0)
        closing = asyncio.create_task(app.close())
        await asyncio.sleep(0)
        with pytest.raises(RuntimeError, match="closing; wait for close"):
            await app.start()
        lock.release()
        await closing
    assert (await job).success
    await app.start()
    try:
        assert app.state == "started"
        hits = await app.run("search", query="panels light power")
        assert NOTE in [hit["path"] for hit in hits.metadata["results"]]
    finally:
        await app.close()
    await clean_restart(workspace_dir)


async def test_stopping_background_loops_leaves_no_lock_or_transaction_behind(workspace_dir: Path) -> None:
    """The update loop is stopped by close(); the next start recovers nothing and finds every note."""
    app = ReMe(workspace_dir=workspace_dir, timezone="UTC", **QUIET)
    await app.start(background=True)
    try:
        for n in range(5):
            assert (await app.run("write", path=f"notes/n{n}.md", content=f"# N{n}\n\nnote {n}\n")).success
        assert (await app.run("write", path=NOTE, content=TEXT)).success
        (workspace_dir / "notes" / "by-hand.md").write_text(
            "# By hand\n", encoding="utf-8"
        )  # the loop syncs it
    finally:
        await app.close()
    await clean_restart(workspace_dir)


# -- ReMeSync ------------------------------------------------------------------------------------------


def test_sync_close_answers_a_call_running_in_another_thread(workspace_dir: Path) -> None:
    """Was: close() stopped the loop under a call from another thread, which then waited forever."""
    app = ReMeSync(workspace_dir=workspace_dir, timezone="UTC", **QUIET)
    app.start()
    answers: list[Any] = []
    lock = note_lock(app.app)  # type: ignore[arg-type]
    with held(lock):
        caller = threading.Thread(target=lambda: answers.append(app.run("write", path=NOTE, content=TEXT)))
        caller.start()
        closer = threading.Thread(target=app.close)
        closer.start()
        closer.join(0.5)
        assert closer.is_alive(), "close() returned while a write was still running"
        lock.release()
        closer.join(30)
        caller.join(30)
    assert not caller.is_alive() and not closer.is_alive(), "a caller was left waiting"
    assert len(answers) == 1 and answers[0].success and answers[0].answer == f"Created {NOTE}", answers
    assert (workspace_dir / NOTE).read_text(encoding="utf-8") == TEXT
    with pytest.raises(ReMeError, match="closed"):
        app.run("version")
    app.close()  # again: nothing to do

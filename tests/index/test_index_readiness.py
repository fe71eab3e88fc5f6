"""Searching while the index still catches up with the files says so instead of a silent "No results"."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from reme import ReMe

NOT_WAITING = {
    f"jobs.{job}.steps": [{"backend": job, "ready_wait_s": 0}]
    for job in ("search", "node_search", "traverse")
}


def write_notes(root, count: int) -> None:
    for i in range(count):
        path = root / "digest" / f"note{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\nsolar panels {i}\n", encoding="utf-8")


class SlowCatchUp:
    """Makes the index's first reconcile stop at 1,200 of 5,183 files until `release()`."""

    def __init__(self, index, monkeypatch) -> None:
        self.reached, self._go = threading.Event(), threading.Event()
        real = index.indexer.reconcile

        def reconcile(progress=None):
            progress(1200, 5183)
            self.reached.set()
            self._go.wait(30)
            return real(progress)

        monkeypatch.setattr(index.indexer, "reconcile", reconcile)
        self.thread = threading.Thread(target=index.ensure_ready)
        self.thread.start()
        assert self.reached.wait(30)

    def release(self) -> None:
        self._go.set()
        self.thread.join(30)


async def indexed_once(workspace_dir) -> None:
    """A workspace indexed by an earlier process, so this start reconciles rather than rebuilds."""
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC") as app:
        write_notes(app.workspace_dir, 3)
        assert (await app.run("search", query="solar")).metadata["index_ready"] is True


@pytest.fixture
async def slow_app(workspace_dir, monkeypatch):
    await indexed_once(workspace_dir)
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **NOT_WAITING) as app:
        catch_up = SlowCatchUp(app.component("index").service, monkeypatch)
        yield app, catch_up
        catch_up.release()


@pytest.mark.parametrize(
    ("job", "params"),
    [
        ("search", {"query": "solar"}),
        ("node_search", {"query": "solar"}),
        ("traverse", {"path": "digest/note1.md"}),
    ],
)
async def test_answers_while_catching_up_say_the_index_is_not_ready(slow_app, job, params):
    app, catch_up = slow_app
    response = await app.run(job, **params)
    assert response.success, response.answer
    assert response.metadata["index_ready"] is False
    assert response.metadata["index_progress"] == {"phase": "reconcile", "done": 1200, "total": 5183}
    assert response.answer.startswith("Note: the index is still being brought up to date")
    assert "(1,200/5,183 files)" in response.answer
    catch_up.release()
    after = await app.run(job, **params)
    assert after.metadata["index_ready"] is True and "Note:" not in after.answer


async def test_a_search_waits_a_bounded_time_for_the_catch_up(workspace_dir, monkeypatch):
    await indexed_once(workspace_dir)
    # a wait longer than a loaded CI machine needs to finish the catch-up once released (the 2 s default
    # ran out there once); answering before the bound is what `slow_app`'s tests check
    waiting = {"jobs.search.steps": [{"backend": "search", "ready_wait_s": 30}]}
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **waiting) as app:
        catch_up = SlowCatchUp(app.component("index").service, monkeypatch)
        search = asyncio.create_task(app.run("search", query="solar"))
        await asyncio.to_thread(catch_up.release)
        response = await search
    assert response.metadata["index_ready"] is True
    assert len(response.metadata["results"]) == 3


async def test_catch_up_and_reindex_log_progress_lines(app, caplog):
    write_notes(app.workspace_dir, 450)
    with caplog.at_level(logging.INFO, logger="reme.index.progress"):
        assert (await app.run("search", query="solar")).metadata["index_ready"] is True
        assert (await app.run("reindex")).success
    lines = [r.getMessage() for r in caplog.records if r.name == "reme.index.progress"]
    # 450 notes + digest/_buckets.md
    assert "index: rebuild 200/451 files" in lines and "index: rebuild 451/451 files" in lines
    assert (
        lines.count("index: rebuild 451/451 files") == 2
        and lines[-1] == "index: rebuild finished (451 files)"
    )

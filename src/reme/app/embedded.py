"""The embedded Python API: reme inside the host's own process and event loop.

    async with reme.ReMe(workspace_dir="notes") as app:
        hits = await app.run("search", query="solar panels")

`ReMeSync` offers the same for synchronous code, on an event loop of its own in a worker thread:

    with reme.ReMeSync(workspace_dir="notes") as app:
        hits = app.run("search", query="solar panels")
        for chunk in app.stream("chat", query="what do I know about solar?"):
            ...
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine, Iterator
from concurrent.futures import Future, wait
from pathlib import Path
from typing import Any, TypeVar

from reme.app.application import Application
from reme.app.config import load_config
from reme.app.jobs import Chunk, Response
from reme.errors import ReMeError

T = TypeVar("T")


class ReMe(Application):
    """An `Application` configured from keyword arguments (`service={"port": 1}` or `**{"a.b": 1}`)."""

    def __init__(
        self, workspace_dir: str | Path | None = None, config: str | Path | None = None, **overrides: Any
    ):
        if workspace_dir is not None:
            overrides["workspace_dir"] = str(workspace_dir)
        super().__init__(load_config(config, overrides))


class ReMeSync:
    """Blocking wrapper: `with ReMeSync(workspace_dir=...) as app: app.run("search", query=...)`."""

    def __init__(
        self, workspace_dir: str | Path | None = None, config: str | Path | None = None, **overrides: Any
    ):
        self._app = ReMe(workspace_dir, config, **overrides)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="reme-loop", daemon=True)
        self._submitting = threading.Lock()  # a call is handed to the loop only while it will run it
        self._stopping = False
        self._pending: set[Future[Any]] = set()  # calls handed to the loop and not yet answered

    @property
    def app(self) -> Application:
        return self._app

    def _require_running(self) -> None:
        """Refuse instead of waiting forever on a loop that no thread runs (or soon none will)."""
        if self._stopping or not self._thread.is_alive():
            state = "closed" if self._stopping or self._loop.is_closed() else "not started"
            raise ReMeError(
                f"ReMeSync is {state}: use `with ReMeSync(...) as app:` or call `app.start()` first"
            )

    def _call(self, coro: Coroutine[object, object, T]) -> T:
        with self._submitting:
            try:
                self._require_running()
            except ReMeError:
                coro.close()
                raise
            future = asyncio.run_coroutine_threadsafe(coro, self._loop)
            self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future.result()

    def start(self) -> ReMeSync:
        if self._loop.is_closed():
            raise ReMeError("this ReMeSync is closed; create a new one")
        if not self._thread.is_alive():
            self._thread.start()
        try:
            self._call(self._app.start())
        except BaseException:
            self.close()  # `with` calls no __exit__ when __enter__ raises: stop the loop thread here
            raise
        return self

    def run(self, job: str, /, **params: object) -> Response:
        return self._call(self._app.run(job, **params))

    def stream(self, job: str, /, **params: object) -> Iterator[Chunk]:
        """Chunks of a stream job as they come (`{"type": "text", ...}`), ending with a `done` chunk."""
        self._require_running()
        return self._chunks(self._app.stream(job, **params))

    def _chunks(self, chunks: AsyncGenerator[Chunk, None]) -> Iterator[Chunk]:
        finished = False
        try:
            while True:
                try:
                    yield self._call(_next(chunks))
                except StopAsyncIteration:
                    finished = True
                    return
        finally:
            if not finished and self._thread.is_alive():  # the caller stopped early: end the job too
                self._call(chunks.aclose())

    def close(self) -> None:
        """Close the application (running jobs finish first, `Application.close`), then stop the loop
        once every call already handed to it is answered: no caller in another thread waits forever."""
        if self._loop.is_closed():
            return
        if self._thread.is_alive() and not self._stopping:
            try:
                self._call(self._app.close())  # concurrent closes share one; from inside a job it raises
            except ReMeError:
                if not self._stopping:
                    raise
                # another close() got there first: it stops the loop once every call is answered
            else:
                with self._submitting:
                    self._stopping = True
                wait(list(self._pending))
                self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread.ident is not None:
            self._thread.join()
        self._loop.close()

    def __enter__(self) -> ReMeSync:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _next(chunks: AsyncIterator[Chunk]) -> Chunk:
    return await anext(chunks)  # a coroutine, as run_coroutine_threadsafe wants

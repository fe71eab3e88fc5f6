"""Live file changes for Studio: one watcher per service, fanned out to each open page as SSE.

Changes made on disk, by another interface or by a background job all show up here, so a page
refreshes what it shows without a reload. `metadata/` (derived state) and temporary files of
atomic writes are left out. A stream ends when the service stops (`closing`), so an open page
never holds up shutdown.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator
from pathlib import Path

from watchfiles import Change, awatch

HEARTBEAT_S = 15.0
POLL_S = 0.5
MAX_PATHS = 200  # per event; a bigger burst is reported as truncated (the page reloads its view)
QUEUE_EVENTS = 64

log = logging.getLogger(__name__)


class ChangeFeed:
    def __init__(self, workspace: Path, closing: threading.Event) -> None:
        self.workspace = workspace
        self.closing = closing
        self._queues: set[asyncio.Queue[dict[str, object]]] = set()
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None

    def _relevant(self, path: str) -> str | None:
        try:
            rel = Path(path).relative_to(self.workspace).as_posix()
        except ValueError:
            return None
        name = rel.rsplit("/", 1)[-1]
        if rel == "metadata" or rel.startswith("metadata/") or name.startswith(".") or ".tmp" in name:
            return None
        return rel

    async def _watch(self, stop: asyncio.Event) -> None:
        """Report changes until `stop`. A batch the watcher cannot read (a file name that is not UTF-8)
        ends its watch: it starts again, and pages reload their view for the changes it lost."""
        kinds = {Change.added: "added", Change.modified: "modified", Change.deleted: "deleted"}
        while not stop.is_set():
            try:
                async for batch in awatch(self.workspace, stop_event=stop, debounce=200, recursive=True):
                    changes = sorted({(rel, kinds[c]) for c, p in batch if (rel := self._relevant(p))})
                    if changes:
                        self._publish(
                            {
                                "paths": [{"path": p, "change": c} for p, c in changes[:MAX_PATHS]],
                                "truncated": len(changes) > MAX_PATHS,
                            }
                        )
            except Exception as exc:  # whatever it was, the pages must keep hearing of changes
                log.warning("Studio's file watch failed (%s); watching again", exc)
                self._publish({"paths": [], "truncated": True})
                await asyncio.sleep(POLL_S)

    def _publish(self, event: dict[str, object]) -> None:
        for queue in list(self._queues):
            if queue.qsize() < QUEUE_EVENTS:
                queue.put_nowait(event)

    async def stream(self) -> AsyncIterator[bytes]:
        queue: asyncio.Queue[dict[str, object]] = asyncio.Queue()
        self._queues.add(queue)
        if self._stop is None or self._stop.is_set():  # no watcher, or the last one is winding down
            self._stop = asyncio.Event()
            self._task = asyncio.create_task(self._watch(self._stop))
        try:
            yield b"retry: 1000\n\n"
            idle = 0.0
            while not self.closing.is_set():
                try:
                    event = await asyncio.wait_for(queue.get(), POLL_S)
                except TimeoutError:
                    idle += POLL_S
                    if idle >= HEARTBEAT_S:
                        idle = 0.0
                        yield b": keep-alive\n\n"
                    continue
                idle = 0.0
                yield b"event: change\ndata: " + json.dumps(event, ensure_ascii=False).encode() + b"\n\n"
        finally:
            self._queues.discard(queue)
            if not self._queues and self._stop is not None:
                self._stop.set()  # the watcher runs only while a page listens

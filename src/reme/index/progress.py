"""How far the index's catch-up with the files has got, for searches that run meanwhile and for logs.

Until the first reconcile (or a rebuild) of a process finishes, a search sees only part of the
workspace. `IndexProgress` counts the files of that run so a search can say so
(`1,200/5,183 files`) instead of answering a silent "No results", can wait a bounded time for it,
and so start-up and `reindex` log progress lines (about every tenth of the way).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from reme.jsontypes import JSONObject

Progress = Callable[[int, int], None]  # (done, total), as the indexer reports it
Stages = Callable[[str], AbstractContextManager[Progress]]  # opens a counted stage by name; yields its update
log = logging.getLogger(__name__)
LOG_STEPS = 10


@dataclass(frozen=True)
class ProgressState:
    """Where the running catch-up stands: `phase` None when none runs; `total` None while counting."""

    phase: str | None
    done: int
    total: int | None

    def to_dict(self) -> JSONObject:
        return {"phase": self.phase, "done": self.done, "total": self.total}

    def note(self) -> str:
        """A readable line for an answer given while the index is not ready."""
        counted = f"{self.done:,}/{self.total:,} files" if self.total else "counting the files"
        doing = "rebuilt" if self.phase == "rebuild" else "brought up to date with the files"
        return f"Note: the index is still being {doing} ({counted}); results may be incomplete."


class IndexProgress:
    """The state of the running catch-up: phase, files done and total; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._finished = threading.Event()
        self.phase: str | None = None  # "reconcile" or "rebuild" while one runs
        self.done = 0
        self.total: int | None = None
        self._logged_step = -1

    @contextmanager
    def run(self, phase: str, progress: Progress | None = None) -> Iterator[Progress]:
        """Track one catch-up; yields the callback to hand to the indexer (it also calls `progress`)."""
        with self._lock:
            self.phase, self.done, self.total, self._logged_step = phase, 0, None, -1
            self._finished.clear()
        log.info("index: %s started", phase)

        def update(done: int, total: int) -> None:
            self._update(done, total)
            if progress is not None:
                progress(done, total)

        try:
            yield update
        finally:
            with self._lock:
                phase, done, self.phase = self.phase, self.done, None
            self._finished.set()
            log.info("index: %s finished (%s files)", phase, f"{done:,}")

    def _update(self, done: int, total: int) -> None:
        with self._lock:
            self.done, self.total = done, total
            step = LOG_STEPS * done // total if total else LOG_STEPS
            if step == self._logged_step:
                return
            self._logged_step = step
        log.info("index: %s %s/%s files", self.phase, f"{done:,}", f"{total:,}")

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the running catch-up to end; True when none runs now."""
        return self._finished.wait(timeout) if self.phase else True

    def state(self) -> ProgressState:
        with self._lock:
            return ProgressState(self.phase, self.done, self.total)

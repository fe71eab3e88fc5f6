"""Progress of long steps, reported through callbacks; only the service draws it (docs/architecture.md).

A step never imports rich nor asks whether stderr is a terminal: it reports to `reporter()`, which is
quiet unless the service installed one with `reporting(...)` (the CLI does when stderr is a terminal,
see `reme.service.cli_progress.TerminalProgress`). The installed reporter lives in a context variable,
so it reaches the steps of the jobs started inside the `with` block, their tasks and `asyncio.to_thread`
workers, and nothing else (two applications in one process do not share one).

    from reme.app.progress import reporter

    reporter().say("dream", "unit 1/3 'tea': integrating")   # one line of progress
    with reporter().counting("reindexing") as update:       # a count towards a total
        index.reindex(update)                               # update(done, total)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Protocol

Count = Callable[[int, int], None]
"""`update(done, total)`: how far a counted piece of work is; called as often as the work likes."""


class Reporter(Protocol):
    """Where a step's progress goes. Both calls must be cheap and must not raise."""

    def say(self, topic: str, line: str) -> None:
        """One line of progress about `topic` (e.g. `dream`: a unit integrated)."""

    def counting(self, label: str, total: int | None = None) -> AbstractContextManager[Count]:
        """A count shown while the block runs (`label`, e.g. `reindexing`); yields its `update`."""


def _ignore(done: int, total: int) -> None:
    """The count nobody watches."""


class Quiet:
    """The reporter of a service, a pipe or a test: reports go nowhere."""

    def say(self, topic: str, line: str) -> None:
        """Nothing to show."""

    def counting(self, label: str, total: int | None = None) -> AbstractContextManager[Count]:
        return nullcontext(_ignore)


QUIET = Quiet()
_current: ContextVar[Reporter] = ContextVar("reme_progress_reporter", default=QUIET)


def reporter() -> Reporter:
    """The reporter installed around the running job, `QUIET` when none is."""
    return _current.get()


@contextmanager
def reporting(target: Reporter) -> Iterator[Reporter]:
    """Install `target` for the jobs run inside the block (the service calls this, never a step)."""
    token = _current.set(target)
    try:
        yield target
    finally:
        _current.reset(token)

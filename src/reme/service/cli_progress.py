"""Progress drawn on a terminal: the only place reme draws it (docs/architecture.md).

Steps report through `reme.app.progress`; `TerminalProgress` is the reporter the CLI installs when
stderr is a terminal: lines are printed dim-prefixed, counts drawn as transient rich bars, on stderr.

`reme reindex` against a running service is one request that answers when the rebuild is done;
meanwhile the CLI asks `status` twice a second for the index's `progress` (`done`/`total` files) and
draws it on stderr (`with_bar`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Protocol, TypeVar

from reme.app.progress import Count
from reme.jsontypes import JSONObject
from reme.service.client import Reply, dig

if TYPE_CHECKING:
    from rich.console import Console

POLL_S = 0.5
T = TypeVar("T")


class Caller(Protocol):
    """What asks a service for a job: `cli.Remote` (a test passes a double)."""

    def call(self, job: str, params: JSONObject) -> Reply: ...


class TerminalProgress:
    """The progress reporter of a terminal: `dream unit 1/3 ...` lines and transient bars on stderr."""

    def __init__(self) -> None:
        self._console: Console | None = None

    def _stderr(self) -> Console:
        if self._console is None:  # rich only once something is drawn
            from rich.console import Console

            self._console = Console(stderr=True)
        return self._console

    def say(self, topic: str, line: str) -> None:
        from rich.markup import escape

        self._stderr().print(f"[dim]{escape(topic)}[/dim] {escape(line)}", highlight=False)

    def counting(self, label: str, total: int | None = None) -> AbstractContextManager[Count]:
        return self._bar(label, total)

    @contextmanager
    def _bar(self, label: str, total: int | None) -> Iterator[Count]:
        from rich.progress import Progress

        with Progress(console=self._stderr(), transient=True) as bar:
            task = bar.add_task(label, total=total)

            def update(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            yield update


def index_progress(remote: Caller) -> tuple[int, int] | None:
    """`(done, total)` of the service's running index catch-up, or None (none runs, or no answer)."""
    try:
        reply = remote.call("status", {})
    except Exception:  # any failure only means no bar this time; the reindex call itself reports
        return None
    state = dig(reply.response, "metadata", "components", "index", "progress")
    if not isinstance(state, dict):
        return None
    done, total = state.get("done"), state.get("total")
    if state.get("phase") and isinstance(total, int) and total and isinstance(done, int):
        return done, total
    return None


def follow(
    run: Callable[[], T],
    poll: Callable[[], tuple[int, int] | None],
    on_progress: Callable[[int, int], None],
    interval: float = POLL_S,
) -> T:
    """`run()` in a worker thread, calling `on_progress` with each new `poll()` until it returns."""
    outcome: dict[str, T] = {}
    failure: list[BaseException] = []

    def work() -> None:
        try:
            outcome["value"] = run()
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=work, name="reme-reindex", daemon=True)
    worker.start()
    last = None
    while worker.is_alive():
        worker.join(interval)
        state = poll() if worker.is_alive() else None
        if state is not None and state != last:
            on_progress(*state)
            last = state
    if failure:
        raise failure[0]
    return outcome["value"]


def with_bar(remote: Caller, run: Callable[[], T]) -> T:
    """`run()` (the reindex call) with a transient rich progress bar on stderr."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("reindexing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("reindex", total=None)
        return follow(
            run, lambda: index_progress(remote), lambda d, t: bar.update(task, completed=d, total=t)
        )

"""A progress bar for `reme reindex` on a terminal, fed by the service's own progress.

`reindex` is one request that answers when the rebuild is done; meanwhile the CLI asks `status`
twice a second for the index's `progress` (`done`/`total` files) and draws it on stderr.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

POLL_S = 0.5


def index_progress(remote: Any) -> tuple[int, int] | None:
    """`(done, total)` of the service's running index catch-up, or None (none runs, or no answer)."""
    try:
        reply = remote.call("status", {})
    except Exception:
        return None
    metadata = (reply.response or {}).get("metadata") or {}
    state = ((metadata.get("components") or {}).get("index") or {}).get("progress") or {}
    if state.get("phase") and state.get("total"):
        return int(state["done"]), int(state["total"])
    return None


def follow(
    run: Callable[[], Any],
    poll: Callable[[], tuple[int, int] | None],
    on_progress: Callable[[int, int], None],
    interval: float = POLL_S,
) -> Any:
    """`run()` in a worker thread, calling `on_progress` with each new `poll()` until it returns."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = run()
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="reme-reindex", daemon=True)
    worker.start()
    last = None
    while worker.is_alive():
        worker.join(interval)
        state = poll() if worker.is_alive() else None
        if state is not None and state != last:
            on_progress(*state)
            last = state
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def with_bar(remote: Any, run: Callable[[], Any]) -> Any:
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

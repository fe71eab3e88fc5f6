"""The index's background work while a service runs (`IndexService.keep_up`): follow file changes,
finish other processes' interrupted writes, embed new chunks.

Each loop runs until cancelled and survives its own failures (logged; the next change, tick or
retry tries again), so one bad file or a model that is down never ends the upkeep.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reme.index.sync import Indexer

if TYPE_CHECKING:
    from reme.index.vectors import VectorIndex  # numpy only when vectors are on

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UpkeepTiming:
    """How often the loops act: the pause before the second reconcile, the catch-up tick, the
    embedding poll when nothing is pending, and the back-off after an embedding failure."""

    settle_s: float
    catch_up_s: float
    embed_idle_s: float
    embed_retry_s: float


@dataclass(frozen=True)
class UpkeepReport:
    """How the upkeep ended: `watched` False when watching is off (one catch-up, then done)."""

    watched: bool
    embedded: int = 0  # chunks embedded before returning (watching off)


def sync_changes(indexer: Indexer, paths: list[str]) -> None:
    """Index a burst of changed paths; on failure reconcile with the disk instead of crash-looping."""
    try:
        indexer.sync_paths(paths)
    except Exception:
        log.exception("index update of %d path(s) failed; reconciling", len(paths))
        try:
            indexer.reconcile()
        except Exception:  # shown by health_check; the loop keeps watching instead of crash-looping
            log.exception("reconcile failed too; the next change or restart tries again")


async def settle_and_catch_up(
    indexer: Indexer, catch_up: Callable[[], Awaitable[object]], timing: UpkeepTiming
) -> None:
    """A second reconcile once the watcher runs (closes the start-up gap), then every
    `catch_up_s` finish index writes another process left interrupted."""
    await asyncio.sleep(timing.settle_s)
    await asyncio.to_thread(indexer.reconcile)
    while True:
        await asyncio.sleep(timing.catch_up_s)
        await catch_up()


async def embed_in_background(
    vectors: VectorIndex, stopping: Callable[[], bool], timing: UpkeepTiming
) -> None:
    """Embed new and changed chunks batch by batch in a worker thread (writes and keyword search go
    on meanwhile); poll when nothing is pending, back off while the model or endpoint fails. Each
    time it catches up, vectors of text no chunk has any more are dropped (past a slack)."""
    busy = True  # the first idle moment also prunes what earlier runs left
    while not stopping():
        try:
            count = await asyncio.to_thread(vectors.embed_batch)
            if not count and busy:
                await asyncio.to_thread(vectors.prune)
        except Exception:
            log.warning("embedding failed; retrying in %.0f s", timing.embed_retry_s, exc_info=True)
            await asyncio.sleep(timing.embed_retry_s)
            continue
        busy = bool(count)
        if not count:
            await asyncio.sleep(timing.embed_idle_s)

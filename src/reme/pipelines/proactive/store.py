"""Where the truth source lives, how it is read, and the lock every writer of it holds.

A malformed `daily/_proactive.yaml` is reported with how to fix it and never overwritten by a
refresh or a resolve; only `proactive_rebuild` replaces it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from reme.errors import ReMeError
from reme.pipelines.port import FileText, MemoryPort
from reme.pipelines.proactive.files import TruthSource, parse_truth

TRUTH_NAME = "_proactive.yaml"
LOCK_WAIT_SECONDS = 10.0


@asynccontextmanager
async def hold(port: MemoryPort, wait_seconds: float = LOCK_WAIT_SECONDS) -> AsyncIterator[None]:
    """The `proactive` lock, waiting a little: the writes it guards take milliseconds.

    A refresh finishing and a resolve meet here; waiting beats failing a run that already asked the model.
    """
    deadline = time.monotonic() + wait_seconds
    async with AsyncExitStack() as stack:
        while True:
            try:
                await stack.enter_async_context(port.exclusive("proactive"))
                break
            except ReMeError:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.05)
        yield


def truth_path(port: MemoryPort) -> str:
    return f"{port.folder('daily')}/{TRUTH_NAME}"


async def load_truth(port: MemoryPort) -> tuple[TruthSource, FileText | None]:
    """The truth source and the version read; a ReMeError saying how to fix it when it is malformed."""
    path = truth_path(port)
    loaded = await port.load(path)
    if loaded is None:
        return TruthSource(), None
    try:
        return parse_truth(loaded.content, path), loaded
    except ValueError as exc:
        raise ReMeError(
            f"{exc}; fix the file by hand or run proactive_rebuild to rebuild it from the interests.yaml files "
            "(the file was left as it is)",
            {"path": path},
        ) from None

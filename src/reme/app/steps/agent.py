"""Steps of the agent capture jobs: thin adapters over `reme.pipelines.capture.session` (recall: `steps/recall.py`)."""

from __future__ import annotations

import contextlib
import ctypes

from reme.app.jobs import JobContext
from reme.app.port import AppPort
from reme.app.registry import register_step
from reme.errors import ReMeError
from reme.pipelines.capture.session import agent_session_append, agent_session_flush, distil_queue
from reme.pipelines.outcome import Outcome


def _finish(ctx: JobContext, outcome: Outcome) -> None:
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)
    if ctx.usage:
        ctx.response.metadata["usage"] = dict(ctx.usage)


@register_step("agent_session_append")
async def agent_session_append_step(ctx: JobContext, max_message_chars: int = 8000) -> None:
    outcome = await agent_session_append(
        AppPort(ctx.app),
        session_id=ctx.params["session_id"],
        messages=ctx.params["messages"],
        source=ctx.params["source"],
        max_message_chars=int(max_message_chars),
        skipped=ctx.params.get("skipped"),
    )
    _finish(ctx, outcome)
    if len(ctx.params["messages"]) >= LARGE_CAPTURE:
        give_back_memory()


LARGE_CAPTURE = 50  # messages in one append: a part of a long transcript


def give_back_memory() -> None:
    """After a large capture, hand the heap glibc keeps in its (per-thread) arenas back to the OS,
    so one huge transcript does not raise the service's memory for good; a no-op elsewhere."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


@register_step("agent_session_flush")
async def agent_session_flush_step(ctx: JobContext) -> None:
    try:
        outcome = await agent_session_flush(
            AppPort(ctx.app), session_id=ctx.params["session_id"], add_usage=ctx.add_usage
        )
    except ReMeError as failure:
        raise ReMeError(failure.message, {**failure.metadata, "usage": dict(ctx.usage)}) from None
    _finish(ctx, outcome)


@register_step("agent_session_distil")
async def agent_session_distil_step(ctx: JobContext, idle_seconds: float = 300, limit: int = 10) -> None:
    outcome = await distil_queue(
        AppPort(ctx.app), idle_seconds=float(idle_seconds), limit=int(limit), add_usage=ctx.add_usage
    )
    _finish(ctx, outcome)

"""Steps of `auto_memory` and `auto_memory_pending`: thin adapters over `reme.pipelines.memory.auto_memory`."""

from __future__ import annotations

from reme.app.jobs import JobContext
from reme.app.port import AppPort
from reme.app.registry import register_step
from reme.errors import ReMeError
from reme.pipelines.memory.auto_memory import auto_memory, auto_memory_pending
from reme.pipelines.outcome import Outcome


def _finish(ctx: JobContext, outcome: Outcome) -> None:
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)
    ctx.response.metadata["usage"] = dict(ctx.usage)


@register_step("auto_memory")
async def auto_memory_step(ctx: JobContext, max_message_chars: int = 8000) -> None:
    params = ctx.params
    try:
        outcome = await auto_memory(
            AppPort(ctx.app),
            session_id=params["session_id"],
            messages=params["messages"],
            date_text=params.get("date"),
            memory_hint=params["memory_hint"],
            max_message_chars=int(max_message_chars),
            add_usage=ctx.add_usage,
        )
    except ReMeError as failure:
        raise ReMeError(failure.message, {**failure.metadata, "usage": dict(ctx.usage)}) from None
    _finish(ctx, outcome)


@register_step("auto_memory_pending")
async def auto_memory_pending_step(ctx: JobContext) -> None:
    try:
        outcome = await auto_memory_pending(
            AppPort(ctx.app), limit=ctx.params["limit"], add_usage=ctx.add_usage
        )
    except ReMeError as failure:
        raise ReMeError(failure.message, {**failure.metadata, "usage": dict(ctx.usage)}) from None
    _finish(ctx, outcome)

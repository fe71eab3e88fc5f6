"""Steps of `auto_memory` and `auto_memory_pending`: thin adapters over `reme.pipelines.auto_memory`."""

from __future__ import annotations

from typing import Any

from reme.app.jobs import JobContext, JobError
from reme.app.registry import register_step
from reme.pipelines.auto_memory import MemoryFailed, MemoryOutcome, auto_memory, auto_memory_pending
from reme.pipelines.calls import StepFailed
from reme.pipelines.distil import LLMUnavailable


def _finish(ctx: JobContext, outcome: MemoryOutcome) -> None:
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)
    ctx.response.metadata["usage"] = dict(ctx.usage)


@register_step("auto_memory")
async def auto_memory_step(ctx: JobContext, max_message_chars: int = 8000, **_: Any) -> None:
    params = ctx.params
    try:
        outcome = await auto_memory(
            ctx.app,
            session_id=params["session_id"],
            messages=params.get("messages") or [],
            date_text=params.get("date"),
            memory_hint=params.get("memory_hint") or "",
            max_message_chars=int(max_message_chars),
            add_usage=ctx.add_usage,
        )
    except MemoryFailed as failure:
        raise JobError(failure.message, {**failure.metadata, "usage": dict(ctx.usage)}) from None
    except StepFailed as failure:
        raise JobError(str(failure), {"usage": dict(ctx.usage)}) from None
    _finish(ctx, outcome)


@register_step("auto_memory_pending")
async def auto_memory_pending_step(ctx: JobContext, **_: Any) -> None:
    try:
        outcome = await auto_memory_pending(
            ctx.app, limit=int(ctx.params.get("limit") or 20), add_usage=ctx.add_usage
        )
    except (LLMUnavailable, StepFailed) as failure:
        raise JobError(str(failure), {"usage": dict(ctx.usage)}) from None
    _finish(ctx, outcome)

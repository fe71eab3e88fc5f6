"""Steps of the agent integration jobs: thin adapters over `reme.pipelines.agent_session` and `recall`."""

from __future__ import annotations

from reme.app.jobs import JobContext, JobError
from reme.app.port import AppPort
from reme.app.registry import register_step
from reme.errors import ReMeError
from reme.pipelines.agent_session import agent_session_append, agent_session_flush, distil_queue
from reme.pipelines.auto_memory import MemoryOutcome
from reme.pipelines.recall import recall
from reme.workspace.dates import parse_date


def _finish(ctx: JobContext, outcome: MemoryOutcome) -> None:
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)
    if ctx.usage:
        ctx.response.metadata["usage"] = dict(ctx.usage)


@register_step("agent_session_append")
async def agent_session_append_step(ctx: JobContext, max_message_chars: int = 8000) -> None:
    outcome = await agent_session_append(
        AppPort(ctx.app),
        session_id=ctx.params["session_id"],
        messages=ctx.params.get("messages") or [],
        source=ctx.params.get("source") or "reme",
        max_message_chars=int(max_message_chars),
    )
    _finish(ctx, outcome)


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


@register_step("agent_memory_recall")
async def agent_memory_recall_step(ctx: JobContext) -> None:
    params = ctx.params
    if params.get("as_of"):
        try:
            parse_date(params["as_of"], "as_of")
        except ValueError as exc:
            raise JobError(f"{exc}, e.g. 2026-06-01") from None
    found = await recall(
        AppPort(ctx.app),
        query=params.get("query") or "",
        cwd=params.get("cwd") or "",
        limit=int(params["limit"]),
        max_chars=int(params["max_chars"]),
        as_of=params.get("as_of") or None,
    )
    ctx.response.answer = found.answer
    ctx.response.metadata.update(found.metadata)

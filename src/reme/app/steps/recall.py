"""The `agent_memory_recall` step, apart from the capture steps so a hook that only recalls loads only
what recall needs (`reme.service.hooks.run_in_process`)."""

from __future__ import annotations

from reme.app.jobs import JobContext
from reme.app.port import AppPort
from reme.app.registry import register_step
from reme.pipelines.recall import recall


@register_step("agent_memory_recall")
async def agent_memory_recall_step(ctx: JobContext) -> None:
    params = ctx.params
    found = await recall(
        AppPort(ctx.app),
        query=params.get("query") or "",
        cwd=params.get("cwd") or "",
        limit=int(params["limit"]),
        max_chars=int(params["max_chars"]),
    )
    ctx.response.answer = found.answer
    ctx.response.metadata.update(found.metadata)

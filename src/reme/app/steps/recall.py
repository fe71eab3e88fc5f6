"""The `agent_memory_recall` step, apart from the capture steps so a hook that only recalls loads only
what recall needs (`reme.service.hooks.run_in_process`)."""

from __future__ import annotations

from reme.app.jobs import JobContext, JobError
from reme.app.port import AppPort
from reme.app.registry import register_step
from reme.pipelines.recall import recall
from reme.workspace.dates import parse_date


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
        query=params["query"],
        cwd=params["cwd"],
        limit=int(params["limit"]),
        max_chars=int(params["max_chars"]),
        as_of=params.get("as_of") or None,
    )
    ctx.response.answer = found.answer
    ctx.response.metadata.update(found.metadata)

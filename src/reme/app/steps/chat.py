"""Step of the `chat` stream job: text and tool-call chunks go to the client as they come."""

from __future__ import annotations

from typing import Any

from reme.app.jobs import JobContext, JobError
from reme.app.registry import register_step
from reme.llm.runner import AgentFailed
from reme.pipelines.chat import chat
from reme.pipelines.distil import LLMUnavailable


@register_step("chat")
async def chat_step(ctx: JobContext, **_: Any) -> None:
    try:
        answer = await chat(
            ctx.app,
            query=ctx.params["query"],
            history=ctx.params.get("history") or [],
            emit=ctx.emit,
            add_usage=ctx.add_usage,
        )
    except (LLMUnavailable, AgentFailed) as failure:
        raise JobError(str(failure), {"usage": dict(ctx.usage)}) from None
    ctx.response.answer = answer.text
    ctx.response.metadata.update(
        {"sources": answer.sources, "tool_calls": answer.tool_calls, "usage": dict(ctx.usage)}
    )

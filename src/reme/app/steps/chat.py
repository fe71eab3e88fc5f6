"""Step of the `chat` stream job: text and tool-call chunks go to the client as they come; the
result's answer is the checked, bounded one (`unverified_citations`, `truncated`)."""

from __future__ import annotations

from reme.app.jobs import JobContext
from reme.app.port import AppPort
from reme.app.registry import register_step
from reme.errors import ReMeError
from reme.pipelines.chat import chat


@register_step("chat")
async def chat_step(ctx: JobContext) -> None:
    try:
        answer = await chat(
            AppPort(ctx.app),
            query=ctx.params["query"],
            history=ctx.params["history"],
            emit=ctx.emit,
            add_usage=ctx.add_usage,
        )
    except ReMeError as failure:
        raise ReMeError(failure.message, {**failure.metadata, "usage": dict(ctx.usage)}) from None
    ctx.response.answer = answer.text
    ctx.response.metadata.update(
        {
            "sources": answer.sources,
            "unverified_citations": answer.unverified_citations,
            "truncated": answer.truncated,
            "tool_calls": answer.tool_calls,
            "usage": dict(ctx.usage),
        }
    )

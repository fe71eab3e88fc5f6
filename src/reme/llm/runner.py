"""The agent runner: a bounded tool-calling loop whose tools are reme jobs behind a path allow-list.

Model failures are retried within bounds (transport retries in the provider client, tool-argument
and output-schema retries in the loop) and then raised as one `AgentFailed` with a readable message.
Token usage is reported even when the run fails, and `requests` counts every HTTP request sent.
Structured output uses the configured output mode; an endpoint that refuses it gets one fallback
(see `output_modes`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reme.errors import ReMeError
from reme.llm import output_modes
from reme.llm.attempts import counting
from reme.llm.providers import request_settings
from reme.llm.settings import ModelSettings
from reme.llm.tools import PathPolicy, ToolSpec

if TYPE_CHECKING:
    from pydantic_ai.models import Model

RunJob = Callable[..., Awaitable[Any]]  # `Application.run`: (job, **params) -> Response
OnEvent = Callable[[dict[str, Any]], Awaitable[None]]
MAX_TOOL_ANSWER_CHARS = 12_000
log = logging.getLogger(__name__)


class AgentFailed(ReMeError):
    """The model could not complete the run; `usage` is what it consumed before failing."""

    def __init__(self, message: str, usage: dict[str, int]) -> None:
        super().__init__(message, {"usage": usage})
        self.usage = usage


@dataclass
class ToolCall:
    tool: str
    args: dict[str, Any]
    success: bool
    refused: bool = False


@dataclass
class AgentResult:
    output: Any
    usage: dict[str, int]
    tool_calls: list[ToolCall] = field(default_factory=list)
    output_mode: str | None = None  # the mode structured output came back in (None for text)


def usage_dict(usage: Any, sent: int = 0) -> dict[str, int]:
    """Token and call counts; `requests` is the HTTP requests sent when they were counted (`sent`)."""
    return {
        "input_tokens": int(usage.input_tokens or 0),
        "output_tokens": int(usage.output_tokens or 0),
        "requests": max(sent, int(usage.requests or 0)),
        "tool_calls": int(usage.tool_calls or 0),
    }


def _tool_reply(response: Any) -> str:
    """What the model sees of a job result: success, answer and metadata, bounded in size."""
    answer = response.answer
    if not isinstance(answer, str):
        answer = json.dumps(answer, ensure_ascii=False, default=str)
    if len(answer) > MAX_TOOL_ANSWER_CHARS:
        extra = len(answer) - MAX_TOOL_ANSWER_CHARS
        answer = answer[:MAX_TOOL_ANSWER_CHARS] + f"\n[... truncated, {extra} more characters]"
    metadata = {k: v for k, v in (response.metadata or {}).items() if k not in ("content", "chunks")}
    reply = {"success": response.success, "answer": answer, "metadata": metadata}
    text = json.dumps(reply, ensure_ascii=False, default=str)
    if len(text) <= 2 * MAX_TOOL_ANSWER_CHARS:
        return text
    scalars = {
        k: v for k, v in metadata.items() if isinstance(v, (str, int, float, bool)) and len(str(v)) < 300
    }
    reply["metadata"] = {**scalars, "omitted": "larger metadata left out; the answer holds the result"}
    return json.dumps(reply, ensure_ascii=False, default=str)


def _make_tool(
    spec: ToolSpec, policy: PathPolicy, run_job: RunJob, calls: list[ToolCall], on_event: OnEvent | None
) -> Any:
    from pydantic_ai import Tool

    async def call(**args: Any) -> str:
        refusal = spec.invalid(args) or policy.refusal(spec, args)
        if on_event:
            await on_event({"type": "tool_call", "tool": spec.job, "args": args})
        if refusal:
            calls.append(ToolCall(spec.job, args, success=False, refused=True))
            reply = json.dumps({"success": False, "answer": refusal})
        else:
            response = await run_job(spec.job, **args)
            calls.append(ToolCall(spec.job, args, success=bool(response.success)))
            reply = _tool_reply(response)
        if on_event:
            await on_event(
                {
                    "type": "tool_result",
                    "tool": spec.job,
                    "success": calls[-1].success,
                    "refused": calls[-1].refused,
                }
            )
        return reply

    return Tool.from_schema(call, spec.job, spec.description, spec.parameters, sequential=True)


def _failure_message(exc: Exception, settings: ModelSettings) -> str:
    from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior, UsageLimitExceeded

    if isinstance(exc, UsageLimitExceeded):
        return f"agent stopped at its step limit ({settings.max_steps} model requests) before finishing"
    if isinstance(exc, ModelAPIError):
        return f"LLM request failed after {settings.max_retries} retries ({type(exc).__name__}: {exc})"
    if isinstance(exc, UnexpectedModelBehavior):
        return f"LLM reply stayed invalid after {settings.output_retries} retries: {exc}"
    return f"LLM run failed: {type(exc).__name__}: {exc}"


async def run_agent(
    *,
    model: Model,
    settings: ModelSettings,
    run_job: RunJob,
    instructions: str,
    prompt: str,
    tools: Sequence[ToolSpec],
    policy: PathPolicy,
    output_type: Any = str,
    on_event: OnEvent | None = None,
) -> AgentResult:
    """Run one agent to completion; raise `AgentFailed` when the model cannot finish within bounds."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
    from pydantic_ai.usage import RunUsage, UsageLimits

    calls: list[ToolCall] = []

    def agent_for(mode: str) -> Any:
        return Agent(
            model,
            output_type=output_modes.output_spec(output_type, mode),
            instructions=instructions,
            tools=[_make_tool(spec, policy, run_job, calls, on_event) for spec in tools],
            retries={"tools": settings.output_retries, "output": settings.output_retries},
        )

    async def stream_text(_ctx: Any, events: AsyncIterable[Any]) -> None:
        async for event in events:
            if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart) and event.part.content:
                await on_event({"type": "text", "text": event.part.content})  # type: ignore[misc]
            elif (
                isinstance(event, PartDeltaEvent)
                and isinstance(event.delta, TextPartDelta)
                and event.delta.content_delta
            ):
                await on_event({"type": "text", "text": event.delta.content_delta})  # type: ignore[misc]

    usage = RunUsage()

    async def run(mode: str) -> Any:
        return await agent_for(mode).run(
            prompt,
            model_settings=request_settings(settings),
            usage=usage,
            usage_limits=UsageLimits(request_limit=settings.max_steps),
            event_stream_handler=stream_text if on_event and output_type is str else None,
        )

    mode = output_modes.mode_for(settings)
    with counting() as sent:
        try:
            result = await run(mode)
        except Exception as exc:
            fallback = _fallback_after(exc, mode, output_type, usage)
            if fallback is None:
                raise AgentFailed(_failure_message(exc, settings), usage_dict(usage, sent[0])) from exc
            log.warning("the LLM endpoint refused output mode %r (%s); trying %r", mode, exc, fallback)
            try:
                result = await run(fallback)
            except Exception as retry_exc:
                message = (
                    f"{_failure_message(retry_exc, settings)} (after output mode {mode!r} was refused: {exc})"
                )
                raise AgentFailed(message, usage_dict(usage, sent[0])) from retry_exc
            output_modes.remember(settings, fallback)
            mode = fallback
    structured = None if output_type is str else mode
    return AgentResult(result.output, usage_dict(usage, sent[0]), calls, structured)


def _fallback_after(exc: Exception, mode: str, output_type: Any, usage: Any) -> str | None:
    """The mode to try once more in when the endpoint refused this one at the first request."""
    if output_type is str or usage.requests or not output_modes.is_refusal(exc):
        return None
    return output_modes.FALLBACK.get(mode)

"""The agent runner: a bounded tool-calling loop whose tools are reme jobs behind a path allow-list.

Model failures are retried within bounds (transport retries in the provider client, tool-argument
and output-schema retries in the loop) and then raised as one `AgentFailed` with a readable message.
Token usage is reported even when the run fails, and `requests` counts every HTTP request sent.
Structured output uses the configured output mode; an endpoint that refuses it gets one fallback
(see `output_modes`). Every request is bounded by `settings.timeout`, every run by what is left
of its job run's wall-clock budget (`budget`) and its tool calls by `max_steps` times
`TOOL_CALLS_PER_STEP` (checked before a reply's calls run); a failure answer is one or two
sentences quoting the server's reason, bounded (the whole body is in the log), with the key and URL
credentials masked should the server quote them back.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, overload

from reme.errors import ReMeError
from reme.jsontypes import JSONObject, JSONValue
from reme.llm import budget, output_modes, wire
from reme.llm.attempts import counting
from reme.llm.providers import request_settings
from reme.llm.settings import ModelSettings
from reme.llm.tools import PathPolicy, ToolSpec

if TYPE_CHECKING:
    from pydantic_ai import Agent, AgentRunResult, RunContext, Tool
    from pydantic_ai.messages import AgentStreamEvent, ModelMessage
    from pydantic_ai.models import Model
    from pydantic_ai.usage import RunUsage


class JobAnswer(Protocol):
    """What a tool call gets back from a job (the application's `Response`, read-only)."""

    @property
    def success(self) -> bool: ...
    @property
    def answer(self) -> object: ...
    @property
    def metadata(self) -> Mapping[str, object]: ...


OutputT = TypeVar("OutputT", covariant=True)
# `Application.run`: (job, **params) -> Response; the port's callers read the response's fields
RunJob = Callable[..., Awaitable[Any]]
OnEvent = Callable[[JSONObject], Awaitable[None]]
MAX_TOOL_ANSWER_CHARS = 12_000
MAX_REASON_CHARS = 300  # of the server's reason in a failure answer; the whole body goes to the log
TOOL_CALLS_PER_STEP = 5  # tool calls per run: `max_steps` times this (a reply may ask hundreds at once)
NOT_THE_MODE = frozenset({401, 403, 404})  # a refused key, an unknown URL or model: no output-mode fallback
log = logging.getLogger(__name__)


class AgentFailed(ReMeError):
    """The model could not complete the run; `usage` is what it consumed before failing."""

    def __init__(self, message: str, usage: dict[str, int]) -> None:
        super().__init__(message, {"usage": usage})
        self.usage = usage


@dataclass
class ToolCall:
    tool: str
    args: JSONObject
    success: bool
    refused: bool = False


@dataclass
class AgentResult(Generic[OutputT]):
    output: OutputT
    usage: dict[str, int]
    tool_calls: list[ToolCall] = field(default_factory=list)
    output_mode: str | None = None  # the mode structured output came back in (None for text)


def usage_dict(usage: RunUsage, sent: int = 0, messages: Sequence[ModelMessage] = ()) -> dict[str, int]:
    """Token and call counts; `requests` is the HTTP requests sent when they were counted (`sent`).

    `replies_without_usage` counts the replies (in `messages`) whose server reported no token usage
    (llama-cpp-python streams none): their tokens are not in the totals, which are then a lower bound.
    """
    from pydantic_ai.messages import ModelResponse

    unreported = sum(
        1
        for m in messages
        if isinstance(m, ModelResponse) and not (m.usage.input_tokens or m.usage.output_tokens)
    )
    counts = {
        "input_tokens": int(usage.input_tokens or 0),
        "output_tokens": int(usage.output_tokens or 0),
        "requests": max(sent, int(usage.requests or 0)),
        "tool_calls": int(usage.tool_calls or 0),
    }
    return {**counts, "replies_without_usage": unreported} if unreported else counts


def _tool_reply(response: JobAnswer) -> str:
    """What the model sees of a job result: success, answer and metadata, bounded in size."""
    answer = response.answer
    if not isinstance(answer, str):
        answer = json.dumps(answer, ensure_ascii=False, default=str)
    if len(answer) > MAX_TOOL_ANSWER_CHARS:
        extra = len(answer) - MAX_TOOL_ANSWER_CHARS
        answer = answer[:MAX_TOOL_ANSWER_CHARS] + f"\n[... truncated, {extra} more characters]"
    metadata = {k: v for k, v in (response.metadata or {}).items() if k not in ("content", "chunks")}
    reply: dict[str, object] = {"success": response.success, "answer": answer, "metadata": metadata}
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
) -> Tool[None]:
    from pydantic_ai import Tool

    async def call(**args: JSONValue) -> str:
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

    from pydantic_core import SchemaValidator, core_schema

    tool = Tool.from_schema(call, spec.job, spec.description, spec.parameters, sequential=True)
    # `from_schema` takes any JSON as arguments; a list or a string would crash `call(**args)`, so
    # arguments must be an object, else the model is asked again (an output retry)
    tool.function_schema.validator = SchemaValidator(core_schema.dict_schema(core_schema.str_schema()))
    return tool


def _one_line(said: object) -> str:
    """An exception's (or a message's) text on one line, bounded (`MAX_REASON_CHARS`)."""
    return " ".join(str(said).split())[:MAX_REASON_CHARS]


def _failure_message(
    exc: BaseException,
    settings: ModelSettings,
    sent: int,
    budget_left: float,
    messages: Sequence[ModelMessage] = (),
) -> str:
    """One or two sentences: what failed, the server's reason (bounded) and what to do; the run's
    `messages` say whether an invalid reply was cut at `max_tokens`."""
    from pydantic_ai.exceptions import (
        ContentFilterError,
        ModelAPIError,
        ModelConnectionError,
        ModelHTTPError,
        UnexpectedModelBehavior,
        UsageLimitExceeded,
    )
    from pydantic_ai.messages import ModelResponse

    asked = f"{sent} request{'s' if sent != 1 else ''} sent"
    last = next((m for m in reversed(messages) if isinstance(m, ModelResponse)), None)
    if isinstance(exc, TimeoutError) or budget_left <= 0:
        return (
            f"the job run's LLM time budget ({settings.run_budget:g} s) ran out ({asked}); "
            "raise components.llm.run_budget (LLM_RUN_BUDGET) or use a faster model"
        )
    if isinstance(exc, UsageLimitExceeded) and "tool_calls_limit" in str(exc):
        return (
            f"agent stopped: the model asked for more than {settings.max_steps * TOOL_CALLS_PER_STEP} tool "
            f"calls ({TOOL_CALLS_PER_STEP} per step of components.llm.max_steps) ({asked}); use a model "
            "that follows the instructions, or raise components.llm.max_steps"
        )
    if isinstance(exc, UsageLimitExceeded):
        return (
            f"agent stopped at its step limit ({settings.max_steps} model requests) before finishing; use a "
            "model that follows the instructions, or raise components.llm.max_steps"
        )
    if isinstance(exc, wire.BadReply):
        return (
            f"LLM request failed ({asked}): {_one_line(exc)}; check that LLM_BASE_URL is the server's "
            "OpenAI-compatible /v1 URL, and run `reme doctor`"
        )
    if isinstance(exc, ModelHTTPError):
        why = wire.reason(exc.body, MAX_REASON_CHARS)
        if exc.status_code in (401, 403):
            hint = "check LLM_API_KEY (and that it may use this model)"
        elif exc.status_code == 404:
            hint = "check that LLM_BASE_URL is the server's OpenAI-compatible /v1 URL and LLM_MODEL a model it serves"
        elif wire.deterministic(exc.status_code, exc.body):
            hint = "the server refuses this request; run `reme doctor` to see which step it rejects"
        else:
            hint = "check that the server runs and is not overloaded"
        return f"LLM request failed: the server answered HTTP {exc.status_code} ({asked}): {why}; {hint}"
    if isinstance(exc, ModelConnectionError) and "timeout" in type(exc).__name__.lower():
        return (
            f"LLM request failed: no answer within {settings.timeout:g} s ({asked}); raise "
            "components.llm.timeout (LLM_TIMEOUT) or lower components.llm.max_tokens"
        )
    if isinstance(exc, ModelAPIError):
        return (
            f"LLM request failed ({asked}): {type(exc).__name__}: {_one_line(exc)}; "
            "check LLM_BASE_URL and that the server runs"
        )
    if isinstance(exc, ContentFilterError) or (
        isinstance(exc, UnexpectedModelBehavior)
        and last is not None
        and last.finish_reason == "content_filter"
    ):
        said = (
            exc.message
            if isinstance(exc, ContentFilterError)
            else "its reply was stopped by a content filter"
        )
        return (
            f"the model refused to answer ({asked}): {_one_line(said)}; the input may trip its provider's "
            "content policy: try another model"
        )
    if isinstance(exc, UnexpectedModelBehavior):
        retried = f", {settings.output_retries} output retries" if settings.output_retries else ""
        if last is not None and last.finish_reason == "length":
            hint = f"the reply was cut at max_tokens ({settings.max_tokens}): raise components.llm.max_tokens"
        else:
            hint = "try components.llm.output_mode=prompted or another model (`reme doctor` tries each mode)"
        return f"LLM reply stayed invalid ({asked}{retried}): {_one_line(exc.message)}; {hint}"
    return f"LLM run failed ({asked}): {type(exc).__name__}: {_one_line(exc)}"


@overload
async def run_agent(
    *,
    model: Model,
    settings: ModelSettings,
    run_job: RunJob,
    instructions: str,
    prompt: str,
    tools: Sequence[ToolSpec],
    policy: PathPolicy,
    on_event: OnEvent | None = None,
) -> AgentResult[str]: ...


@overload
async def run_agent(
    *,
    model: Model,
    settings: ModelSettings,
    run_job: RunJob,
    instructions: str,
    prompt: str,
    tools: Sequence[ToolSpec],
    policy: PathPolicy,
    output_type: type[OutputT],
    on_event: OnEvent | None = None,
) -> AgentResult[OutputT]: ...


async def run_agent(
    *,
    model: Model,
    settings: ModelSettings,
    run_job: RunJob,
    instructions: str,
    prompt: str,
    tools: Sequence[ToolSpec],
    policy: PathPolicy,
    output_type: type[object] = str,
    on_event: OnEvent | None = None,
) -> AgentResult[object]:
    """Run one agent to completion; raise `AgentFailed` when the model cannot finish within bounds."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
    from pydantic_ai.usage import RunUsage, UsageLimits

    calls: list[ToolCall] = []

    def agent_for(mode: str) -> Agent[None, object]:
        return Agent(
            model,
            output_type=output_modes.output_spec(output_type, mode),
            instructions=instructions,
            tools=[_make_tool(spec, policy, run_job, calls, on_event) for spec in tools],
            retries={"tools": settings.output_retries, "output": settings.output_retries},
        )

    async def stream_text(_ctx: RunContext[None], events: AsyncIterable[AgentStreamEvent]) -> None:
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
    replies: list[ModelMessage] = []

    async def run(mode: str, seconds: float) -> AgentRunResult[object]:
        from pydantic_ai import capture_run_messages

        timeout = min(settings.timeout, max(seconds, 0.001))
        with capture_run_messages() as messages:
            try:
                async with asyncio.timeout(seconds):
                    return await agent_for(mode).run(
                        prompt,
                        model_settings=request_settings(replace(settings, timeout=timeout)),
                        usage=usage,
                        usage_limits=UsageLimits(
                            request_limit=settings.max_steps,
                            tool_calls_limit=settings.max_steps * TOOL_CALLS_PER_STEP,
                        ),
                        event_stream_handler=stream_text if on_event and output_type is str else None,
                    )
            finally:
                replies.extend(messages)

    def spent(exc: BaseException) -> AgentFailed:
        left = budget.remaining(settings.run_budget)
        message = settings.redacted(_failure_message(exc, settings, sent[0], left, replies))
        log.warning("LLM run failed: %s", message)
        return AgentFailed(message, usage_dict(usage, sent[0], replies))

    mode = output_modes.mode_for(settings)
    with counting() as sent:
        if budget.remaining(settings.run_budget) <= 0:
            raise spent(TimeoutError())
        try:
            result = await run(mode, budget.remaining(settings.run_budget))
        except Exception as exc:
            fallback = _fallback_after(exc, mode, output_type, usage)
            if fallback is None or budget.remaining(settings.run_budget) <= 0:
                raise spent(exc) from exc
            refused = _refusal_reason(exc, settings)
            log.warning("the LLM endpoint refused output mode %r (%s); trying %r", mode, refused, fallback)
            try:
                result = await run(fallback, budget.remaining(settings.run_budget))
            except Exception as retry_exc:
                if usage.requests:  # the server took the fallback mode, though the run failed later
                    output_modes.remember(settings, fallback, refused)
                raise spent(retry_exc) from retry_exc
            output_modes.remember(settings, fallback, refused)
            mode = fallback
    structured = None if output_type is str else mode
    return AgentResult(result.output, usage_dict(usage, sent[0], replies), calls, structured)


def _refusal_reason(exc: BaseException, settings: ModelSettings) -> str:
    """The server's reason for refusing a mode, as logged and kept (its key and URL credentials masked)."""
    body = getattr(exc, "body", None)
    return settings.redacted(
        f"HTTP {getattr(exc, 'status_code', '?')}: {wire.reason(body, MAX_REASON_CHARS)}"
    )


def _fallback_after(exc: Exception, mode: str, output_type: type[object], usage: RunUsage) -> str | None:
    """The mode to try once more in when the endpoint refused this one at the first request; not
    after a refused key or an unknown URL or model, which no output mode changes."""
    if output_type is str or usage.requests or not output_modes.is_refusal(exc, asked_feature=True):
        return None
    if getattr(exc, "status_code", None) in NOT_THE_MODE:
        return None
    return output_modes.FALLBACK.get(mode)

"""Probing an LLM endpoint: is it there, does it take the key, does a tool round trip work, which
output modes does it accept.

`health_check` asks only whether the endpoint answers (`GET /models`, a few seconds at most);
`reme doctor` also runs a whole tool round trip (a tool call and the turn that carries its result,
where llama-cpp-python once refused a null `content`) and a one-field structured answer per
output mode, and says which step failed, quoting the server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from reme.llm.settings import OUTPUT_MODES, ModelSettings, shown_url

if TYPE_CHECKING:
    from pydantic_ai.models import Model

DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1"}
REACH_TIMEOUT_S = 3.0
PROBE_STEPS = 4  # model requests per output-mode probe


def _url(settings: ModelSettings) -> str:
    return (settings.base_url or DEFAULT_URLS.get(settings.backend, "")).rstrip("/")


def endpoint(settings: ModelSettings) -> str:
    """The endpoint as a report shows it: URL credentials masked."""
    return shown_url(_url(settings))


async def unreachable(settings: ModelSettings, timeout: float = REACH_TIMEOUT_S) -> str | None:
    """Why the endpoint cannot serve this model (unreachable, key refused), or None when it answers."""
    if settings.backend == "scripted" or settings.missing():
        return None
    import httpx

    url = _url(settings)
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    if settings.backend == "anthropic":
        headers = {"x-api-key": settings.api_key, "anthropic-version": "2023-06-01"}
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            answer = await client.get(f"{url}/models", headers=headers)
    except httpx.HTTPError as exc:
        said = f"{type(exc).__name__}: {exc or 'no answer'}"
        return settings.redacted(
            f"cannot reach {endpoint(settings)} ({said}); check LLM_BASE_URL and that the server runs"
        )
    if answer.status_code in (401, 403):
        return f"{endpoint(settings)} refused the API key (HTTP {answer.status_code}); check LLM_API_KEY"
    return None  # any other answer (even 404 for servers without /models): something serves there


PROBE_MAX_TOKENS = 256  # the probe's answers are a word; a server given no limit may write for minutes
REASON_CHARS = 1000  # of the server's reason in a doctor report


@dataclass(frozen=True)
class RoundTrip:
    """A tool round trip: did the model call the tool, did the server take the turn after it.

    `failed_step` is None when both worked, else `tool call` (the first request, or the model
    answered without calling the tool) or `turn after the tool call` (the request that carries
    the tool's result); `error` quotes the server.
    """

    tool_called: bool
    failed_step: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class ModeReport:
    """One output mode tried on the endpoint: did a structured answer come back."""

    mode: str
    works: bool
    error: str | None = None


def _quick(settings: ModelSettings) -> ModelSettings:
    return replace(settings.lowered(max_tokens=PROBE_MAX_TOKENS), max_retries=0)


def describe_error(exc: BaseException, settings: ModelSettings) -> str:
    """An exception as a doctor quotes it: the HTTP status and the server's whole reason, bounded,
    with the key and URL credentials masked should the server quote them back."""
    from pydantic_ai.exceptions import ModelHTTPError

    from reme.llm import wire

    if isinstance(exc, ModelHTTPError):
        return settings.redacted(f"HTTP {exc.status_code}: {wire.reason(exc.body, REASON_CHARS)}")
    return settings.redacted(f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:REASON_CHARS])


async def probe_round_trip(model: Model, settings: ModelSettings) -> RoundTrip:
    """Ask for one call of a `ping` tool and an answer after it (text output, `tool_choice: auto`)."""
    from pydantic_ai import Agent, Tool, capture_run_messages
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.usage import UsageLimits

    from reme.llm.providers import request_settings

    called: list[bool] = []
    agent = Agent(model, tools=[Tool(_ping(called))], retries=1)
    with capture_run_messages() as messages:
        try:
            await agent.run(
                "Call the ping tool once, then answer with the word it returned.",
                model_settings=request_settings(_quick(settings)),
                usage_limits=UsageLimits(request_limit=PROBE_STEPS),
            )
            error = None
        except Exception as exc:
            error = describe_error(exc, settings)
    replies = [m for m in messages if isinstance(m, ModelResponse)]
    calls = any(isinstance(part, ToolCallPart) for reply in replies for part in reply.parts)
    if not called and error is None:
        return RoundTrip(False, "tool call", "the model answered without calling the tool")
    if error is None:
        return RoundTrip(True)
    return RoundTrip(bool(called), "turn after the tool call" if calls else "tool call", error)


async def probe_output_modes(model: Model, settings: ModelSettings) -> list[ModeReport]:
    """Ask for a one-field structured answer in each output mode (one short request each, plus one retry)."""
    from pydantic import BaseModel
    from pydantic_ai import Agent
    from pydantic_ai.usage import UsageLimits

    from reme.llm.output_modes import output_spec
    from reme.llm.providers import request_settings

    class Answer(BaseModel):
        word: str

    reports = []
    for mode in OUTPUT_MODES:
        agent = Agent(model, output_type=output_spec(Answer, mode), retries=1)
        try:
            result = await agent.run(
                "Answer with the word pong.",
                model_settings=request_settings(_quick(settings)),
                usage_limits=UsageLimits(request_limit=PROBE_STEPS),
            )
            reports.append(ModeReport(mode, isinstance(result.output, Answer)))
        except Exception as exc:
            reports.append(ModeReport(mode, False, describe_error(exc, settings)))
    return reports


def _ping(called: list[bool]) -> Callable[[], str]:
    def ping() -> str:
        """Returns the secret word."""
        called.append(True)
        return "pong"

    return ping

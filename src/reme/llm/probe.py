"""Probing an LLM endpoint: is it there, does it take the key, which output modes does it accept.

`health_check` asks only whether the endpoint answers (`GET /models`, a few seconds at most);
`reme doctor` also runs a one-line agent per output mode, with one tool, to see what works.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from reme.llm.settings import OUTPUT_MODES, ModelSettings

DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1"}
REACH_TIMEOUT_S = 3.0
PROBE_STEPS = 4  # model requests per output-mode probe


def endpoint(settings: ModelSettings) -> str:
    return (settings.base_url or DEFAULT_URLS.get(settings.backend, "")).rstrip("/")


async def unreachable(settings: ModelSettings, timeout: float = REACH_TIMEOUT_S) -> str | None:
    """Why the endpoint cannot serve this model (unreachable, key refused), or None when it answers."""
    if settings.backend == "scripted" or settings.missing():
        return None
    import httpx

    url = endpoint(settings)
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    if settings.backend == "anthropic":
        headers = {"x-api-key": settings.api_key, "anthropic-version": "2023-06-01"}
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            answer = await client.get(f"{url}/models", headers=headers)
    except httpx.HTTPError as exc:
        return f"cannot reach {url} ({type(exc).__name__}: {exc or 'no answer'}); check LLM_BASE_URL and that the server runs"
    if answer.status_code in (401, 403):
        return f"{url} refused the API key (HTTP {answer.status_code}); check LLM_API_KEY"
    return None  # any other answer (even 404 for servers without /models): something serves there


@dataclass(frozen=True)
class ModeReport:
    """One output mode tried on the endpoint: did a structured answer come back, was the tool called."""

    mode: str
    works: bool
    tool_called: bool
    error: str | None = None


async def probe_output_modes(model: Any, settings: ModelSettings) -> list[ModeReport]:
    """Run a one-line agent with one tool in each output mode (a few short requests each)."""
    from pydantic import BaseModel
    from pydantic_ai import Agent, Tool
    from pydantic_ai.usage import UsageLimits

    from reme.llm.output_modes import output_spec
    from reme.llm.providers import request_settings

    class Answer(BaseModel):
        word: str

    quick = replace(settings, max_retries=0)
    reports = []
    for mode in OUTPUT_MODES:
        called: list[bool] = []
        agent = Agent(model, output_type=output_spec(Answer, mode), tools=[Tool(_ping(called))], retries=1)
        try:
            result = await agent.run(  # type: ignore[call-overload]  # model settings are a plain dict here
                "Call the ping tool once, then answer with the word it returned.",
                model_settings=request_settings(quick),
                usage_limits=UsageLimits(request_limit=PROBE_STEPS),
            )
            reports.append(ModeReport(mode, isinstance(result.output, Answer), bool(called)))
        except Exception as exc:
            reports.append(ModeReport(mode, False, bool(called), f"{type(exc).__name__}: {exc}"[:300]))
    return reports


def _ping(called: list[bool]) -> Any:
    def ping() -> str:
        """Returns the secret word."""
        called.append(True)
        return "pong"

    return ping

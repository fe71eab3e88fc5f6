"""Build pydantic-ai chat models from resolved settings.

pydantic-ai is imported here, inside the functions, so that only a job that really talks to a model
pays for the import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reme.llm import wire
from reme.llm.attempts import watch
from reme.llm.settings import ModelSettings

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings as RequestSettings


class LLMNotConfigured(RuntimeError):
    """No usable model: the message names the setting to fill in."""


def build_model(settings: ModelSettings) -> Model:
    """A chat model for an OpenAI-compatible endpoint, Anthropic or Ollama; scripted is built elsewhere."""
    missing = settings.missing()
    if missing:
        raise LLMNotConfigured(f"no LLM configured: set {missing} (see docs/llm.md)")
    if settings.backend == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        anthropic = AnthropicProvider(api_key=settings.api_key, base_url=settings.base_url or None)
        _count_attempts(anthropic.client)
        return AnthropicModel(settings.model, provider=anthropic)
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers import Provider

    if settings.backend == "ollama":
        from pydantic_ai.providers.ollama import OllamaProvider

        provider: Provider[AsyncOpenAI] = OllamaProvider(
            base_url=settings.base_url, api_key=settings.api_key or None
        )
    else:
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(
            base_url=settings.base_url or None, api_key=settings.api_key or "api-key-not-set"
        )
    _count_attempts(provider.client)
    return OpenAIChatModel(settings.model, provider=provider)


def _count_attempts(sdk_client: object) -> None:
    """Count every HTTP request the provider's SDK sends (its retries too) in the run's usage, and
    send them through `wire.CompatTransport` (requests every server accepts, final refusals not retried).

    Both go on the HTTP client the provider built itself (kept, so the provider still closes it);
    the SDK client keeps it in `_client`, which pydantic-ai itself relies on.
    """
    http_client = getattr(sdk_client, "_client", None)
    watch(http_client)
    wire.install(http_client)


def request_settings(settings: ModelSettings) -> RequestSettings:
    """Per-request timeout, output-token limit and bounded transport retries (HTTP 408/409/429/5xx, timeouts)."""
    if settings.backend == "scripted":
        return {}
    return {
        "timeout": settings.timeout,
        "max_retries": settings.max_retries,
        "max_tokens": settings.max_tokens,
    }

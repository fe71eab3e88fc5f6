"""The `llm` component: chat models per role (`chat`, `memory`) from config, built on first use.

Backends: `openai` (any OpenAI-compatible endpoint), `anthropic` and `ollama`; the `scripted` test
double is registered by `reme.testing` when a process opts in (`REME_PLUGINS`). Missing credentials never stop the
application from starting: the LLM jobs report them instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, ClassVar

from reme.app.component import Component, Host, Report
from reme.app.config import ConfigError
from reme.app.registry import register_component
from reme.app.spelling import did_you_mean
from reme.llm.providers import build_model
from reme.llm.settings import ROLE_KEYS, ROLES, ModelSettings, resolve_settings

if TYPE_CHECKING:
    from pydantic_ai.models import Model


class LLMComponent(Component):
    kind = "llm"
    backend: ClassVar[str] = "openai"

    def __init__(self, app: Host, name: str, **settings: object) -> None:
        super().__init__(app, name, **settings)
        self._models: dict[str, Model] = {}
        self._check_settings()

    def _check_settings(self) -> None:
        """Refuse an unknown key or a bad value at start, not first when an LLM job runs.

        A missing model or key is not refused: the LLM jobs report it and everything else works.
        """
        shared = {field.name for field in fields(ModelSettings)}
        for key, value in self.settings.items():
            where = f"components.{self.name}.{key}"
            if key in ROLES:
                if value is not None and not isinstance(value, dict):
                    raise ConfigError(f"config key {where!r} must be a mapping of {', '.join(ROLE_KEYS)}")
                self._check_keys(where, value or {}, set(ROLE_KEYS))
            elif key not in shared:
                known = sorted({*shared, *ROLES})
                raise ConfigError(
                    f"unknown config key {where!r} (known: {', '.join(known)}){did_you_mean(key, known)}"
                )
            elif isinstance(value, (dict, list)):
                raise ConfigError(f"config key {where!r} must be text or a number, got {value!r}")
        try:
            for role in ROLES:
                self.settings_for(role)
        except ValueError as exc:
            raise ConfigError(f"config key {exc}") from None

    @staticmethod
    def _check_keys(where: str, block: Mapping[str, object], known: set[str]) -> None:
        for key, value in block.items():
            if key not in known:
                hint = did_you_mean(key, known)
                raise ConfigError(
                    f"unknown config key '{where}.{key}' (known: {', '.join(sorted(known))}){hint}"
                )
            if isinstance(value, (dict, list)):
                raise ConfigError(f"config key '{where}.{key}' must be text or a number, got {value!r}")

    def settings_for(self, role: str = "chat") -> ModelSettings:
        return resolve_settings({**self.settings, "backend": self.backend}, role)

    def missing(self, role: str = "chat") -> str | None:
        """The setting to fill in before this role can call a model, or None."""
        return self.settings_for(role).missing()

    def model(self, role: str = "chat", variables: Mapping[str, object] | None = None) -> Model:
        """The model for a role; raise `LLMNotConfigured` naming the missing setting."""
        settings = self.settings_for(role)
        key = repr((settings.backend, settings.model, settings.base_url, settings.api_key))
        if key not in self._models:
            self._models[key] = build_model(settings)
        return self._models[key]

    async def close(self) -> None:
        for model in self._models.values():
            async with model:  # leaving the outermost entry closes the HTTP client the provider opened itself
                pass
        self._models.clear()

    def health(self) -> Report:
        chat, memory = self.settings_for("chat"), self.settings_for("memory")
        missing = chat.missing()
        report = {
            "status": "ok" if missing is None else "unconfigured",
            "chat": chat.describe(),
            "memory": memory.describe(),
        }
        return report if missing is None else {**report, "reason": f"set {missing}"}

    async def probe(self) -> Report:
        """`health()` plus whether each configured endpoint answers (a few seconds at most)."""
        from reme.llm.probe import unreachable

        report = self.health()
        problems = []
        for role in dict.fromkeys(("chat", "memory")):
            why = await unreachable(self.settings_for(role))
            if why and why not in problems:
                problems.append(why)
        if problems:
            return {**report, "status": "error", "reason": "; ".join(problems)}
        return report


class AnthropicLLM(LLMComponent):
    backend = "anthropic"


class OllamaLLM(LLMComponent):
    backend = "ollama"


register_component("openai")(LLMComponent)
register_component("anthropic")(AnthropicLLM)
register_component("ollama")(OllamaLLM)

"""The `llm` component: chat models per role (`chat`, `memory`) from config, built on first use.

Backends: `openai` (any OpenAI-compatible endpoint), `anthropic` and `ollama`; the `scripted` test
double is registered by `reme.testing` when a process opts in (`REME_PLUGINS`). Missing credentials and wrong
settings never stop the application from starting: the LLM jobs and `health_check` report them instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, ClassVar

from reme.app.component import Component, Host, Report
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
        self._problem = self._settings_problem()

    def _settings_problem(self) -> str | None:
        """What is wrong with the block (an unknown key, a list, a bad value), or None. Not a reason to
        refuse the start: captures, search and every job without a model keep working, and the LLM
        jobs and `health_check` name the key (as for missing credentials)."""
        shared = {field.name for field in fields(ModelSettings)}
        for key, value in self.settings.items():
            where = f"components.{self.name}.{key}"
            if key in ROLES:
                if value is not None and not isinstance(value, dict):
                    return f"config key {where!r} must be a mapping of {', '.join(ROLE_KEYS)}"
                problem = self._keys_problem(where, value or {}, set(ROLE_KEYS))
                if problem:
                    return problem
            elif key not in shared:
                known = sorted({*shared, *ROLES})
                return f"unknown config key {where!r} (known: {', '.join(known)}){did_you_mean(key, known)}"
            elif isinstance(value, (dict, list)):
                return f"config key {where!r} must be text or a number, got {value!r}"
        try:
            for role in ROLES:
                resolve_settings({**self.settings, "backend": self.backend}, role)
        except ValueError as exc:
            return f"config key {exc}"
        return None

    @staticmethod
    def _keys_problem(where: str, block: Mapping[str, object], known: set[str]) -> str | None:
        for key, value in block.items():
            if key not in known:
                return f"unknown config key '{where}.{key}' (known: {', '.join(sorted(known))}){did_you_mean(key, known)}"
            if isinstance(value, (dict, list)):
                return f"config key '{where}.{key}' must be text or a number, got {value!r}"
        return None

    def settings_for(self, role: str = "chat") -> ModelSettings:
        """A role's settings; ValueError naming the key when the block is wrong (`_settings_problem`)."""
        if self._problem:
            raise ValueError(self._problem)
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

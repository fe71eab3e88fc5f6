"""Test support that plugs into a running application: the `scripted` LLM backend.

Registered through the `reme.plugins` entry point (the same hook third-party plugins use), so a
service started with `components.llm.backend=scripted` has it, while the production component
module knows nothing about test doubles. The scripted model itself is `reme.llm.testing.scripted`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reme.app.components.llm import LLMComponent
from reme.app.registry import register_component
from reme.llm.providers import LLMNotConfigured

if TYPE_CHECKING:
    from pydantic_ai.models import Model


@register_component("scripted")
class ScriptedLLM(LLMComponent):
    """Plays `script` (see `reme.llm.testing.scripted`) from its first turn on every agent run."""

    backend = "scripted"

    def __init__(
        self, app: Any, name: str, script: Sequence[Mapping[str, Any]] = (), **settings: Any
    ) -> None:
        super().__init__(app, name, **settings)
        self.script: list[Mapping[str, Any]] = list(script)

    def missing(self, role: str = "chat") -> str | None:
        return None if self.script else "components.llm.script (the scripted backend has no turns)"

    def model(self, role: str = "chat", variables: Mapping[str, Any] | None = None) -> Model:
        from reme.llm.testing.scripted import scripted_model

        if not self.script:
            raise LLMNotConfigured(f"no LLM configured: set {self.missing(role)}")
        return scripted_model(self.script, variables)

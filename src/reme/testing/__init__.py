"""Test support that plugs into a running application: the `scripted` LLM backend.

Never an installed entry point: a process opts in with `REME_PLUGINS=reme.testing` (the explicit
plugin hook, docs/testing.md), as the test suite does for itself and the `reme` processes it starts.
A service so started with `components.llm.backend=scripted` has it, while production never imports
it and the production component module knows nothing about test doubles. The scripted model itself
is `reme.llm.testing.scripted`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from reme.app.components.llm import LLMComponent
from reme.app.registry import register_component
from reme.jsontypes import JSONValue
from reme.llm.providers import LLMNotConfigured

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from reme.app.component import Host


@register_component("scripted")
class ScriptedLLM(LLMComponent):
    """Plays `script` (see `reme.llm.testing.scripted`) from its first turn on every agent run."""

    backend = "scripted"

    def __init__(
        self, app: Host, name: str, script: Sequence[Mapping[str, JSONValue]] = (), **settings: object
    ) -> None:
        super().__init__(app, name, **settings)
        self.script: list[Mapping[str, JSONValue]] = list(script)

    def missing(self, role: str = "chat") -> str | None:
        return None if self.script else "components.llm.script (the scripted backend has no turns)"

    def model(self, role: str = "chat", variables: Mapping[str, object] | None = None) -> Model:
        from reme.llm.testing.scripted import scripted_model

        if not self.script:
            raise LLMNotConfigured(f"no LLM configured: set {self.missing(role)}")
        return scripted_model(self.script, variables)

"""Base class of pluggable components (LLM, index, workspace, ...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from reme.app.application import Application
    from reme.app.settings import SettingsTable


class Component:
    """A long-lived backend started before jobs run and closed after.

    Subclasses set `kind` and `requires` (names of components that must start first) and
    override `start`/`close`. Settings come from the component's config block; a class that sets
    `settings_table` gets them checked against it with its defaults filled in (`reme.app.settings`).
    """

    kind: ClassVar[str] = "component"
    requires: ClassVar[tuple[str, ...]] = ()
    settings_table: ClassVar[SettingsTable | None] = None

    def __init__(self, app: Application, name: str, **settings: Any) -> None:
        self.app = app
        self.name = name
        self.settings = settings

    @classmethod
    def uses(cls, settings: Mapping[str, Any]) -> tuple[str, ...]:
        """Components this one uses when they are configured: started first, skipped when absent."""
        return ()

    async def start(self) -> None:
        """Acquire resources; raise to abort application start."""

    def interrupt(self) -> None:
        """Shutdown is coming: end long-running work at its next consistent point (nothing by default)."""

    async def close(self) -> None:
        """Release resources; called in reverse start order."""

    def health(self) -> dict[str, Any]:
        return {"status": "ok"}

    async def probe(self) -> dict[str, Any]:
        """Health checked live (an endpoint asked over the network); `health()` unless overridden."""
        return self.health()

    def stats(self) -> dict[str, Any]:
        """Figures for the `status` job (sizes, counts); none by default."""
        return {}

"""Base class of pluggable components (LLM, index, workspace, ...), what they see of the application,
and the typed table of started components that steps reach them through."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol, TypeVar

from reme.errors import Unavailable
from reme.jsontypes import JSONObject

if TYPE_CHECKING:
    from reme.app.settings import SettingsTable

C = TypeVar("C", bound="Component")
Report = Mapping[str, object]  # a component's health or figures: JSON-shaped, read by the status jobs


class Components(dict[str, "Component"]):
    """The started components by name, in start order; built once by `Application.start`.

    Reading one by name and class gives it typed, or says clearly that it is not there: no lookup
    quietly builds a stand-in.
    """

    def find(self, name: str, cls: type[C]) -> C | None:
        """The component `name` when it is started and a `cls`; None when it is not configured."""
        component = self.get(name)
        if component is None:
            return None
        if not isinstance(component, cls):
            raise Unavailable(
                f"component {name!r} is a {type(component).__name__}, not a {cls.__name__}; "
                f"check components.{name}.backend"
            )
        return component

    def need(self, name: str, cls: type[C]) -> C:
        """The component `name` as a `cls`; `Unavailable` naming the config key when it is not configured."""
        component = self.find(name, cls)
        if component is None:
            raise Unavailable(f"no {name!r} component is configured; add components.{name} to the config")
        return component


class Host(Protocol):
    """What a component (and a step) sees of the application: its configuration, folder, clock and
    the components started before it. `Application` is one; a test may pass any other."""

    @property
    def config(self) -> JSONObject: ...

    @property
    def workspace_dir(self) -> Path: ...

    @property
    def tz(self) -> tzinfo: ...

    @property
    def components(self) -> Components: ...

    def today(self) -> date: ...


class Component:
    """A long-lived backend started before jobs run and closed after.

    Subclasses set `kind` and `requires` (names of components that must start first) and
    override `start`/`close`. Settings come from the component's config block; a class that sets
    `settings_table` gets them checked against it with its defaults filled in (`reme.app.settings`).
    `health()` only looks: what needs repairing is repaired by `start()` and `repair()`.
    """

    kind: ClassVar[str] = "component"
    requires: ClassVar[tuple[str, ...]] = ()
    settings_table: ClassVar[SettingsTable | None] = None

    def __init__(self, app: Host, name: str, **settings: object) -> None:
        self.app = app
        self.name = name
        self.settings = settings

    @classmethod
    def uses(cls, settings: Mapping[str, object]) -> tuple[str, ...]:
        """Components this one uses when they are configured: started first, skipped when absent."""
        return ()

    async def start(self) -> None:
        """Acquire resources; raise to abort application start."""

    def interrupt(self) -> None:
        """Shutdown is coming: end long-running work at its next consistent point (nothing by default)."""

    async def close(self) -> None:
        """Release resources; called in reverse start order."""

    async def repair(self) -> None:
        """Finish what a killed writer left behind (the `health_check` job asks before `health()`)."""

    def health(self) -> Report:
        """The component's state, read-only."""
        return {"status": "ok"}

    async def probe(self) -> Report:
        """Health checked live (an endpoint asked over the network); `health()` unless overridden."""
        return self.health()

    def stats(self) -> Report:
        """Figures for the `status` job (sizes, counts); none by default."""
        return {}

"""Named registries for pluggable steps and components.

Built-in steps and components register themselves when their modules under `reme.app.steps` and
`reme.app.components` are imported; third-party plugins do the same from the `reme.plugins` entry
point group. `load_plugins()` imports all of them once, at application start (never at CLI start).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """A name → object table with helpful errors for unknown names."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def decorate(obj: T) -> T:
            if name in self._items and self._items[name] is not obj:
                raise ValueError(f"{self.what} {name!r} is already registered")
            self._items[name] = obj
            return obj

        return decorate

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise KeyError(f"unknown {self.what} {name!r} (known: {known})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def names(self) -> list[str]:
        return sorted(self._items)


STEPS: Registry[Callable[..., Any]] = Registry("step")
COMPONENTS: Registry[type] = Registry("component backend")


def register_step(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `fn(ctx, **settings)` as the step backend `name`."""
    return STEPS.register(name)


def register_component(backend: str) -> Callable[[type], type]:
    """Register a `Component` subclass under the backend name used in config."""
    return COMPONENTS.register(backend)


_loaded = False


def load_plugins() -> None:
    """Import every built-in step/component module and the `reme.plugins` entry points, once."""
    global _loaded
    if _loaded:
        return
    for package_name in ("reme.app.components", "reme.app.steps"):
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package_name}.{info.name}")
    for ep in entry_points(group="reme.plugins"):
        ep.load()
    _loaded = True

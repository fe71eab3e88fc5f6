"""Named registries for pluggable steps and components.

Built-in steps and components register themselves when their modules under `reme.app.steps` and
`reme.app.components` are imported; third-party plugins do the same from the `reme.plugins` entry
point group, and the modules named in `REME_PLUGINS` (comma-separated) are imported as an explicit
opt-in — how the test suite brings in `reme.testing` without shipping it as an entry point
(docs/testing.md). `load_plugins()` imports all of them once, at application start (never at CLI start).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import pkgutil
import typing
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Generic, TypeVar

from reme.app.config import ConfigError

if TYPE_CHECKING:
    from reme.app.component import Component

T = TypeVar("T")
S = TypeVar("S")
_WORDS: dict[object, str] = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
_BY_NAME: dict[object, type] = {"int": int, "float": float, "str": str, "bool": bool}  # postponed annotations
PLUGINS_ENV = "REME_PLUGINS"


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

    @contextmanager
    def registered(self, items: Mapping[str, T]) -> Iterator[None]:
        """Register `items` for the duration of a block (test doubles), then remove them again."""
        for name, obj in items.items():
            self.register(name)(obj)
        try:
            yield
        finally:
            for name in items:
                self._items.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def names(self) -> list[str]:
        return sorted(self._items)


Step = Callable[..., Awaitable[None] | None]  # `fn(ctx, **settings)`, sync (run in a thread) or async
STEPS: Registry[Step] = Registry("step")
COMPONENTS: Registry[type[Component]] = Registry("component backend")
_SETTINGS_ATTR = "__reme_step_settings__"


def register_step(name: str, *, settings: type | None = None) -> Callable[[Step], Step]:
    """Register `fn(ctx, **settings)` as the step backend `name`.

    The settings a step takes are its keyword parameters after `ctx`; a step that forwards
    `**settings` declares them with `settings=<dataclass>` (its fields are accepted keys too).
    """

    def decorate(fn: Step) -> Step:
        if settings is not None:
            setattr(fn, _SETTINGS_ATTR, settings)
        return STEPS.register(name)(fn)

    return decorate


def step_settings(fn: Step) -> tuple[str, ...]:
    """The setting names a step accepts; a `**settings` step without a declaration accepts none."""
    parameters = list(inspect.signature(fn).parameters.values())[1:]
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    named = tuple(p.name for p in parameters if p.kind in kinds)
    declared = getattr(fn, _SETTINGS_ATTR, None)
    return named + tuple(field.name for field in dataclasses.fields(declared)) if declared else named


def check_step_settings(fn: Step, step: str, settings: Mapping[str, object]) -> None:
    """Refuse a config value whose type is not the one the step's keyword parameter names (a
    ConfigError at load, naming the setting): `int("x")` mid-job was a bug answer, `True` a 1."""
    parameters = inspect.signature(fn).parameters
    for key, value in settings.items():
        if key in parameters:
            annotation = parameters[key].annotation
            _check_type(step, key, value, _BY_NAME.get(annotation, annotation))


def settings_of(cls: Callable[..., S], step: str, settings: Mapping[str, object]) -> S:
    """The settings dataclass a step declared (`register_step(settings=cls)`), built from its config
    block; a value of the wrong type is a `ConfigError` naming the setting, not a crash mid-job."""
    hints = typing.get_type_hints(cls) if isinstance(cls, type) else {}
    for key, value in settings.items():
        _check_type(step, key, value, hints.get(key))
    return cls(**settings)


def _check_type(step: str, key: str, value: object, expected: object) -> None:
    """A ConfigError when `expected` is int, float, str or bool and `value` is not one (an integer
    passes for a number; true/false for nothing but bool)."""
    if expected in (int, float, str, bool) and not (
        isinstance(value, expected)
        and (expected is bool or not isinstance(value, bool))
        or (expected is float and isinstance(value, int) and not isinstance(value, bool))
    ):
        raise ConfigError(f"step {step!r}: setting {key!r} must be {_WORDS[expected]}, got {value!r}")


def register_component(backend: str) -> Callable[[type[Component]], type[Component]]:
    """Register a `Component` subclass under the backend name used in config."""
    return COMPONENTS.register(backend)


_loaded = False


def load_plugins(step_modules: Sequence[str] | None = None) -> None:
    """Import every built-in step/component module and the `reme.plugins` entry points, once.

    `step_modules` (names under `reme.app.steps`): the components and only these steps, for a
    one-shot run of known jobs that must start fast (the SessionStart hook's recall).
    """
    global _loaded
    if _loaded:
        return
    if step_modules is not None:
        _import_all("reme.app.components")
        for name in step_modules:
            importlib.import_module(f"reme.app.steps.{name}")
        _import_opted_in()
        return
    for package_name in ("reme.app.components", "reme.app.steps"):
        _import_all(package_name)
    for ep in entry_points(group="reme.plugins"):
        ep.load()
    _import_opted_in()
    _loaded = True


def opted_in_plugins() -> list[str]:
    """The module names listed in `REME_PLUGINS` (comma-separated; blanks ignored)."""
    return [name.strip() for name in os.environ.get(PLUGINS_ENV, "").split(",") if name.strip()]


def _import_opted_in() -> None:
    for name in opted_in_plugins():
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"{PLUGINS_ENV} names {name!r}, which cannot be imported: {exc}") from exc


def _import_all(package_name: str) -> None:
    package = importlib.import_module(package_name)
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package_name}.{info.name}")

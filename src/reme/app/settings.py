"""Settings tables: one owner for each component setting (name, type, default, help).

A component class lists its settings once, as `Setting` rows in a `SettingsTable` (in the spirit of
datasette's settings). The table is where the setting's default lives — the packaged YAML names only
the backend and what differs from the table — and where its validation and its help text come from:
`Application` checks a component's config block against it before building the component, fills in
the defaults, and writes the effective values back into the configuration (the `config` job shows them).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from reme.app.config import ConfigError
from reme.app.spelling import did_you_mean
from reme.jsontypes import JSONObject, JSONValue

_ARTICLES: dict[type, str] = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "a mapping",
}
_TYPE_NAMES = tuple(_ARTICLES)


@dataclass(frozen=True)
class Setting:
    """One row of a settings table: a config key of a component, its type, default and help.

    `kind` is the JSON type (`bool`, `int`, `float`, `str`, `list`, `dict`); an `int` is accepted for a
    `float`. `nullable` admits `null`; `choices`, `minimum` and `maximum` narrow the accepted values;
    `rule` replaces the generated wording of what is accepted in error messages and help.
    """

    name: str
    kind: type
    default: JSONValue
    help: str
    nullable: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    rule: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _TYPE_NAMES:
            known = ", ".join(t.__name__ for t in _TYPE_NAMES)
            raise TypeError(f"setting {self.name!r}: kind must be one of {known}")
        self.check("default", self.default)  # a row whose own default is invalid is a bug, found at import

    @property
    def expected(self) -> str:
        """What the setting accepts, in words (`an integer from 1 to 2048`)."""
        if self.rule:
            return self.rule
        if self.choices:
            accepted = "one of " + ", ".join(repr(choice) for choice in self.choices)
        else:
            accepted = _ARTICLES[self.kind] + _range(self.minimum, self.maximum)
        return f"null or {accepted}" if self.nullable else accepted

    def check(self, where: str, value: object) -> JSONValue:
        """`value` if it fits this row (an int widened for a number); a ConfigError naming `where` otherwise."""
        if value is None and self.nullable:
            return None
        if value is None or not self._fits(value):
            raise ConfigError(f"config key {where!r}: {self.name} must be {self.expected}, got {value!r}")
        if self.kind is float and isinstance(value, int):
            return float(value)
        return copy.deepcopy(value)  # type: ignore[return-value]  # _fits narrowed it to this row's JSON type

    def _fits(self, value: object) -> bool:
        if isinstance(value, bool):
            return self.kind is bool
        if self.kind is float:
            if not isinstance(value, (int, float)):
                return False
        elif not isinstance(value, self.kind):
            return False
        if self.choices and value not in self.choices:
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False  # NaN passes every comparison's `not`, inf every maximum-less row
        if isinstance(value, (int, float)):
            return (self.minimum is None or value >= self.minimum) and (
                self.maximum is None or value <= self.maximum
            )
        return True

    def describe(self) -> str:
        """One help line: `name (type, default X): help`."""
        return f"{self.name} ({self.expected}, default {_show(self.default)}): {self.help}"


class SettingsTable:
    """The settings of one component backend, by name; validates a config block and fills defaults."""

    def __init__(self, *settings: Setting) -> None:
        self._rows = {setting.name: setting for setting in settings}
        if len(self._rows) != len(settings):
            raise TypeError("a settings table names each setting once")

    def __iter__(self) -> Iterator[Setting]:
        return iter(self._rows.values())

    def __contains__(self, name: object) -> bool:
        return name in self._rows

    def names(self) -> Sequence[str]:
        return tuple(self._rows)

    def defaults(self) -> JSONObject:
        """Every setting at its default (a fresh copy: callers may change it)."""
        return {name: copy.deepcopy(row.default) for name, row in self._rows.items()}

    def resolve(self, where: str, raw: Mapping[str, object]) -> JSONObject:
        """The block `raw` checked row by row, defaults filled in; a ConfigError names the first bad key."""
        for key in raw:
            if key not in self._rows:
                known = ", ".join(self._rows) or "none"
                hint = did_you_mean(key, self._rows)
                raise ConfigError(f"unknown config key '{where}.{key}' (known: {known}){hint}")
        resolved = self.defaults()
        for key, value in raw.items():
            resolved[key] = self._rows[key].check(f"{where}.{key}", value)
        return resolved

    def help(self) -> str:
        """The table as help text, one line per setting."""
        return "\n".join(row.describe() for row in self._rows.values())


def _range(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f" from {minimum:g} to {maximum:g}"
    if minimum is not None:
        return f" of at least {minimum:g}"
    return f" of at most {maximum:g}" if maximum is not None else ""


def _show(value: JSONValue) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, str) else str(value)

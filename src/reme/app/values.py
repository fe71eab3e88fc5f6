"""Typing of `key=value` strings from the command line and config overrides.

Kept free of heavy imports: the CLI client uses it on every call.
"""

from __future__ import annotations

import json
import re

from reme.jsontypes import JSONValue

_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def parse_value(text: str) -> JSONValue:
    """JSON for arrays/objects, numbers and booleans; anything else (`null` included) stays a string.

    A number written with a leading zero (`007`) is an identifier, not a number, so it stays a string.
    """
    stripped = text.strip()
    if stripped[:1] in ("[", "{", '"'):
        try:
            return json.loads(stripped)
        except (ValueError, RecursionError):  # nested deeper than the parser recurses: not a value
            return text
    if stripped in ("true", "false"):
        return json.loads(stripped)
    if _NUMBER.fullmatch(stripped):
        return json.loads(stripped)
    return text


def parse_assignments(args: list[str]) -> dict[str, JSONValue]:
    """Turn `["a=1", "b.c=x"]` into `{"a": 1, "b.c": "x"}`; raise ValueError on a bare word."""
    result: dict[str, JSONValue] = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or not key:
            raise ValueError(f"expected key=value, got {arg!r}")
        result[key] = parse_value(value)
    return result

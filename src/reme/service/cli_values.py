"""Command-line values typed by the job's parameter schema.

`reme search query=2024` must send the string "2024": a value becomes a number, boolean, list or
object only where the parameter's schema wants that type, so no guess about the text can break a
job. Values of parameters with no schema (config overrides, an unknown key the service will refuse
anyway) keep the generic typing of `reme.app.values`. Standard library only: the CLI imports it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from reme.app.values import parse_value
from reme.jsontypes import JSONObject, JSONValue

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


class ArgumentError(ValueError):
    """The words do not make the job's parameters; the message says how to write them."""


def split_words(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """`key=value` words as raw strings, and the bare words (values of the first required parameter)."""
    assigned: dict[str, str] = {}
    bare: list[str] = []
    for word in words:
        key, sep, value = word.partition("=")
        if sep and key:
            assigned[key] = value
        else:
            bare.append(word)
    return assigned, bare


def repeated_key(words: list[str]) -> str | None:
    """The first key given twice (`path=a path=b`): one of its values would be dropped unseen."""
    seen: set[str] = set()
    for word in words:
        key, sep, _ = word.partition("=")
        if sep and key:
            if key in seen:
                return key
            seen.add(key)
    return None


def schema_types(schema: JSONObject) -> set[str]:
    """The JSON types a (sub)schema accepts; empty when it does not say."""
    kinds = schema.get("type")
    found = {kinds} if isinstance(kinds, str) else set(_strings(kinds))
    for key in ("anyOf", "oneOf"):
        for option in _items(schema.get(key)):
            if isinstance(option, dict):
                found |= schema_types(option)
    values = [*_items(schema.get("enum")), *([schema["const"]] if "const" in schema else [])]
    return found | {_json_type(value) for value in values}


def _items(value: JSONValue) -> list[JSONValue]:
    return value if isinstance(value, list) else []


def _strings(value: JSONValue) -> list[str]:
    return [item for item in _items(value) if isinstance(item, str)]


def _object(value: JSONValue) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _schema(value: JSONValue) -> JSONObject | None:
    """A parameter's schema; None where there is none (the generic typing applies)."""
    return value if isinstance(value, dict) else None


def _json_type(value: JSONValue) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    names: dict[type, str] = {list: "array", dict: "object"}
    return names.get(type(value), "string")


def typed_value(text: JSONValue, schema: JSONObject | None) -> JSONValue:
    """`text` as the schema wants it: a string stays as typed; JSON only for the non-string types."""
    if not isinstance(text, str):  # already typed (an embedding caller of `run_once`)
        return text
    if schema is None:
        return parse_value(text)
    kinds = schema_types(schema)
    if not kinds:
        return parse_value(text)
    wanted = tuple(t for kind in kinds - {"string"} for t in _PYTHON_TYPES.get(kind, ()))
    if not wanted:
        return text
    try:
        value: JSONValue = json.loads(text.strip())
    except ValueError:
        return text  # the service names the type it wanted
    if isinstance(value, bool) and bool not in wanted:
        return text
    return value if isinstance(value, wanted) else text


def job_params(
    assigned: Mapping[str, JSONValue], bare: list[str], parameters: JSONObject | None, job: str
) -> JSONObject:
    """Typed parameters for `job`; bare words fill its first required parameter (or its only one).
    ArgumentError says why not."""
    properties = _object((parameters or {}).get("properties"))
    params: JSONObject = {
        key: typed_value(value, _schema(properties.get(key))) for key, value in assigned.items()
    }
    if not bare:
        return params
    if parameters is None:
        raise ArgumentError(f"expected key=value, got {bare[0]!r}")
    required = _strings(parameters.get("required")) or (list(properties) if len(properties) == 1 else [])
    if not required:
        names = ", ".join(f"{name}=" for name in properties) or "none"
        raise ArgumentError(f"{job} has no required parameter to take {bare[0]!r}; write key=value ({names})")
    first = required[0]
    if first in params:
        raise ArgumentError(f"{first} is given twice: as {first}= and as the bare word {bare[0]!r}")
    schema = _object(properties.get(first))
    if len(bare) > 1 and "string" not in schema_types(schema):
        raise ArgumentError(f"{first} takes one value, got {len(bare)} bare words; quote it")
    params[first] = typed_value(" ".join(bare), schema)
    return params

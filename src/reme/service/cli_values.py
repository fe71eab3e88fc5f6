"""Command-line values typed by the job's parameter schema.

`reme search query=2024` must send the string "2024": a value becomes a number, boolean, list or
object only where the parameter's schema wants that type, so no guess about the text can break a
job. Values of parameters with no schema (config overrides, an unknown key the service will refuse
anyway) keep the generic typing of `reme.app.values`. Standard library only: the CLI imports it.
"""

from __future__ import annotations

import json
from typing import Any

from reme.app.values import parse_value

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


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


def schema_types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a (sub)schema accepts; empty when it does not say."""
    kinds = schema.get("type")
    found = {kinds} if isinstance(kinds, str) else set(kinds or ())
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key) or ():
            if isinstance(option, dict):
                found |= schema_types(option)
    values = [*(schema.get("enum") or ()), *([schema["const"]] if "const" in schema else [])]
    return found | {_json_type(value) for value in values}


def _json_type(value: Any) -> str:
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


def typed_value(text: Any, schema: dict[str, Any] | None) -> Any:
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
        value = json.loads(text.strip())
    except ValueError:
        return text  # the service names the type it wanted
    if isinstance(value, bool) and bool not in wanted:
        return text
    return value if isinstance(value, wanted) else text


def job_params(
    assigned: dict[str, Any], bare: list[str], parameters: dict[str, Any] | None, job: str
) -> dict[str, Any]:
    """Typed parameters for `job`; bare words fill its first required parameter (or its only one,
    so `reme help search` works). ValueError says why not."""
    properties = (parameters or {}).get("properties") or {}
    params = {key: typed_value(value, properties.get(key)) for key, value in assigned.items()}
    if not bare:
        return params
    if parameters is None:
        raise ValueError(f"expected key=value, got {bare[0]!r}")
    required = parameters.get("required") or (list(properties) if len(properties) == 1 else [])
    if not required:
        names = ", ".join(f"{name}=" for name in properties) or "none"
        raise ValueError(f"{job} has no required parameter to take {bare[0]!r}; write key=value ({names})")
    first = required[0]
    if first in params:
        raise ValueError(f"{first} is given twice: as {first}= and as the bare word {bare[0]!r}")
    schema = properties.get(first) or {}
    if len(bare) > 1 and "string" not in schema_types(schema):
        raise ValueError(f"{first} takes one value, got {len(bare)} bare words; quote it")
    params[first] = typed_value(" ".join(bare), schema)
    return params

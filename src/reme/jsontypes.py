"""Names for JSON-shaped data crossing a seam (job parameters, response metadata, records on disk).

One alias instead of `Any`: a value is known to be JSON, so code that reads it narrows with
`isinstance` or validates it into a typed model before use.
"""

from __future__ import annotations

import json
from typing import TypeAlias

JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]
JSONObject: TypeAlias = dict[str, JSONValue]


def parse_json(text: str | bytes) -> object:
    """`json.loads`, whose every failure on hostile text is a ValueError: one nested past the
    parser's stack (`[[[[…`) raises RecursionError in the standard library."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def json_depth(value: object, cap: int) -> int:
    """How deeply lists and dicts nest in `value` (1 for a flat one), counted without recursion and
    no further than `cap` + 1: enough to tell a value over `cap` levels from one within it."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        deepest = max(deepest, depth)
        if depth <= cap:
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest

"""Names for JSON-shaped data crossing a seam (job parameters, response metadata, records on disk).

One alias instead of `Any`: a value is known to be JSON, so code that reads it narrows with
`isinstance` or validates it into a typed model before use.
"""

from __future__ import annotations

from typing import TypeAlias

JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]
JSONObject: TypeAlias = dict[str, JSONValue]

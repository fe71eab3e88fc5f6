"""reme jobs as agent tools, and the path allow-list that confines them.

A tool is the agent's view of a job, derived from the job's own declaration (`ToolSpec.of_job`): its
description and parameter schema minus the parameters an agent must not set (`agent.hide` in the job
config), which parameters are paths, and whether it writes. Every path argument is checked against the
pipeline's `PathPolicy` before the job runs; anything not explicitly allowed is refused.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from reme.jsontypes import JSONObject, JSONValue
from reme.workspace.paths import UnsafePathError, check_relative

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator


@dataclass(frozen=True)
class ToolSpec:
    job: str
    description: str
    parameters: JSONObject = field(hash=False, compare=False)
    path_params: tuple[str, ...] = ("path",)
    writes: bool = False

    @classmethod
    def of_job(
        cls,
        job: str,
        description: str,
        parameters: JSONObject,
        *,
        hide: Iterable[str] = (),
        paths: Iterable[str] = ("path",),
        writes: bool = False,
    ) -> ToolSpec:
        """The agent's view of a job: its declared schema without the hidden parameters."""
        hidden = set(hide)
        schema = copy.deepcopy(parameters)
        declared = schema.get("properties", {})
        properties: JSONObject = {
            k: v for k, v in (declared.items() if isinstance(declared, dict) else ()) if k not in hidden
        }
        schema["properties"] = properties
        required = schema.get("required", [])
        schema["required"] = [
            name for name in (required if isinstance(required, list) else ()) if name not in hidden
        ]
        schema["additionalProperties"] = False
        path_params = tuple(name for name in paths if name in properties)
        return cls(job, description, schema, path_params, writes)

    @cached_property
    def _validator(self) -> Draft202012Validator:
        from jsonschema import Draft202012Validator

        return Draft202012Validator(self.parameters)

    def invalid(self, args: Mapping[str, JSONValue]) -> str | None:
        """Why `args` do not match this tool's schema (unknown arguments included), or None."""
        errors = sorted(self._validator.iter_errors(args), key=lambda e: list(e.path))
        if not errors:
            return None
        where = ".".join(str(p) for p in errors[0].absolute_path)
        return f"invalid arguments for {self.job}: {(where + ': ') if where else ''}{errors[0].message}"

    def default(self, name: str) -> JSONValue:
        """The schema's default for parameter `name` (None when it declares none)."""
        properties = self.parameters.get("properties")
        declared = properties.get(name) if isinstance(properties, dict) else None
        return declared.get("default") if isinstance(declared, dict) else None


def _safe(path: object) -> bool:
    """A canonical workspace-relative path by the workspace's one path gate (no normalising)."""
    if not isinstance(path, str):
        return False
    try:
        return check_relative(path) == path
    except UnsafePathError:
        return False


@dataclass(frozen=True)
class PathPolicy:
    """Allow-lists for reading and writing: exact paths, folder prefixes ending in `/`, or `*` for all.

    Fails closed: an empty list allows nothing, and a path that is not plain and workspace-relative is
    refused whatever the lists say.
    """

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()

    def allows(self, path: object, *, writing: bool) -> bool:
        allowed = self.write if writing else (*self.read, *self.write)
        if path == "":  # the workspace root
            return "*" in allowed
        if not isinstance(path, str) or not _safe(path):
            return False
        return any(
            rule == "*" or path == rule or (rule.endswith("/") and path.startswith(rule)) for rule in allowed
        )

    def refusal(self, spec: ToolSpec, args: Mapping[str, JSONValue]) -> str | None:
        """Why this call is not allowed, or None when every path argument is allowed."""
        for name in spec.path_params:
            value = args[name] if name in args else spec.default(name)
            if not self.allows(value, writing=spec.writes):
                verb = "write" if spec.writes else "read"
                return f"refused: this agent may not {verb} {value!r}; allowed: {', '.join(self.write if spec.writes else (*self.read, *self.write)) or 'nothing'}"
        return None

"""reme jobs an agent may call, and the path allow-list that confines them.

The schemas are the agent's view of each job: the SPEC §7 parameter names, minus options an agent
should not use (overwrite, metadata merges it cannot see). Every path argument is checked against the
pipeline's `PathPolicy` before the job runs; anything not explicitly allowed is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_PATH = {"type": "string", "description": "workspace-relative POSIX path, e.g. daily/2026-06-01/trip.md"}


@dataclass(frozen=True)
class ToolSpec:
    job: str
    description: str
    parameters: dict[str, Any]
    path_params: tuple[str, ...] = ("path",)
    writes: bool = False

    def invalid(self, args: dict[str, Any]) -> str | None:
        """Why `args` do not match this tool's schema (unknown arguments included), or None."""
        from jsonschema import Draft202012Validator

        errors = sorted(Draft202012Validator(self.parameters).iter_errors(args), key=lambda e: list(e.path))
        if not errors:
            return None
        where = ".".join(str(p) for p in errors[0].absolute_path)
        return f"invalid arguments for {self.job}: {(where + ': ') if where else ''}{errors[0].message}"


def _object(properties: dict[str, Any], required: Iterable[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


TOOLS: dict[str, ToolSpec] = {
    spec.job: spec
    for spec in (
        ToolSpec(
            "read",
            "Read a text file, optionally a 1-based inclusive line range.",
            _object(
                {
                    "path": _PATH,
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1},
                },
                ["path"],
            ),
        ),
        ToolSpec(
            "write",
            "Write the whole body of a Markdown file (front matter given as name/description is merged).",
            _object(
                {
                    "path": _PATH,
                    "content": {"type": "string"},
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                },
                ["path", "content"],
            ),
            writes=True,
        ),
        ToolSpec(
            "edit",
            "Replace every occurrence of `old` with `new` in the body of a file.",
            _object(
                {"path": _PATH, "old": {"type": "string"}, "new": {"type": "string"}}, ["path", "old", "new"]
            ),
            writes=True,
        ),
        ToolSpec(
            "frontmatter_read",
            "Read the YAML front matter of a Markdown file.",
            _object({"path": _PATH}, ["path"]),
        ),
        ToolSpec(
            "frontmatter_update",
            "Merge keys into the front matter of a Markdown file; the body is left unchanged.",
            _object({"path": _PATH, "metadata": {"type": "object"}}, ["path", "metadata"]),
            writes=True,
        ),
        ToolSpec(
            "search",
            "Keyword search over the workspace; returns ranked passages with their path and line range.",
            _object(
                {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                    "path_prefix": {"type": "string"},
                    "start_date": {"type": "string", "description": "YYYY-MM-DD"},
                    "end_date": {"type": "string", "description": "YYYY-MM-DD"},
                },
                ["query"],
            ),
            path_params=(),
        ),
        ToolSpec(
            "list",
            "List a folder of the workspace.",
            _object(
                {"path": _PATH, "recursive": {"type": "boolean"}, "limit": {"type": "integer", "minimum": 1}},
                [],
            ),
        ),
        ToolSpec(
            "daily_list",
            "The cards of a date (YYYY-MM-DD).",
            _object({"date": {"type": "string"}}, []),
            path_params=(),
        ),
    )
}


def _safe(path: Any) -> bool:
    if not isinstance(path, str) or not path or path.startswith(("/", "~")) or "\\" in path:
        return False
    return all(part not in ("", ".", "..") for part in path.split("/")) and not any(ord(c) < 32 for c in path)


@dataclass(frozen=True)
class PathPolicy:
    """Allow-lists for reading and writing: exact paths, folder prefixes ending in `/`, or `*` for all.

    Fails closed: an empty list allows nothing, and a path that is not plain and workspace-relative is
    refused whatever the lists say.
    """

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()

    def allows(self, path: Any, *, writing: bool) -> bool:
        allowed = self.write if writing else (*self.read, *self.write)
        if path == "":  # the workspace root
            return "*" in allowed
        if not _safe(path):
            return False
        return any(
            rule == "*" or path == rule or (rule.endswith("/") and path.startswith(rule)) for rule in allowed
        )

    def refusal(self, spec: ToolSpec, args: dict[str, Any]) -> str | None:
        """Why this call is not allowed, or None when every path argument is allowed."""
        for name in spec.path_params:
            value = args.get(name, "" if spec.job == "list" else None)
            if not self.allows(value, writing=spec.writes):
                verb = "write" if spec.writes else "read"
                return f"refused: this agent may not {verb} {value!r}; allowed: {', '.join(self.write if spec.writes else (*self.read, *self.write)) or 'nothing'}"
        return None

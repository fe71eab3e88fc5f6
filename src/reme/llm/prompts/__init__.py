"""Agent prompts, kept as Markdown package data so they can be read and edited as text."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from string import Template


def render_prompt(name: str, variables: Mapping[str, object]) -> str:
    """The prompt `<name>.md` with `$variables` filled in (unknown placeholders are left as they are)."""
    text = resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")
    return Template(text).safe_substitute({k: str(v) for k, v in variables.items()})

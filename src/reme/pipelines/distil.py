"""One agent pass over one card, all or nothing.

The card is snapshotted before the agent runs; if the run fails the card is put back exactly as it
was and marked `pending: true`, so a later run picks it up and nothing is left half-written. On
success the front matter gets the chosen `name`/`description` (plus the caller's keys), the pending
mark is removed, and (unless told not to) the file is renamed after the name with inbound links retargeted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from reme.llm.prompts import render_prompt
from reme.llm.runner import AgentFailed, run_agent
from reme.llm.tools import PathPolicy
from reme.pipelines.calls import call, exists, load_text, save_text
from reme.pipelines.names import short_hash, slugify

if TYPE_CHECKING:
    from reme.app.application import Application

CARD_TOOLS = ("read", "write", "edit", "frontmatter_read", "frontmatter_update")


class CardSummary(BaseModel):
    """What the agent returns when the card is written."""

    name: str = Field(min_length=1, max_length=200, description="short specific title; also the file name")
    description: str = Field(min_length=1, max_length=500, description="one sentence: what the card holds")


class LLMUnavailable(RuntimeError):
    """No model for this role; the message names the missing setting."""


@dataclass
class Distilled:
    card_path: str
    summary: CardSummary
    usage: dict[str, int]


def usable_llm(app: Application, role: str) -> tuple[Any, Any]:
    """(component, settings) of the model for `role`; raise LLMUnavailable saying what to set or fix."""
    if "llm" not in app.components:
        raise LLMUnavailable("no LLM configured: the `llm` component is not enabled (components.llm)")
    llm = app.component("llm")
    try:
        missing = llm.missing(role)  # type: ignore[attr-defined]
        settings = llm.settings_for(role)  # type: ignore[attr-defined]
    except ValueError as invalid:
        raise LLMUnavailable(f"invalid LLM setting: {invalid} (see docs/llm.md)") from None
    if missing:
        raise LLMUnavailable(f"no LLM configured: set {missing} (see docs/llm.md)")
    return llm, settings


def memory_llm(app: Application) -> tuple[Any, Any]:
    """(component, settings) of the memory model; raise LLMUnavailable saying what is missing."""
    return usable_llm(app, "memory")


async def mark_pending(app: Application, card_path: str) -> None:
    await call(app, "frontmatter_update", path=card_path, metadata={"pending": True})


async def distil_card(
    app: Application,
    *,
    card_path: str,
    prompt: str,
    variables: Mapping[str, Any],
    front_matter: Mapping[str, Any],
    read_paths: tuple[str, ...] = (),
    rename: bool = True,
    add_usage: Callable[[dict[str, Any]], None],
) -> Distilled:
    """Run the agent on `card_path`; restore and mark pending on failure (AgentFailed is re-raised)."""
    llm, settings = memory_llm(app)
    variables = {**variables, "card_path": card_path}
    snapshot, _ = await load_text(app, card_path)
    try:
        result = await run_agent(
            model=llm.model("memory", variables),
            settings=settings,
            run_job=app.run,
            instructions=render_prompt(prompt, variables),
            prompt=render_prompt(f"{prompt}_task", variables),
            tools=CARD_TOOLS,
            policy=PathPolicy(read=read_paths, write=(card_path,)),
            output_type=CardSummary,
        )
    except AgentFailed as failure:
        add_usage(failure.usage)
        await restore(app, card_path, snapshot)
        raise
    add_usage(result.usage)
    summary: CardSummary = result.output
    await call(
        app,
        "frontmatter_update",
        path=card_path,
        metadata={"name": summary.name.strip(), "description": summary.description.strip(), **front_matter},
    )
    front = await call(app, "frontmatter_read", path=card_path)
    if "pending" in (front.metadata.get("front_matter") or {}):
        await call(app, "frontmatter_delete", path=card_path, keys=["pending"])
    if not rename:
        return Distilled(card_path, summary, result.usage)
    final_path = await rename_after(
        app, card_path, summary.name, salt=str(front_matter.get("session_id", card_path))
    )
    return Distilled(final_path, summary, result.usage)


async def restore(app: Application, card_path: str, snapshot: str) -> None:
    """Put the card back as it was before the agent ran, then mark it pending."""
    current, sha = await load_text(app, card_path)
    if current != snapshot:
        await save_text(app, card_path, snapshot, sha)
    await mark_pending(app, card_path)


async def rename_after(app: Application, card_path: str, title: str, *, salt: str) -> str:
    """Move the card to `<slug of title>.md` in its folder (retargeting links); keep it on clashes."""
    path = PurePosixPath(card_path)
    stem = slugify(title)
    if not stem or stem == path.stem:
        return card_path
    for candidate in (stem, f"{stem}-{short_hash(salt)}"):
        if candidate == path.stem:
            return card_path
        target = str(path.with_name(f"{candidate}.md"))
        if not exists(app, target):
            await call(app, "move", src=card_path, dst=target)
            return target
    return card_path

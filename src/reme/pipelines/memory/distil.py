"""One agent pass over one card, all or nothing.

The card is snapshotted before the agent runs; if the run fails the card is put back exactly as it
was and marked `pending: true`, so a later run picks it up and nothing is left half-written. On
success the front matter gets the chosen `name`/`description` (plus the caller's keys), the pending
mark is removed, and (unless told not to) the file is renamed after the name with inbound links retargeted.

No secret the model writes reaches the disk (docs/spec.md §14): what a tool call would write is
redacted before the job runs, and the card after every write, so neither the card nor an earlier
version `write` keeps of it (`journal/replaced/`) ever holds one, whatever the prompt told the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, Field

from reme.jsontypes import JSONValue
from reme.llm.prompts import render_prompt
from reme.llm.runner import AgentFailed, RunJob, run_agent
from reme.llm.tools import PathPolicy
from reme.pipelines.capture.redaction import redact, redact_note, redact_value
from reme.pipelines.memory.card_names import short_hash, slugify
from reme.pipelines.outcome import AddUsage
from reme.pipelines.port import MemoryPort

CARD_TOOLS = ("read", "write", "edit", "frontmatter_read", "frontmatter_update")
WRITING_TOOLS = frozenset({"write", "edit", "frontmatter_update"})
KEPT_AS_GIVEN = frozenset({"path", "old"})  # where to write, and what `edit` looks for in the (clean) card


class CardSummary(BaseModel):
    """What the agent returns when the card is written."""

    name: str = Field(min_length=1, max_length=200, description="short specific title; also the file name")
    description: str = Field(min_length=1, max_length=500, description="one sentence: what the card holds")


@dataclass
class Distilled:
    card_path: str
    summary: CardSummary
    usage: dict[str, int]


async def mark_pending(port: MemoryPort, card_path: str) -> None:
    await port.update_front_matter(card_path, {"pending": True})


async def distil_card(
    port: MemoryPort,
    *,
    card_path: str,
    prompt: str,
    variables: Mapping[str, str | int],
    front_matter: Mapping[str, JSONValue],
    read_paths: tuple[str, ...] = (),
    rename: bool = True,
    add_usage: AddUsage,
) -> Distilled:
    """Run the agent on `card_path`; restore and mark pending on failure (AgentFailed is re-raised)."""
    handle = port.model("memory")
    variables = {**variables, "card_path": card_path}
    before = await port.load(card_path)
    snapshot = before.content if before else ""
    await redact_card(port, card_path)  # a secret already there would be kept by the agent's first `write`
    try:
        result = await run_agent(
            model=handle.build(variables),
            settings=handle.settings,
            run_job=card_guard(port, card_path),
            instructions=render_prompt(prompt, variables),
            prompt=render_prompt(f"{prompt}_task", variables),
            tools=port.agent_tools(CARD_TOOLS),
            policy=PathPolicy(read=read_paths, write=(card_path,)),
            output_type=CardSummary,
        )
    except AgentFailed as failure:
        add_usage(failure.usage)
        await restore(port, card_path, snapshot)
        raise
    add_usage(result.usage)
    summary = CardSummary(name=redact(result.output.name), description=redact(result.output.description))
    front = await port.update_front_matter(
        card_path, {"name": summary.name.strip(), "description": summary.description.strip(), **front_matter}
    )
    if "pending" in front:
        await port.delete_front_matter(card_path, ["pending"])
    if not rename:
        return Distilled(card_path, summary, result.usage)
    final_path = await rename_after(
        port, card_path, summary.name, salt=str(front_matter.get("session_id", card_path))
    )
    return Distilled(final_path, summary, result.usage)


def redacted_args(args: Mapping[str, JSONValue]) -> dict[str, JSONValue]:
    """A writing tool call's arguments with every text it would write redacted (`content` as a note,
    so that its front matter stays valid)."""
    return {
        key: value
        if key in KEPT_AS_GIVEN
        else redact_note(value)
        if key == "content" and isinstance(value, str)
        else redact_value(value)
        for key, value in args.items()
    }


def card_guard(port: MemoryPort, card_path: str) -> RunJob:
    """The agent's tool calls with secrets kept off disk: a writing call's text is redacted before it
    lands, and the card after it (a secret pieced together by several edits, each too short to tell)."""

    async def run(job: str, **args: JSONValue) -> Any:
        if job not in WRITING_TOOLS:
            return await port.run_job(job, **args)
        response = await port.run_job(job, **redacted_args(args))
        if response.success:
            await redact_card(port, card_path)
        return response

    return run


async def redact_card(port: MemoryPort, card_path: str) -> None:
    """Secrets in the card are replaced on disk (its front matter kept valid); `save` keeps no copy."""
    card = await port.load(card_path)
    if card is not None and (clean := redact_note(card.content)) != card.content:
        await port.save(card_path, clean, expected_sha256=card.sha256)


async def restore(port: MemoryPort, card_path: str, snapshot: str) -> None:
    """Put the card back as it was before the agent ran, then mark it pending."""
    current = await port.load(card_path)
    if (current.content if current else "") != snapshot:
        await port.save(card_path, snapshot, expected_sha256=current.sha256 if current else None)
    await mark_pending(port, card_path)


async def rename_after(port: MemoryPort, card_path: str, title: str, *, salt: str) -> str:
    """Move the card to `<slug of title>.md` in its folder (retargeting links); keep it on clashes."""
    path = PurePosixPath(card_path)
    stem = slugify(title)
    if not stem or stem == path.stem:
        return card_path
    for candidate in (stem, f"{stem}-{short_hash(salt)}"):
        if candidate == path.stem:
            return card_path
        target = str(path.with_name(f"{candidate}.md"))
        if not port.exists(target):
            await port.move(card_path, target)
            return target
    return card_path

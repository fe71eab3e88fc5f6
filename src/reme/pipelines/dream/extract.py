"""Dream phase 1 (docs/spec.md §12.2): one LLM call turns the changed daily material into validated units.

Validation is code, not prompt: evidence must be among the files the model was shown (others are
dropped), an unknown bucket becomes `unknown`, at most `max_units` are kept, and an empty list is a
valid outcome. An unusable reply — one that fails its schema, or a unit left citing no shown file —
is asked again exactly once with the reason; transport failures are not asked again here (the
client already retried them `max_retries` times).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace

from pydantic import BaseModel, Field

from reme.errors import ReMeError
from reme.llm.prompts import render_prompt
from reme.llm.runner import AgentFailed, run_agent
from reme.llm.tools import PathPolicy
from reme.pipelines.dream.material import Packed
from reme.pipelines.port import Models

UNKNOWN_BUCKET = "unknown"
ATTEMPTS = 2


class Unit(BaseModel):
    """One abstraction worth keeping, with the changed files that teach it."""

    name: str = Field(min_length=1, max_length=200, description="short title of the abstraction")
    summary: str = Field(min_length=1, max_length=4000, description="the abstraction in a few sentences")
    bucket: str = Field(min_length=1, max_length=80, description="one of the configured buckets")
    evidence_paths: list[str] = Field(min_length=1, max_length=50, description="changed files it comes from")


class Extraction(BaseModel):
    """The extraction reply: few, rich, orthogonal units; an empty list when nothing is worth keeping."""

    units: list[Unit] = Field(max_length=100)


@dataclass
class Extracted:
    units: list[Unit]
    usage: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what validation changed (dropped paths, buckets)


class ExtractionFailed(ReMeError):
    """Extraction gave no usable units; nothing may be checkpointed. `usage`: what the attempts cost."""

    def __init__(self, message: str, usage: dict[str, int]) -> None:
        super().__init__(message, {"usage": usage})
        self.usage = usage


def validate(
    reply: Extraction, shown: Collection[str], buckets: Collection[str], max_units: int
) -> tuple[list[Unit], list[str], str | None]:
    """(units, notes, problem): the reply made safe, or the reason it is unusable."""
    notes: list[str] = []
    units: list[Unit] = []
    for unit in reply.units[:max_units]:
        cited = [_plain(path) for path in unit.evidence_paths]
        kept = list(dict.fromkeys(path for path in cited if path in shown))
        dropped = [path for path in cited if path not in shown]
        if dropped:
            notes.append(
                f"unit {unit.name!r}: dropped evidence outside the changed files: {', '.join(dropped)}"
            )
        if not kept:
            return (
                [],
                notes,
                (
                    f"unit {unit.name!r} cites none of the changed files ({', '.join(cited)}); "
                    "evidence_paths must be paths shown under '=== <path> ==='"
                ),
            )
        bucket = unit.bucket.strip()
        if bucket not in buckets:
            notes.append(f"unit {unit.name!r}: bucket {bucket!r} is not configured; using {UNKNOWN_BUCKET!r}")
            bucket = UNKNOWN_BUCKET
        units.append(
            unit.model_copy(update={"name": unit.name.strip(), "bucket": bucket, "evidence_paths": kept})
        )
    if len(reply.units) > max_units:
        notes.append(f"{len(reply.units) - max_units} unit(s) beyond max_units {max_units} dropped")
    return units, notes, None


def _plain(path: str) -> str:
    """A cited path as written, without the wikilink brackets a model may add."""
    text = path.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2].split("|", 1)[0].split("#", 1)[0]
    return text.strip()


def _invalid_reply(failure: AgentFailed) -> bool:
    """Whether the model answered but unusably (asked again), as opposed to a transport failure."""
    from pydantic_ai.exceptions import UnexpectedModelBehavior

    return isinstance(failure.__cause__, UnexpectedModelBehavior)


async def extract(
    port: Models,
    material: Packed,
    *,
    buckets: Sequence[str],
    buckets_page: str,
    max_units: int,
    hint: str,
    add_usage: Callable[[dict[str, int]], None],
) -> Extracted:
    """Ask for units at most twice; raise `ExtractionFailed` naming the cause."""
    handle = port.model("memory")
    settings = replace(handle.settings, output_retries=0)  # the one retry is ours, with the reason
    variables = {
        "run": "extract",
        "buckets": buckets_page,
        "max_units": max_units,
        "hint": f"Hint from the caller: {hint}\n" if hint else "",
        "paths": "\n".join(f"- {path}" for path in material.shown),
    }
    instructions = render_prompt("auto_dream_extract", variables)
    usage: dict[str, int] = {}
    problem = ""
    for attempt in range(1, ATTEMPTS + 1):
        again = (
            f"\n\nYour previous reply was unusable: {problem}\nReply again, following the schema."
            if problem
            else ""
        )
        try:
            result = await run_agent(
                model=handle.build({**variables, "attempt": attempt}),
                settings=settings,
                run_job=port.run_job,
                instructions=instructions,
                prompt=f"Changed daily material:\n\n{material.text}{again}",
                tools=(),
                policy=PathPolicy(),
                output_type=Extraction,
            )
        except AgentFailed as failure:
            _add(usage, failure.usage)
            add_usage(failure.usage)
            if not _invalid_reply(failure):
                raise ExtractionFailed(f"extraction failed: {failure.message}", usage) from None
            problem = failure.message
            continue
        _add(usage, result.usage)
        add_usage(result.usage)
        units, notes, problem_found = validate(result.output, material.shown, buckets, max_units)
        if problem_found is None:
            return Extracted(units, usage, notes)
        problem = problem_found
    raise ExtractionFailed(
        f"extraction failed: the model's reply was unusable twice ({problem}); nothing was checkpointed",
        usage,
    )


def _add(total: dict[str, int], usage: dict[str, int]) -> None:
    for key, value in usage.items():
        total[key] = total.get(key, 0) + int(value)

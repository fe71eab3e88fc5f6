"""The model calls of proactive refresh: their reply schemas and a counted, bounded way to make them.

Every call is one model request (schema retries inside a run are off), so `llm_calls` counts what
was really asked. An unusable reply (a valid answer that does not fit the schema) may be asked again
only where the caller allows it — extract, once; transport retries stay in the provider client.
At most `MAX_CALLS` calls per run, whatever happens.

A verbose reply is not a failed run: every bound the schema shows the model is a cut, not a refusal
(`Cut`), and the found topics beyond `MAX_FOUND` are left out by the caller, which says so. Only a
runaway reply, more topics than the truth source ever holds, is unusable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from reme.errors import ReMeError
from reme.llm.prompts import render_prompt
from reme.llm.runner import AgentFailed, run_agent
from reme.llm.tools import PathPolicy
from reme.pipelines.outcome import AddUsage
from reme.pipelines.port import MemoryPort

MAX_CALLS = 4
MAX_FOUND = 30  # topics one extraction adds; the model is told, and the rest are left out (reported)
MAX_REPLY_TOPICS = 200  # as many as the truth source holds: more is a runaway reply, not a verbose one
Reply = TypeVar("Reply", bound=BaseModel)


@dataclass(frozen=True)
class Cut:
    """A bound shown to the model (`maxItems` / `maxLength`) that cuts a longer list or text instead of
    refusing the reply: one field too long must not throw away a run's work."""

    limit: int

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            lambda value: value[: self.limit], handler(source)
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        shown = handler(schema)
        shown["maxItems" if shown.get("type") == "array" else "maxLength"] = self.limit
        return shown


class FoundTopic(BaseModel):
    title: Annotated[
        str, Field(min_length=1, description="short, specific; in the material's language"), Cut(200)
    ]
    reason: Annotated[str, Field(description="why it is worth raising now, from the material"), Cut(1000)]
    kind: Literal["follow_up", "interest_extend"] = Field(
        description="follow_up: the user is in the middle of it; interest_extend: an interest worth extending"
    )
    confidence: float = Field(ge=0, le=1, description="how sure the material makes you that it matters")
    evidence_paths: Annotated[
        list[str], Field(description="paths of the material files that show it"), Cut(20)
    ]
    known_id: Annotated[
        str, Field(default="", description="id of the open topic it continues, if any"), Cut(40)
    ]


class ResolvedTopic(BaseModel):
    id: Annotated[
        str, Field(description="id of an open topic the material shows finished or dropped"), Cut(40)
    ]
    reason: Annotated[str, Field(default=""), Cut(500)]


class ExtractReply(BaseModel):
    """New and continued topics, and open topics the material shows resolved."""

    # the model is shown MAX_FOUND; the caller keeps the MAX_FOUND most confident and reports the others
    topics: list[FoundTopic] = Field(max_length=MAX_REPLY_TOPICS, json_schema_extra={"maxItems": MAX_FOUND})
    resolved: Annotated[list[ResolvedTopic], Field(default_factory=list), Cut(MAX_FOUND)]


class PlanItem(BaseModel):
    topic_id: Annotated[str, Cut(40)]
    push: bool = Field(default=True, description="false holds the topic back today")
    hold_reason: Annotated[str, Field(default=""), Cut(300)]
    scenario_type: Annotated[
        str, Field(description="resume_task, check_progress, suggest_next_step, share_resource, ..."), Cut(40)
    ]
    opener: Annotated[str, Field(description="a natural first sentence to raise it"), Cut(500)]
    next_action: Annotated[str, Field(description="the smallest concrete next step"), Cut(500)]
    preconditions: Annotated[list[str], Field(default_factory=list), Cut(10)]
    delivery: Annotated[str, Field(default="in_conversation"), Cut(40)]
    linked_memory: Annotated[
        list[str], Field(default_factory=list, description="paths of the workspace's Markdown notes"), Cut(10)
    ]
    why_now: Annotated[str, Field(default="", description="why raise it now"), Cut(300)]


class PlanReply(BaseModel):
    """How to raise each push candidate."""

    plans: Annotated[list[PlanItem], Cut(MAX_FOUND)]


class AgendaSlot(BaseModel):
    topic_id: Annotated[str, Cut(40)]
    order_reason: Annotated[str, Cut(300)]


class AgendaReply(BaseModel):
    """The candidates in the order to raise them."""

    order: Annotated[list[AgendaSlot], Cut(MAX_FOUND)]


class ModelCalls:
    """Counts and bounds the model calls of one run; usage goes to `add_usage` even when a call fails."""

    def __init__(self, port: MemoryPort, *, timeout: float, add_usage: AddUsage) -> None:
        self.port = port
        self.timeout = timeout
        self.add_usage = add_usage
        self.count = 0

    async def ask(
        self, stage: str, output_type: type[Reply], variables: Mapping[str, object], *, attempts: int = 1
    ) -> Reply:
        """One reply of `output_type` for the prompt `proactive_<stage>`; ReMeError when none is usable."""
        from pydantic_ai.exceptions import UnexpectedModelBehavior

        handle = self.port.model("memory")
        settings = replace(handle.settings.lowered(timeout=self.timeout), output_retries=0)
        variables = {**variables, "stage": stage}
        attempt = 0
        while True:
            attempt += 1
            if self.count >= MAX_CALLS:
                raise ReMeError(f"proactive {stage}: the run already made {MAX_CALLS} LLM calls")
            self.count += 1
            try:
                result = await run_agent(
                    model=handle.build(variables),
                    settings=settings,
                    run_job=self.port.run_job,
                    instructions=render_prompt("proactive", variables),
                    prompt=render_prompt(f"proactive_{stage}", variables),
                    tools=[],
                    policy=PathPolicy(),
                    output_type=output_type,
                )
            except AgentFailed as failure:
                self.add_usage(failure.usage)
                unusable = isinstance(failure.__cause__, UnexpectedModelBehavior)
                if unusable and attempt < attempts:
                    continue
                what = "an unusable reply" if unusable else "a failed call"
                tries = f" (asked {attempt} time(s))" if unusable else ""
                raise ReMeError(f"proactive {stage} failed: {what}{tries}: {failure.message}") from None
            self.add_usage(result.usage)
            return result.output

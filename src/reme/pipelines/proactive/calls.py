"""The model calls of proactive refresh: their reply schemas and a counted, bounded way to make them.

Every call is one model request (schema retries inside a run are off), so `llm_calls` counts what
was really asked. An unusable reply (a valid answer that does not fit the schema) may be asked again
only where the caller allows it — extract, once; transport retries stay in the provider client.
At most `MAX_CALLS` calls per run, whatever happens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Literal, TypeVar

from pydantic import BaseModel, Field

from reme.errors import ReMeError
from reme.llm.prompts import render_prompt
from reme.llm.runner import AgentFailed, run_agent
from reme.llm.tools import PathPolicy
from reme.pipelines.outcome import AddUsage
from reme.pipelines.port import MemoryPort

MAX_CALLS = 4
Reply = TypeVar("Reply", bound=BaseModel)


class FoundTopic(BaseModel):
    title: str = Field(
        min_length=1, max_length=200, description="short, specific; in the material's language"
    )
    reason: str = Field(max_length=1000, description="why it is worth raising now, from the material")
    kind: Literal["follow_up", "interest_extend"] = Field(
        description="follow_up: the user is in the middle of it; interest_extend: an interest worth extending"
    )
    confidence: float = Field(ge=0, le=1, description="how sure the material makes you that it matters")
    evidence_paths: list[str] = Field(max_length=20, description="paths of the material files that show it")
    known_id: str = Field(default="", max_length=40, description="id of the open topic it continues, if any")


class ResolvedTopic(BaseModel):
    id: str = Field(max_length=40, description="id of an open topic the material shows finished or dropped")
    reason: str = Field(default="", max_length=500)


class ExtractReply(BaseModel):
    """New and continued topics, and open topics the material shows resolved."""

    topics: list[FoundTopic] = Field(max_length=30)
    resolved: list[ResolvedTopic] = Field(default_factory=list, max_length=30)


class PlanItem(BaseModel):
    topic_id: str = Field(max_length=40)
    push: bool = Field(default=True, description="false holds the topic back today")
    hold_reason: str = Field(default="", max_length=300)
    scenario_type: str = Field(
        max_length=40, description="resume_task, check_progress, suggest_next_step, share_resource, ..."
    )
    opener: str = Field(max_length=500, description="a natural first sentence to raise it")
    next_action: str = Field(max_length=500, description="the smallest concrete next step")
    preconditions: list[str] = Field(default_factory=list, max_length=10)
    delivery: str = Field(default="in_conversation", max_length=40)
    linked_memory: list[str] = Field(default_factory=list, max_length=10, description="workspace paths")
    why_now: str = Field(default="", max_length=300, description="why raise it now")


class PlanReply(BaseModel):
    """How to raise each push candidate."""

    plans: list[PlanItem] = Field(max_length=30)


class AgendaSlot(BaseModel):
    topic_id: str = Field(max_length=40)
    order_reason: str = Field(max_length=300)


class AgendaReply(BaseModel):
    """The candidates in the order to raise them."""

    order: list[AgendaSlot] = Field(max_length=30)


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

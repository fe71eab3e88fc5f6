"""The scripted test double: deterministic turns through pydantic-ai's real agent loop."""

from __future__ import annotations

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent

from reme.llm.testing.scripted import ScriptExhausted, fill, scripted_model


class Title(BaseModel):
    name: str


def test_fill_substitutes_nested_placeholders() -> None:
    value = {"path": "$card_path", "list": ["${date}/x", 3], "keep": "$unknown"}
    assert fill(value, {"card_path": "daily/a.md", "date": "2026-06-01"}) == {
        "path": "daily/a.md",
        "list": ["2026-06-01/x", 3],
        "keep": "$unknown",
    }


async def test_tool_calls_then_structured_output() -> None:
    seen: list[str] = []
    agent = Agent(
        scripted_model(
            [{"tool": "note", "args": {"text": "$who"}}, {"output": {"name": "for $who"}}], {"who": "Ana"}
        ),
        output_type=Title,
    )

    @agent.tool_plain
    def note(text: str) -> str:
        seen.append(text)
        return "noted"

    result = await agent.run("go")
    assert result.output == Title(name="for Ana") and seen == ["Ana"]
    assert result.usage.requests == 2


async def test_every_run_restarts_the_script() -> None:
    agent = Agent(scripted_model([{"text": "one"}]))
    assert [(await agent.run("a")).output, (await agent.run("b")).output] == ["one", "one"]


async def test_running_past_the_script_fails_loudly() -> None:
    agent = Agent(scripted_model([{"tool": "missing_tool", "args": {}}]))
    with pytest.raises(ScriptExhausted, match="1 turn"):
        await agent.run("go")


async def test_streamed_text_comes_in_pieces() -> None:
    agent = Agent(scripted_model([{"text": "a fairly long answer that needs several chunks"}]))
    async with agent.run_stream("go") as stream:
        pieces = [piece async for piece in stream.stream_text(delta=True, debounce_by=None)]
    assert len(pieces) > 1 and "".join(pieces) == "a fairly long answer that needs several chunks"

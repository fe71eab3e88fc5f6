"""A scripted chat model: replays a fixed list of turns through pydantic-ai's real agent loop.

Each agent run starts the script from its first turn; turn *n* answers the model request that
follows *n* earlier model responses, so a run is deterministic whatever the tools return. Turns:

- `{"tool": "write", "args": {...}}` or `{"tools": [{"tool": ..., "args": ...}, ...]}`: tool calls;
- `{"text": "..."}`: a plain text reply (for a structured run this is a reply ignoring the schema);
- `{"output": {...}}`: the final structured result (or its JSON as text for a text run).

String values may use `$name` / `${name}` placeholders filled from the run's prompt variables
(`card_path`, `date`, ...). Running past the end of the script fails the run loudly.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from string import Template
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel


class ScriptExhausted(RuntimeError):
    """The model was asked for more turns than the script has."""


def fill(value: Any, variables: Mapping[str, Any]) -> Any:
    """Substitute `$name` placeholders in every string of a nested value."""
    if isinstance(value, str):
        return Template(value).safe_substitute({k: str(v) for k, v in variables.items()})
    if isinstance(value, list):
        return [fill(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, variables) for k, v in value.items()}
    return value


def _turn_index(messages: list[ModelMessage]) -> int:
    from pydantic_ai.messages import ModelResponse

    return sum(isinstance(m, ModelResponse) for m in messages)


def _calls(turn: Mapping[str, Any], info: AgentInfo) -> list[tuple[str, dict[str, Any]]]:
    """Tool calls of a turn as (tool name, arguments); `output` becomes a call of the output tool."""
    if "tool" in turn:
        return [(turn["tool"], dict(turn.get("args") or {}))]
    if "tools" in turn:
        return [(c["tool"], dict(c.get("args") or {})) for c in turn["tools"]]
    if "output" in turn and info.output_tools:
        return [(info.output_tools[0].name, dict(turn["output"]))]
    return []


def _text(turn: Mapping[str, Any]) -> str:
    if "text" in turn:
        return str(turn["text"])
    if "output" in turn:
        return json.dumps(turn["output"], ensure_ascii=False)
    raise ValueError(f"scripted turn has none of tool/tools/text/output: {dict(turn)!r}")


def scripted_model(
    script: Sequence[Mapping[str, Any]], variables: Mapping[str, Any] | None = None
) -> FunctionModel:
    """A FunctionModel (plain and streamed) that plays `script` with `variables` filled in."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    turns = [fill(dict(t), variables or {}) for t in script]

    def next_turn(messages: list[ModelMessage]) -> Mapping[str, Any]:
        index = _turn_index(messages)
        if index >= len(turns):
            raise ScriptExhausted(
                f"scripted model: the script has {len(turns)} turn(s), request {index + 1} asked"
            )
        return turns[index]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = next_turn(messages)
        calls = _calls(turn, info)
        if calls:
            return ModelResponse(parts=[ToolCallPart(name, args) for name, args in calls])
        return ModelResponse(parts=[TextPart(_text(turn))])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        turn = next_turn(messages)
        calls = _calls(turn, info)
        if calls:
            yield {i: DeltaToolCall(name, json.dumps(args)) for i, (name, args) in enumerate(calls)}
            return
        text = _text(turn)
        for start in range(0, len(text), 16):
            yield text[start : start + 16]

    return FunctionModel(respond, stream_function=stream, model_name="scripted")

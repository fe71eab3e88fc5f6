"""A scripted chat model: replays a fixed list of turns through pydantic-ai's real agent loop.

Each agent run starts the script from its first turn; turn *n* answers the model request that
follows *n* earlier model responses, so a run is deterministic whatever the tools return. Turns:

- `{"tool": "write", "args": {...}}` or `{"tools": [{"tool": ..., "args": ...}, ...]}`: tool calls;
- `{"text": "..."}`: a plain text reply (for a structured run this is a reply ignoring the schema);
- `{"output": {...}}`: the final structured result (or its JSON as text for a text run).

String values may use `$name` / `${name}` placeholders filled from the run's prompt variables
(`card_path`, `date`, ...). Running past the end of the script fails the run loudly.

A pipeline with several kinds of agent run (auto_dream: one extraction, one run per unit) is scripted
per run: a script made of `{"run": <glob>, "turns": [...]}` entries plays the turns of the first
entry whose glob matches the run's `run` variable (`extract`, `integrate:<unit name>`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from fnmatch import fnmatchcase
from string import Template
from typing import TYPE_CHECKING

from reme.jsontypes import JSONObject, JSONValue

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel


class ScriptExhausted(RuntimeError):
    """The model was asked for more turns than the script has."""


Turn = Mapping[str, JSONValue]


def fill(value: JSONValue, variables: Mapping[str, object]) -> JSONValue:
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


def _object(value: JSONValue, what: str) -> JSONObject:
    """`value` as a JSON object (absent = empty); anything else is a malformed script."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"scripted turn: {what} must be an object, not {value!r}")
    return value


def _call(turn: Turn) -> tuple[str, JSONObject]:
    return str(turn["tool"]), _object(turn.get("args"), "args")


def _calls(turn: Turn, info: AgentInfo) -> list[tuple[str, JSONObject]]:
    """Tool calls of a turn as (tool name, arguments); `output` becomes a call of the output tool."""
    if "tool" in turn:
        return [_call(turn)]
    if "tools" in turn:
        calls = turn["tools"]
        if not isinstance(calls, list):
            raise ValueError(f"scripted turn: tools must be a list, not {calls!r}")
        return [_call(_object(c, "a tools entry")) for c in calls]
    if "output" in turn and info.output_tools:
        return [(info.output_tools[0].name, _object(turn["output"], "output"))]
    return []


def _text(turn: Turn) -> str:
    if "text" in turn:
        return str(turn["text"])
    if "output" in turn:
        return json.dumps(turn["output"], ensure_ascii=False)
    raise ValueError(f"scripted turn has none of tool/tools/text/output: {dict(turn)!r}")


def select_turns(script: Sequence[Turn], variables: Mapping[str, object]) -> list[Turn] | None:
    """The turns this run plays: the whole script, or the first `run` entry matching `variables["run"]`."""
    if not script or not all("run" in entry for entry in script):
        return list(script)
    run = str(variables.get("run", ""))
    for entry in script:
        if fnmatchcase(run, str(entry["run"])):
            turns = entry.get("turns") or []
            if not isinstance(turns, list):
                raise ValueError(f"scripted run {entry['run']!r}: turns must be a list")
            return [_object(turn, "a turn") for turn in turns]
    return None


def scripted_model(script: Sequence[Turn], variables: Mapping[str, object] | None = None) -> FunctionModel:
    """A FunctionModel (plain and streamed) that plays `script` with `variables` filled in."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    variables = variables or {}
    selected = select_turns(script, variables)
    turns = [_object(fill(dict(t), variables), "a turn") for t in selected or ()]

    def next_turn(messages: list[ModelMessage]) -> Turn:
        if selected is None:
            raise ScriptExhausted(f"scripted model: no scripted run matches run {variables.get('run', '')!r}")
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

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


def select_turns(
    script: Sequence[Mapping[str, Any]], variables: Mapping[str, Any]
) -> list[Mapping[str, Any]] | None:
    """The turns this run plays: the whole script, or the first `run` entry matching `variables["run"]`."""
    if not script or not all("run" in entry for entry in script):
        return list(script)
    run = str(variables.get("run", ""))
    for entry in script:
        if fnmatchcase(run, str(entry["run"])):
            return list(entry.get("turns") or [])
    return None


def scripted_model(
    script: Sequence[Mapping[str, Any]], variables: Mapping[str, Any] | None = None
) -> FunctionModel:
    """A FunctionModel (plain and streamed) that plays `script` with `variables` filled in."""
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    variables = variables or {}
    selected = select_turns(script, variables)
    turns = [fill(dict(t), variables) for t in selected or ()]

    def next_turn(messages: list[ModelMessage]) -> Mapping[str, Any]:
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

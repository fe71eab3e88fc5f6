"""chat: a read-only agent answering from the workspace, streaming its answer and tool calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reme.jsontypes import JSONObject
from reme.llm.prompts import render_prompt
from reme.llm.runner import AgentFailed, OnEvent, run_agent
from reme.llm.tools import PathPolicy
from reme.pipelines.capture.messages import message_text
from reme.pipelines.outcome import AddUsage
from reme.pipelines.port import MemoryPort

CHAT_TOOLS = ("search", "read", "list", "frontmatter_read", "daily_list")
READ_ANYTHING = PathPolicy(read=("*",), write=())


@dataclass
class ChatAnswer:
    text: str
    sources: list[str]
    tool_calls: list[JSONObject]  # {tool, args, success} per call, as the response shows them


MAX_HISTORY_CHARS = 64_000  # earlier turns' text sent with a question


def render_question(query: str, history: Sequence[Mapping[str, object]]) -> str:
    """The user prompt: earlier turns of the conversation (if any), then the question.

    Turns may use OpenAI/Anthropic content blocks; only their text reaches the model (no base64);
    more than MAX_HISTORY_CHARS of it is refused before any model call.
    """
    turns = []
    size = 0
    for index, turn in enumerate(history):
        try:
            text = message_text(turn)
        except ValueError as exc:
            raise ValueError(f"history[{index}]: {exc}") from None
        size += len(text)
        if size > MAX_HISTORY_CHARS:
            raise ValueError(
                f"history holds more than {MAX_HISTORY_CHARS} characters of text; send the last turns only"
            )
        if text:
            turns.append(f"{turn.get('role', 'user')}: {text}")
    if not turns:
        return query
    return "Earlier in this conversation:\n" + "\n".join(turns) + f"\n\nQuestion: {query}"


async def chat(
    port: MemoryPort,
    *,
    query: str,
    history: Sequence[Mapping[str, object]],
    emit: OnEvent,
    add_usage: AddUsage,
) -> ChatAnswer:
    if not query.strip():
        raise ValueError("query is empty: ask a question")
    handle = port.model("chat")
    variables = {"today": port.today().isoformat()}
    try:
        result = await run_agent(
            model=handle.build(variables),
            settings=handle.settings,
            run_job=port.run_job,
            instructions=render_prompt("chat", variables),
            prompt=render_question(query, history),
            tools=port.agent_tools(CHAT_TOOLS),
            policy=READ_ANYTHING,
            output_type=str,
            on_event=emit,
        )
    except AgentFailed as failure:
        add_usage(failure.usage)
        raise
    add_usage(result.usage)
    sources = list(
        dict.fromkeys(str(c.args["path"]) for c in result.tool_calls if c.tool == "read" and c.success)
    )
    calls: list[JSONObject] = [
        {"tool": c.tool, "args": c.args, "success": c.success} for c in result.tool_calls
    ]
    return ChatAnswer(str(result.output), sources, calls)

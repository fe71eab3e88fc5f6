"""chat: a read-only agent answering from the workspace, streaming its answer and tool calls.

The stream is the model's text as it comes; the job's result keeps two promises the stream cannot:
every `[[citation]]` left as a link names a note the run read or a search showed it (others are
reported in `unverified_citations` and unlinked), and the answer is at most MAX_ANSWER_CHARS long (`truncated`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from reme.jsontypes import JSONObject
from reme.llm.prompts import render_prompt
from reme.llm.runner import AgentFailed, OnEvent, RunJob, run_agent
from reme.llm.tools import PathPolicy
from reme.pipelines.capture.messages import message_text, truncate
from reme.pipelines.outcome import AddUsage
from reme.pipelines.port import MemoryPort
from reme.workspace.resolving import resolve
from reme.workspace.wikilinks import Link, parse_body_links

CHAT_TOOLS = ("search", "read", "list", "frontmatter_read", "daily_list")
READ_ANYTHING = PathPolicy(read=("*",), write=())
NOT_READ = "not read"
NO_SUCH_NOTE = "no such note"


@dataclass
class ChatAnswer:
    text: str  # bounded and with unverified citations unlinked; the stream carried the model's text
    sources: list[str]  # the notes the run read, as the workspace names them
    tool_calls: list[JSONObject]  # {tool, args, success} per call, as the response shows them
    unverified_citations: list[JSONObject]  # {target, reason}: cited but not read / naming no note
    truncated: bool


MAX_HISTORY_CHARS = 64_000  # earlier turns' text sent with a question
# The answer the job returns: four times what the default max_tokens (2048) lets a reply hold, and
# half the history cap, so the answer can go back as an earlier turn with room for the rest.
MAX_ANSWER_CHARS = 32_000
MAX_UNVERIFIED = 100  # citations listed in `unverified_citations` (all are unlinked in the answer)


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


def recording_reads(run_job: RunJob, read: dict[str, None], shown: set[str]) -> RunJob:
    """`run_job` that also notes each file a `read` returned, by the path the workspace resolved
    (`kyoto` asked, `daily/.../kyoto.md` read): the run's sources; and each file a `search` showed a
    passage of, which an answer may cite too."""

    async def run(job: str, **params: object) -> object:
        response = await run_job(job, **params)
        if not response.success:
            return response
        if job == "read" and isinstance(path := response.metadata.get("path"), str):
            read[path] = None
        elif job == "search":
            hits = response.metadata.get("results")
            shown.update(
                h["path"] for h in hits or () if isinstance(h, dict) and isinstance(h.get("path"), str)
            )
        return response

    return run


async def unverified_citations(
    port: MemoryPort, links: Sequence[Link], read: Collection[str]
) -> dict[str, str]:
    """Each cited target that names no note the run saw (`read`) -> why (`NOT_READ`, `NO_SUCH_NOTE`).

    A target resolves as every link of the workspace does (`resolving.resolve`): the path, the path
    with `.md`, or the one file ending like it. The workspace is listed only for a target that is not
    literally a path the run read.
    """
    targets = [target for target in dict.fromkeys(link.target for link in links) if target not in read]
    if not targets:
        return {}
    files = [entry.path for entry in await port.list_files("", recursive=True)]
    ending: dict[str, list[str]] = {}  # "b/c.md" and "c.md" -> ["a/b/c.md"]: `ends_with` as an index
    for path in files:
        parts = path.split("/")
        for first in range(1, len(parts)):
            ending.setdefault("/".join(parts[first:]), []).append(path)
    known = set(files)
    found: dict[str, str] = {}
    for target in targets:
        named = resolve(target, known.__contains__, lambda suffix: ending.get(suffix, []))
        if named not in read:
            found[target] = NO_SUCH_NOTE if named is None else NOT_READ
    return found


def mark_unverified(text: str, links: Sequence[Link], reasons: Mapping[str, str]) -> str:
    """`text` with each link to an unverified target replaced by its label and the reason, so that
    no link in the returned answer leads to a note the answer was not drawn from."""
    pieces: list[str] = []
    cursor = 0
    for link in links:
        if link.target not in reasons:
            continue
        start = text.rfind("[[", 0, link.start) - (1 if link.embed else 0)
        end = text.index("]]", link.end) + 2
        pieces += [text[cursor:start], f"{link.alias or link.target} [unverified: {reasons[link.target]}]"]
        cursor = end
    return "".join(pieces) + text[cursor:]


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
    read: dict[str, None] = {}  # insertion-ordered set of the notes read
    shown: set[str] = set()  # files search results showed a passage of
    try:
        result = await run_agent(
            model=handle.build(variables),
            settings=handle.settings,
            run_job=recording_reads(port.run_job, read, shown),
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
    calls: list[JSONObject] = [
        {"tool": c.tool, "args": c.args, "success": c.success} for c in result.tool_calls
    ]
    text = str(result.output)
    links = parse_body_links(text)
    reasons = await unverified_citations(port, links, read.keys() | shown)
    unverified: list[JSONObject] = [
        {"target": target[:300], "reason": why} for target, why in list(reasons.items())[:MAX_UNVERIFIED]
    ]
    checked = mark_unverified(text, links, reasons)
    bounded = truncate(checked, MAX_ANSWER_CHARS)
    return ChatAnswer(bounded, list(read), calls, unverified, truncated=len(checked) > MAX_ANSWER_CHARS)

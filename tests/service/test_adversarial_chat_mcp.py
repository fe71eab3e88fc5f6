"""Adversarial checks of the `chat` job and of the MCP network transports.

Chat: a scripted model that cites notes it never read (or that do not exist) and one that answers
at enormous length; what the job returns must keep its promises (every citation a note the answer
was drawn from, a bounded answer) while the stream stays as the model wrote it.

MCP: a real service (`run_service` in this event loop, the ASGI app behind uvicorn) refuses a
session past its limit with a clear error and takes new ones again once sessions close.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.pipelines.conftest import LLM_ENV, scripted

from reme import ReMe
from reme.app.config import load_config
from reme.pipelines.chat import MAX_ANSWER_CHARS
from reme.service.runner import run_service

READ = "daily/2026-06-01/kyoto.md"
UNREAD = "daily/2026-06-02/osaka.md"
MISSING = "daily/2026-06-03/invented.md"

MakeChat = Callable[[list[dict[str, Any]]], Any]


@pytest.fixture
async def make_chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[MakeChat]:
    """`await make_chat(script)`: a started app answering `chat` with this scripted model, two notes written."""
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    started: list[ReMe] = []

    async def make(script: list[dict[str, Any]]) -> ReMe:
        app = ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **scripted(script))
        await app.start()
        started.append(app)
        for path, text in ((READ, "- prefers window seats\n"), (UNREAD, "- prefers aisle seats\n")):
            wrote = await app.run("write", path=path, content=text, name=Path(path).stem)
            assert wrote.success, wrote.answer
        return app

    yield make
    for app in reversed(started):
        await app.close()


async def streamed(app: ReMe, **params: Any) -> tuple[str, dict[str, Any]]:
    """The text chunks joined, and the done chunk."""
    chunks = [chunk async for chunk in app.stream("chat", **params)]
    return "".join(c["text"] for c in chunks if c["type"] == "text"), chunks[-1]


# --- chat: citations --------------------------------------------------------------------------------


async def test_a_citation_of_a_note_not_read_or_not_existing_is_reported_and_unlinked(
    make_chat: MakeChat,
) -> None:
    """The answer cited `[[osaka]]` (never read) and `[[invented]]` (no such note) as if the answer
    came from them; `sources` listed only the read note, but nothing said the other citations were
    made up, and the returned text kept them as links a user would click."""
    answer = f"Window seats, see [[{READ}]]; also [[{UNREAD}]] and [[{MISSING}|my trip notes]]."
    app = await make_chat([{"tool": "read", "args": {"path": READ}}, {"text": answer}])

    text, done = await streamed(app, query="Which seats?")
    assert text == answer  # the stream is the model's text, as it came
    assert done["success"] is True
    assert done["metadata"]["sources"] == [READ]
    assert done["metadata"]["unverified_citations"] == [
        {"target": UNREAD, "reason": "not read"},
        {"target": MISSING, "reason": "no such note"},
    ]

    response = await app.run("chat", query="Which seats?")
    assert response.success
    assert response.metadata["sources"] == [READ]
    assert [c["target"] for c in response.metadata["unverified_citations"]] == [UNREAD, MISSING]
    assert response.answer == (
        f"Window seats, see [[{READ}]]; also {UNREAD} [unverified: not read] "
        "and my trip notes [unverified: no such note]."
    )


async def test_a_citation_spelled_short_counts_when_it_names_the_note_read(make_chat: MakeChat) -> None:
    """Links resolve as in the workspace: `[[kyoto]]`, `[[daily/2026-06-01/kyoto]]` and an anchor
    name the read note; a short name of an unread note does not become verified by it."""
    answer = "See [[kyoto]], [[daily/2026-06-01/kyoto#Seats]] and [[osaka]]. `[[in code]]` is no link."
    app = await make_chat([{"tool": "read", "args": {"path": "daily/2026-06-01/kyoto"}}, {"text": answer}])
    response = await app.run("chat", query="Which seats?")
    assert response.success
    assert response.metadata["sources"] == [READ]  # the file read, not the spelling asked for
    assert response.metadata["unverified_citations"] == [{"target": "osaka", "reason": "not read"}]
    assert response.answer.startswith("See [[kyoto]], [[daily/2026-06-01/kyoto#Seats]] and osaka [unverified")


async def test_a_note_a_search_showed_may_be_cited_but_is_no_source(make_chat: MakeChat) -> None:
    """An answer drawn from a search hit's passage cites a note the model saw without `read`: that
    citation stays a link; a note the search did not show is still unverified."""
    answer = f"Aisle seats [[{UNREAD}]]; see also [[{MISSING}]]."
    app = await make_chat([{"tool": "search", "args": {"query": "aisle seats"}}, {"text": answer}])
    response = await app.run("chat", query="Which seats?")
    assert response.success
    assert response.metadata["sources"] == []  # sources are what was read
    assert response.metadata["unverified_citations"] == [{"target": MISSING, "reason": "no such note"}]
    assert response.answer.startswith(f"Aisle seats [[{UNREAD}]]; see also")


async def test_a_failed_read_is_no_source_and_its_citation_is_unverified(make_chat: MakeChat) -> None:
    answer = f"From [[{MISSING}]]."
    app = await make_chat([{"tool": "read", "args": {"path": MISSING}}, {"text": answer}])
    response = await app.run("chat", query="What did I invent?")
    assert response.success
    assert response.metadata["sources"] == []
    assert response.metadata["unverified_citations"] == [{"target": MISSING, "reason": "no such note"}]


async def test_an_answer_citing_only_what_it_read_is_returned_unchanged(make_chat: MakeChat) -> None:
    answer = f"Window seats [[{READ}]]."
    app = await make_chat([{"tool": "read", "args": {"path": READ}}, {"text": answer}])
    response = await app.run("chat", query="Which seats?")
    assert response.answer == answer
    assert response.metadata["unverified_citations"] == [] and response.metadata["truncated"] is False


# --- chat: size of the answer -----------------------------------------------------------------------


async def test_an_enormous_answer_is_returned_bounded_and_says_so(make_chat: MakeChat) -> None:
    """A model told to write on (a large max_tokens) returned megabytes as the job's answer."""
    enormous = "window seats. " * (MAX_ANSWER_CHARS // 4)
    app = await make_chat([{"text": enormous}])

    text, done = await streamed(app, query="Tell me everything.")
    assert text == enormous  # streaming is untouched
    assert done["metadata"]["truncated"] is True

    response = await app.run("chat", query="Tell me everything.")
    assert response.success and response.metadata["truncated"] is True
    assert response.answer.startswith(enormous[:MAX_ANSWER_CHARS])
    assert response.answer.endswith(f"[truncated {len(enormous) - MAX_ANSWER_CHARS} characters]")
    assert len(response.answer) < MAX_ANSWER_CHARS + 100


# --- MCP sessions ------------------------------------------------------------------------------------

SERVICE_CONFIG = Path(__file__).with_name("service_test_config.yaml")
LIMIT = 2
ACCEPT = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


@pytest.fixture
async def mcp_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> AsyncIterator[str]:
    """An MCP service (transport: the test's parameter) with a session limit of LIMIT; yields its URL."""
    monkeypatch.setattr("reme.service.mcp.MAX_MCP_SESSIONS", LIMIT)
    overrides = {
        "workspace_dir": str(tmp_path / "ws"),
        "service.port": 0,
        "service.backend": "mcp",
        "service.transport": request.param,
    }
    stop = asyncio.Event()
    task = asyncio.create_task(run_service(load_config(SERVICE_CONFIG, overrides, load_env_file=False), stop))
    service_file = tmp_path / "ws" / "metadata" / "service.json"
    while not service_file.exists() and not task.done():
        await asyncio.sleep(0.01)
    if task.done():
        await task  # surfaces the start error
    info = json.loads(service_file.read_text())
    yield f"http://{info['host']}:{info['port']}{info['path']}"
    stop.set()
    await asyncio.wait_for(task, 30)


async def _until(check: Callable[[], Any]) -> Any:
    """Retry `check` (an awaitable factory) until it answers something true: a closed session frees
    its slot once the service has noticed, not at the instant the client lets go."""
    for _ in range(500):
        if found := await check():
            return found
        await asyncio.sleep(0.02)
    raise AssertionError("the service never got there")


@pytest.mark.slow
@pytest.mark.parametrize("mcp_service", ["streamable-http"], indirect=True)
async def test_streamable_http_refuses_a_session_past_the_limit_and_a_closed_one_frees_its_slot(
    mcp_service: str,
) -> None:
    """The SDK's default allowed 10 000 sessions (~380 MB held by whoever opens them)."""
    async with httpx.AsyncClient(timeout=30) as http:
        opened = [await http.post(mcp_service, json=INITIALIZE, headers=ACCEPT) for _ in range(LIMIT)]
        assert [reply.status_code for reply in opened] == [200] * LIMIT
        refused = await http.post(mcp_service, json=INITIALIZE, headers=ACCEPT)
        assert refused.status_code == 503
        assert "Too many open sessions" in refused.json()["error"]["message"]
        sessions = [reply.headers["mcp-session-id"] for reply in opened]
        still = await http.post(
            mcp_service,
            json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
            headers={**ACCEPT, "mcp-session-id": sessions[0], "mcp-protocol-version": "2025-06-18"},
        )
        assert still.status_code == 200  # the open sessions are served as before
        ended = await http.delete(mcp_service, headers={"mcp-session-id": sessions[0]})
        assert ended.status_code in (200, 204)

        async def reopened() -> bool:
            reply = await http.post(mcp_service, json=INITIALIZE, headers=ACCEPT)
            return reply.status_code == 200

        assert await _until(reopened)


async def _open_sse(http: httpx.AsyncClient, url: str, opened: list[Any]) -> httpx.Response:
    """GET the SSE endpoint; an accepted stream is kept open in `opened` (its session lives while it does)."""
    stream = http.stream("GET", url)
    response = await stream.__aenter__()
    if response.status_code == 200:
        opened.append(stream)
    else:
        await response.aread()
        await stream.__aexit__(None, None, None)
    return response


@pytest.mark.slow
@pytest.mark.parametrize("mcp_service", ["sse"], indirect=True)
async def test_sse_refuses_a_session_past_the_limit_and_a_closed_one_frees_its_slot(mcp_service: str) -> None:
    """SSE had no limit at all: every GET held a session (streams, tasks) for as long as it stayed open."""
    opened: list[Any] = []
    async with httpx.AsyncClient(timeout=30) as http:
        try:
            for _ in range(LIMIT):
                assert (await _open_sse(http, mcp_service, opened)).status_code == 200
            refused = await _open_sse(http, mcp_service, opened)
            assert refused.status_code == 503
            message = refused.json()["answer"]
            assert f"{LIMIT} MCP sessions are open" in message and "close one" in message
            await opened.pop().__aexit__(None, None, None)

            async def reopened() -> bool:
                return (await _open_sse(http, mcp_service, opened)).status_code == 200

            assert await _until(reopened)
        finally:
            for stream in opened:
                await stream.__aexit__(None, None, None)


async def test_the_list_of_unverified_citations_is_bounded(make_chat: MakeChat) -> None:
    """A hostile answer citing thousands of made-up notes: every one is unlinked, the list is bounded."""
    from reme.pipelines.chat import MAX_UNVERIFIED

    answer = " ".join(f"[[made-up-{n}]]" for n in range(MAX_UNVERIFIED * 3))
    app = await make_chat([{"text": answer}])
    response = await app.run("chat", query="Everything?")
    assert response.success
    assert len(response.metadata["unverified_citations"]) == MAX_UNVERIFIED
    assert "[[" not in response.answer

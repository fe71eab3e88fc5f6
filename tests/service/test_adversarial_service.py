"""Adversarial checks of the HTTP service, Studio's server side and the MCP server (in-process).

Each test asserts the behaviour the docs promise, for a case that once broke it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from reme import ReMe
from reme.service.http import build_http_app
from reme.service.mcp import build_mcp_server

SERVICE_CONFIG = Path(__file__).with_name("service_test_config.yaml")
TOKEN = "adversarial-token"


@pytest.fixture
async def system_app(tmp_path: Path) -> AsyncIterator[ReMe]:
    """An application with the system jobs only (fast to start), no cron."""
    async with ReMe(workspace_dir=tmp_path / "ws", config=SERVICE_CONFIG, **{"scheduler.cron": False}) as app:
        yield app


async def test_a_deeply_nested_workspace_header_is_refused_not_a_500(system_app: ReMe) -> None:
    """`X-ReMe-Workspace` holds a JSON string; a nested JSON array there made json.loads raise
    RecursionError (not ValueError) inside WorkspaceIdentity, and uvicorn answered a bare
    `500 Internal Server Error` (text/plain, traceback in the log) instead of a Response-shaped answer.
    docs: http.py — "Every answer, errors included, has the Response shape"; SPEC §14 bad input gets
    a clear error."""
    transport = httpx.ASGITransport(app=build_http_app(system_app), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        reply = await client.post("/version", json={}, headers={"x-reme-workspace": "[" * 5000})
    assert reply.status_code < 500, reply.text
    assert (
        "success" in reply.json()
    )  # Response-shaped: the unreadable header is read as no header, like "abc"


async def test_studio_login_does_not_buffer_an_unbounded_body(system_app: ReMe) -> None:
    """POST /studio/login is open without the token (it is how a browser logs in), and it read the
    whole body (`await request.body()`) before comparing it with MAX_LOGIN_BYTES (4096): an
    unauthenticated client on a token-protected, network-bound service could make it buffer any
    amount (300 MiB measured: RSS 74 → 300 MiB, then a 403). It should stop reading past the cap."""
    gate = build_http_app(system_app, token=TOKEN)
    offered = 64  # MiB on offer; only the first few KiB should ever be read
    consumed = 0
    chunk = b"token=" + b"a" * (2**20 - 6)

    async def receive() -> dict[str, Any]:
        nonlocal consumed
        if consumed >= offered * 2**20:
            return {"type": "http.request", "body": b"", "more_body": False}
        consumed += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/studio/login",
        "raw_path": b"/studio/login",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:2333"),
            (b"content-type", b"application/x-www-form-urlencoded"),
            (b"transfer-encoding", b"chunked"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 2333),
    }
    await gate(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    assert status in (400, 403, 413)
    assert consumed <= 2 * 2**20, f"read {consumed // 2**20} MiB of an oversized login body before refusing"


async def test_calling_the_stream_job_over_mcp_does_not_blame_a_read_only_profile(tmp_path: Path) -> None:
    """`chat` is a stream job, so it is not an MCP tool (SPEC §6.3: every servable *non-stream* job
    is a tool). On a server with the default `full` profile, calling it answered "tool 'chat'
    changes the memory and this server's profile is read_only" — false on both counts."""
    async with (
        ReMe(workspace_dir=tmp_path / "ws", **{"scheduler.cron": False}) as app,
        Client(build_mcp_server(app)) as client,
    ):
        assert app.jobs["chat"].kind == "stream"
        result = await client.call_tool("chat", {"query": "hello"})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error is True
    assert "read_only" not in text, text

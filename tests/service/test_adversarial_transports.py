"""Adversarial checks of the network surface: MCP over streamable HTTP and SSE (real `reme start`
services), the loopback guard, and the job parameter checks every interface shares.

Each test sends what a hostile or careless client would and asserts the documented rule: bad input
gets a clear refusal and changes nothing (SPEC §14), a service on loopback answers only this
machine's clients, and a request body is never buffered past its cap.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from reme import ReMe
from reme.app.jobs import ParameterError, build_job, validate_params
from reme.service.http import MAX_BODY_BYTES
from reme.service.mcp_client import call_tool
from reme.service.security import LoopbackGuard
from reme.service.service_info import ServiceInfo

TOKEN = "transport-token"
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


@pytest.fixture(scope="module")
def services(
    module_services: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory, service_config: Path
) -> Any:
    """Two loopback MCP services without a token (guarded) and one with a token (as behind a proxy)."""
    base = tmp_path_factory.mktemp("transports")
    common = (f"config={service_config}", "service.backend=mcp", "service.port=0")
    return {
        "streamable-http": module_services(base / "http", *common, "service.transport=streamable-http"),
        "sse": module_services(base / "sse", *common, "service.transport=sse"),
        "token": module_services(
            base / "token", *common, "service.transport=streamable-http", f"service.auth_token={TOKEN}"
        ),
    }


def _status_line(port: int, request: bytes) -> str:
    """Send raw HTTP bytes (headers a client library would normalise) and return the status line."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        reply = b""
        while b"\r\n" not in reply and (piece := sock.recv(4096)):
            reply += piece
    return reply.split(b"\r\n", 1)[0].decode()


def _info(service: Any) -> ServiceInfo:
    return ServiceInfo(
        host=service.info["host"],
        port=service.info["port"],
        backend="mcp",
        transport=service.info["transport"],
        path=service.info["path"],
    )


async def _sse_endpoint(http: httpx.AsyncClient, service: Any, opened: list[Any]) -> str:
    """Open an SSE session (kept open in `opened`) and return its message URL."""
    stream = http.stream("GET", f"{service.url}{service.info['path']}")
    response = await stream.__aenter__()
    lines = response.aiter_lines()
    opened.append((stream, lines))  # the session lives while its stream is read: keep both
    async for line in lines:
        if line.startswith("data:"):
            return f"{service.url}{line.removeprefix('data:').strip()}"
    raise AssertionError("the SSE stream named no message endpoint")


# --- request bodies over MCP --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
def test_a_declared_oversized_body_is_refused_before_it_is_sent(services: Any, transport: str) -> None:
    """The headers alone (Content-Length: 10 GiB) get the 413; nothing waits for the body."""
    service = services[transport]
    path = "/mcp" if transport == "streamable-http" else "/messages/?session_id=" + "0" * 32
    request = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{service.info['port']}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {10 * 2**30}\r\n\r\n{{"
    ).encode()
    assert " 413 " in _status_line(service.info["port"], request)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak memory is read from /proc")
async def test_a_streamed_body_is_not_buffered_past_the_cap(services: Any) -> None:
    """A chunked body (no Content-Length) four times the cap: refused, and the service's peak memory
    grows by far less than what was offered."""
    service = services["streamable-http"]
    offered = 4 * MAX_BODY_BYTES

    async def body() -> AsyncIterator[bytes]:
        yield b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"x": "'
        for _ in range(offered // 2**20):
            yield b"a" * 2**20

    before = _peak_rss(service.proc.pid)
    async with httpx.AsyncClient(timeout=60) as http:
        reply = await http.post(f"{service.url}/mcp", content=body(), headers=ACCEPT)
    assert reply.status_code == 413
    assert _peak_rss(service.proc.pid) - before < 2 * MAX_BODY_BYTES + 32 * 2**20


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_tool_call_as_large_as_the_http_api_takes_is_served_over_mcp(
    services: Any, transport: str
) -> None:
    """The file jobs take 16 MiB of text, and the HTTP API bodies up to MAX_BODY_BYTES; the MCP
    transports refused anything over the SDK's default 4 MiB ("Request body too large"), so
    `write` of a 5 MiB note worked over HTTP and failed over MCP."""
    service = services[transport]
    url = f"{service.url}{service.info['path']}"
    async with asyncio.timeout(60), Client(sse_client(url) if transport == "sse" else url) as client:
        result = await client.call_tool("list", {"path": "a" * (5 * 2**20)})  # over SSE a 413 hangs
    assert result.is_error is False


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_the_cli_says_a_request_is_too_large_not_that_no_service_answered(
    services: Any, transport: str
) -> None:
    """`reme <job>` against an MCP service with parameters past the cap said "no MCP service
    answered at ...: Server returned an error response" over streamable HTTP (the service did
    answer, with 413), and waited forever over SSE. It answers as the HTTP API does."""
    response = await call_tool(_info(services[transport]), "list", {"path": "a" * MAX_BODY_BYTES}, None)
    assert response["success"] is False
    assert f"larger than the {MAX_BODY_BYTES} bytes" in str(response["answer"])


@pytest.mark.slow
async def test_the_cli_reads_a_413_from_a_service_with_a_smaller_cap(
    services: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("reme.service.mcp_client.MAX_BODY_BYTES", 2 * MAX_BODY_BYTES)
    response = await call_tool(
        _info(services["streamable-http"]), "list", {"path": "a" * MAX_BODY_BYTES}, None
    )
    assert response["success"] is False and "larger than" in str(response["answer"])


# --- malformed JSON-RPC, content types, sessions --------------------------------------------------

BAD_BODIES = [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b"{not json",
    b"\xff\xfe",
    b"42",
    b"[]",
    b'{"jsonrpc": "2.0"}',
    b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "x"}',
]


@pytest.mark.slow
async def test_malformed_json_rpc_over_streamable_http_gets_a_json_rpc_error(services: Any) -> None:
    service = services["streamable-http"]
    async with httpx.AsyncClient(timeout=30) as http:
        for body in BAD_BODIES:
            reply = await http.post(f"{service.url}/mcp", content=body, headers=ACCEPT)
            assert reply.status_code == 400, (body[:20], reply.text)
            assert "error" in reply.json(), reply.text
    async with Client(f"{service.url}/mcp") as client:  # and it keeps serving
        assert (await client.call_tool("version", {})).is_error is False


@pytest.mark.slow
async def test_malformed_json_rpc_over_sse_is_refused_and_the_session_survives(services: Any) -> None:
    service = services["sse"]
    opened: list[Any] = []
    async with httpx.AsyncClient(timeout=30) as http:
        try:
            endpoint = await _sse_endpoint(http, service, opened)
            for body in BAD_BODIES:
                reply = await http.post(endpoint, content=body, headers={"content-type": "application/json"})
                assert reply.status_code == 400, (body[:20], reply.text)
            ping = await http.post(endpoint, json={"jsonrpc": "2.0", "id": 3, "method": "ping"})
            assert ping.status_code == 202
        finally:
            for stream, _lines in opened:
                await stream.__aexit__(None, None, None)


@pytest.mark.slow
@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
async def test_a_body_that_is_not_json_by_its_content_type_is_refused(
    services: Any, content_type: str
) -> None:
    """What an HTML form can send without a CORS preflight is never taken as an MCP message."""
    body = json.dumps(INITIALIZE)
    opened: list[Any] = []
    async with httpx.AsyncClient(timeout=30) as http:
        try:
            reply = await http.post(
                f"{services['streamable-http'].url}/mcp",
                content=body,
                headers={**ACCEPT, "content-type": content_type},
            )
            assert reply.status_code == 400
            endpoint = await _sse_endpoint(http, services["sse"], opened)
            reply = await http.post(endpoint, content=body, headers={"content-type": content_type})
            assert reply.status_code == 400
        finally:
            for stream, _lines in opened:
                await stream.__aexit__(None, None, None)


@pytest.mark.slow
async def test_many_concurrent_sessions_are_served_and_end_cleanly(services: Any) -> None:
    service = services["streamable-http"]
    url = f"{service.url}/mcp"
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=32)) as http:
        opened = await asyncio.gather(*(http.post(url, json=INITIALIZE, headers=ACCEPT) for _ in range(100)))
        assert {reply.status_code for reply in opened} == {200}
        ids = {reply.headers["mcp-session-id"] for reply in opened}
        assert len(ids) == 100
        ended = await asyncio.gather(*(http.delete(url, headers={"mcp-session-id": sid}) for sid in ids))
        assert {reply.status_code for reply in ended} <= {200, 204}
    async with Client(url) as client:
        assert (await client.call_tool("version", {})).is_error is False


@pytest.mark.slow
async def test_a_token_protected_loopback_service_serves_a_proxy_host(services: Any) -> None:
    """With a token, the token gate is the protection (security.LoopbackGuard: "e.g. behind a local
    reverse proxy that keeps its own Host header"); streamable HTTP on 127.0.0.1 answered such a
    request "421 Invalid Host header" through the SDK's own host check, SSE did not."""
    service = services["token"]
    headers = {**ACCEPT, "authorization": f"Bearer {TOKEN}", "host": "memory.example.org"}
    async with httpx.AsyncClient(timeout=30) as http:
        reply = await http.post(f"{service.url}/mcp", json=INITIALIZE, headers=headers)
        refused = await http.post(f"{service.url}/mcp", json=INITIALIZE, headers={**ACCEPT, "host": "x.org"})
    assert reply.status_code == 200, reply.text
    assert refused.status_code == 401


# --- the loopback guard ----------------------------------------------------------------------------


async def _guarded(headers: list[tuple[bytes, bytes]]) -> int:
    """The status LoopbackGuard answers a request with these headers (200: passed through)."""

    async def app(scope: Any, receive: Any, send: Callable[[Any], Awaitable[None]]) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/version", "headers": headers}
    await LoopbackGuard(app)(scope, receive, send)
    return int(sent[0]["status"])


FOREIGN_HOSTS = [
    "[::1]evil.com",
    "[::1]:2333evil.com",
    "127.0.0.1.evil.com",
    "localhost.evil.com",
    "127.0.0.1:80@evil.com",
    "localhost:2333@evil.com",
    "127.0.0.1:evil",
    "[::1%25eth0]:2333",
    "[::1%eth0]",
    "[fe80::1%lo]:2333",
    "localhost.",
    "127.0.0.1.",
    "evil.com:2333",
    "evil.com:80:127.0.0.1",
    "",
]


@pytest.mark.parametrize("host", FOREIGN_HOSTS)
async def test_the_loopback_guard_refuses_a_host_that_only_looks_local(host: str) -> None:
    """DNS rebinding shows as a foreign Host; only a genuine loopback name (and a numeric port) passes."""
    assert await _guarded([(b"host", host.encode())]) == 403


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:2333", "127.0.0.1", "localhost:2333", "LocalHost:2333", "[::1]:2333", "[::1]", "127.0.0.2"],
)
async def test_the_loopback_guard_admits_this_machine(host: str) -> None:
    assert await _guarded([(b"host", host.encode())]) == 200


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.com",
        "null",
        "http://127.0.0.1.evil.com",
        "http://[::1]evil.com",
        "http://localhost:1@evil.com",
    ],
)
async def test_the_loopback_guard_refuses_another_sites_origin(origin: str) -> None:
    headers = [(b"host", b"127.0.0.1:2333"), (b"origin", origin.encode())]
    assert await _guarded(headers) == 403
    assert await _guarded([(b"host", b"127.0.0.1:2333"), (b"origin", b"http://localhost:2333")]) == 200


@pytest.mark.parametrize("origin", ["http://localhost:5173", "http://127.0.0.1", "http://127.0.0.1:23330"])
async def test_a_page_of_another_local_server_is_a_web_page_too(origin: str) -> None:
    """Any page a local dev server shows (untrusted content on :5173) could post to the service."""
    assert await _guarded([(b"host", b"127.0.0.1:2333"), (b"origin", origin.encode())]) == 403
    assert await _guarded([(b"host", b"localhost"), (b"origin", b"http://127.0.0.1")]) == 200  # port 80 both


@pytest.mark.slow
@pytest.mark.parametrize("host", ["127.0.0.1:80@evil.com", "[::1]evil.com", "localhost.evil.com"])
def test_real_services_refuse_a_host_that_only_looks_local(
    http_service: Any, services: Any, host: str
) -> None:
    """Through uvicorn, as a forged request arrives: the HTTP job API and an MCP service alike."""
    for port, path in (
        (http_service.info["port"], "/version"),
        (services["streamable-http"].info["port"], "/mcp"),
    ):
        request = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
        assert " 403 " in _status_line(port, request.encode())


# --- parameters ------------------------------------------------------------------------------------


@pytest.fixture
async def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ReMe]:
    for name in ("LLM_API_KEY", "LLM_BASE_URL", "LLM_MODEL", "LLM_BACKEND", "LLM_MEMORY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **{"scheduler.cron": False}) as started:
        (started.workspace_dir / "notes").mkdir()
        (started.workspace_dir / "notes" / "a.md").write_text("met yesterday\n", encoding="utf-8")
        yield started


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.relative_to(root).as_posix().startswith("metadata")
    }


SHA = hashlib.sha256(b"met yesterday\n").hexdigest()


@pytest.mark.parametrize(
    ("job", "params", "name"),
    [
        ("proactive_resolve", {"topic_id": "0123456789ab\n"}, "topic_id"),
        (
            "save",
            {"path": "notes/a.md", "content": "new\n", "expected_sha256": SHA + "\n"},
            "expected_sha256",
        ),
        (
            "digest_edit",
            {"path": "digest/wiki/a.md", "old": "a", "new": "b", "expected_sha256": SHA + "\n"},
            "expected_sha256",
        ),
        ("restore", {"path": "notes/a.md", "rev": "HEAD", "expected_sha256": SHA + "\n"}, "expected_sha256"),
        ("sync_init", {"remote": "/nonexistent/remote", "branch": "main\n"}, "branch"),
    ],
)
async def test_a_trailing_newline_does_not_satisfy_an_anchored_pattern(
    app: ReMe, job: str, params: dict[str, Any], name: str
) -> None:
    """JSON Schema patterns are ECMA-262 regexes, whose `$` is the end of the text; Python's `re`
    also lets `$` match before a final newline, so `sha256sum | cut -c1-64` output with its newline
    passed `^[0-9a-f]{64}$` and `save` then reported a false "conflict: changed since it was loaded"."""
    before = _files(app.workspace_dir)
    response = await app.run(job, **params)
    assert not response.success
    assert f"parameter {name!r}" in response.answer and "does not match" in response.answer, response.answer
    assert _files(app.workspace_dir) == before


def test_the_end_anchor_rule_leaves_escaped_and_bracketed_dollars_alone() -> None:
    spec = build_job(
        "priced",
        {
            "parameters": {"properties": {"price": {"type": "string", "pattern": r"^\$[0-9]+[$]?$"}}},
            "steps": [{"backend": "version"}],
        },
    )
    assert validate_params(spec, {"price": "$12$"}) == {"price": "$12$"}
    assert validate_params(spec, {"price": "$12"}) == {"price": "$12"}
    with pytest.raises(ParameterError, match="does not match"):
        validate_params(spec, {"price": "$12\n"})


@pytest.mark.parametrize("path", [" ", "\t", " \n"])
async def test_a_blank_annotate_dates_path_is_refused_not_the_whole_workspace(app: ReMe, path: str) -> None:
    """`path=" "` was stripped to "" and annotated every note of the workspace; "." says that on purpose."""
    before = _files(app.workspace_dir)
    response = await app.run("annotate_dates", path=path, date="2026-06-01")
    assert not response.success
    assert "path" in response.answer and "blank" in response.answer, response.answer
    assert _files(app.workspace_dir) == before
    assert (await app.run("annotate_dates", path=".", date="2026-06-01", dry_run=True)).success

"""`call_tool` sorts what went wrong: a refusal (409), a transport failure, or a bug it must not hide."""

from __future__ import annotations

import httpx2
import mcp
import pytest

from reme.service.client import ServiceUnreachable
from reme.service.mcp_client import WrongWorkspace, call_tool
from reme.service.service_info import ServiceInfo

INFO = ServiceInfo(port=9, backend="mcp", transport="streamable-http", source="test")


def failing_client(error: BaseException) -> type:
    class Client:
        def __init__(self, connection: object) -> None:
            pass

        async def __aenter__(self) -> Client:
            raise error

        async def __aexit__(self, *exc: object) -> None:
            pass

    return Client


def status_error(status: int) -> httpx2.HTTPStatusError:
    request = httpx2.Request("GET", "http://127.0.0.1:9/sse")
    return httpx2.HTTPStatusError(
        "refused", request=request, response=httpx2.Response(status, request=request)
    )


async def test_a_409_is_a_wrong_workspace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp, "Client", failing_client(ExceptionGroup("sdk", [status_error(409)])))
    with pytest.raises(WrongWorkspace, match="serves another workspace than /ws; nothing was done"):
        await call_tool(INFO, "version", {}, None, "/ws")


async def test_a_transport_failure_is_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = httpx2.ConnectError("connection refused")
    monkeypatch.setattr(
        mcp, "Client", failing_client(ExceptionGroup("sdk", [ExceptionGroup("inner", [refused])]))
    )
    with pytest.raises(
        ServiceUnreachable, match="no MCP service answered at http://127.0.0.1:9/mcp .*ConnectError"
    ):
        await call_tool(INFO, "version", {}, None)


async def test_a_bug_is_not_reported_as_an_absent_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp, "Client", failing_client(ExceptionGroup("sdk", [KeyError("result")])))
    with pytest.raises(ExceptionGroup) as raised:
        await call_tool(INFO, "version", {}, None)
    assert isinstance(raised.value.exceptions[0], KeyError)


async def test_an_error_text_mentioning_409_is_not_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        mcp, "Client", failing_client(httpx2.ReadError("read 409 bytes, then the peer closed"))
    )
    with pytest.raises(ServiceUnreachable):
        await call_tool(INFO, "version", {}, None, "/ws")

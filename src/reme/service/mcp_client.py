"""Calling a job on a running MCP service (sse or streamable-http), for `reme <job>`.

Imported only when the discovered service is an MCP one: the SDK is heavy for a one-shot CLI.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus

from reme.errors import UserError
from reme.jsontypes import JSONObject
from reme.service import identity
from reme.service.client import ServiceUnreachable
from reme.service.service_info import MAX_BODY_BYTES, MCP_PATHS, ServiceInfo


class WrongWorkspace(UserError, ValueError):
    """The service serves another workspace than the one asked for (it answered 409); nothing ran."""


async def call_tool(
    info: ServiceInfo, job: str, params: Mapping[str, object], token: str | None, workspace: str | None = None
) -> JSONObject:
    """Call `job` as a tool and return a Response dict; with `workspace`, only on that workspace's service.

    Parameters past the service's body cap are answered here, as the HTTP API answers them (a 413
    in the Response shape): over SSE the SDK would wait forever for the answer to a refused message.
    """
    if len(json.dumps(params, ensure_ascii=False, default=str).encode()) > MAX_BODY_BYTES:
        return _too_large()
    import httpx2
    from mcp import Client
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    transport = info.transport or "streamable-http"
    if transport not in MCP_PATHS:
        raise ValueError(f"an MCP service on transport {transport!r} cannot be called over the network")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if workspace is not None:
        headers[identity.HEADER] = identity.encode(workspace)
    url = f"{info.url}{info.path or MCP_PATHS[transport]}"
    timeout = httpx2.Timeout(30.0, read=None)
    statuses: list[int] = []  # every HTTP status the service answered (a refusal is a 409)

    async def seen(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    try:
        async with httpx2.AsyncClient(
            headers=headers, timeout=timeout, event_hooks={"response": [seen]}
        ) as http:
            connection = (
                sse_client(url, headers=headers)
                if transport == "sse"
                else streamable_http_client(url, http_client=http)
            )
            async with Client(connection) as client:
                result = await client.call_tool(job, dict(params))
    except Exception as exc:  # the SDK wraps transport failures in (nested) exception groups: sorted below
        leaf = _leaf(exc)
        if HTTPStatus.REQUEST_ENTITY_TOO_LARGE in statuses:  # a service with a smaller cap
            return _too_large()
        if HTTPStatus.CONFLICT in statuses or _status(leaf) == HTTPStatus.CONFLICT:
            raise WrongWorkspace(
                f"the service at {url} serves another workspace than {workspace}; nothing was done"
            ) from None
        if not isinstance(leaf, (OSError, httpx2.HTTPError, MCPError)):
            raise  # not a transport failure: a bug, reported with its traceback
        raise ServiceUnreachable(
            f"no MCP service answered at {url} ({info.source}): {type(leaf).__name__}: {leaf}"
        ) from None
    structured = result.structured_content
    if isinstance(structured, dict) and "success" in structured:
        return structured
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    return {"success": not result.is_error, "answer": text, "metadata": {}}


def _too_large() -> JSONObject:
    return {
        "success": False,
        "answer": f"the request is larger than the {MAX_BODY_BYTES} bytes a service accepts; send less at once",
        "metadata": {},
    }


def _leaf(exc: BaseException) -> BaseException:
    """The first concrete error inside nested exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _status(exc: BaseException) -> int | None:
    """The HTTP status of a refused request (the sse transport raises it), else None."""
    import httpx2

    return exc.response.status_code if isinstance(exc, httpx2.HTTPStatusError) else None

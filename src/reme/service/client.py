"""A tiny stdlib HTTP client for calling jobs on a running service.

`http.client` instead of httpx keeps `reme <job>` start-up close to bare Python: the CLI is a
thin shell over one POST request, and importing a full HTTP stack would cost more than the call.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from reme.service.service_info import ServiceInfo


class ServiceUnreachable(Exception):
    """No service answered at the discovered address."""


@dataclass
class Reply:
    """What the service answered: a Response object, or a stream of SSE data chunks."""

    status: int
    response: dict[str, Any] | None = None
    chunks: Iterator[Any] | None = None


def _sse_data(lines: Iterator[bytes]) -> Iterator[Any]:
    """Yield the JSON value of every `data:` line of an event stream (one line per event)."""
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        try:
            yield json.loads(payload)
        except ValueError:
            yield payload


def call_job(
    info: ServiceInfo,
    job: str,
    params: dict[str, Any],
    token: str | None = None,
    connect_timeout: float = 5.0,
) -> Reply:
    """POST `params` to `/<job>`; raise ServiceUnreachable when nothing listens there."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    conn = http.client.HTTPConnection(info.host, info.port, timeout=connect_timeout)
    try:
        conn.connect()
    except OSError as exc:
        conn.close()
        raise ServiceUnreachable(f"no reme service reachable at {info.url} ({info.source}): {exc}") from None
    # Jobs may run for minutes (LLM pipelines): only connecting is bounded.
    if conn.sock is not None:
        conn.sock.settimeout(None)
    try:
        conn.request("POST", f"/{job}", body=json.dumps(params).encode("utf-8"), headers=headers)
        resp = conn.getresponse()
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        raise ServiceUnreachable(f"the service at {info.url} dropped the request: {exc}") from None
    if resp.getheader("Content-Type", "").startswith("text/event-stream"):
        return Reply(status=resp.status, chunks=_closing(_sse_data(iter(resp.readline, b"")), conn))
    body = resp.read()
    conn.close()
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if not isinstance(data, dict) or "success" not in data:
        text = body.decode("utf-8", "replace").strip()[:500]
        data = {
            "success": False,
            "answer": f"HTTP {resp.status} from {info.url}/{job}: {text}",
            "metadata": {},
        }
    return Reply(status=resp.status, response=data)


def _closing(chunks: Iterator[Any], conn: http.client.HTTPConnection) -> Iterator[Any]:
    try:
        yield from chunks
    finally:
        conn.close()

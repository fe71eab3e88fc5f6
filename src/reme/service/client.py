"""A minimal HTTP/1.1 client over a socket, for calling jobs on a running service.

`reme <job>` is one POST to a local service, so its cost is dominated by start-up: `http.client`
pulls in `email` and `ssl` (tens of milliseconds), httpx far more. Speaking just the subset of
HTTP the reme service answers with (Content-Length or chunked bodies, `Connection: close`) keeps
the CLI near bare Python start.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from io import BufferedReader

from reme.jsontypes import JSONObject, JSONValue
from reme.service import identity
from reme.service.service_info import ServiceInfo

CONNECT_TIMEOUT = 5.0


class ServiceUnreachable(Exception):
    """No service answered at the discovered address."""


class Reply:
    """What the service answered: a Response object, or (stream jobs) an iterator of SSE chunks,
    and the workspace the service says it serves (None from a service that does not say)."""

    def __init__(
        self,
        status: int,
        response: JSONObject | None = None,
        chunks: Iterator[JSONValue] | None = None,
        workspace: str | None = None,
    ) -> None:
        self.status = status
        self.response = response
        self.chunks = chunks
        self.workspace = workspace


def dig(value: JSONValue, *keys: str) -> JSONValue:
    """`value[k1][k2]...` through JSON objects; None where a key is missing or a value is no object."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _request_bytes(
    info: ServiceInfo, job: str, params: JSONObject, token: str | None, workspace: str | None
) -> bytes:
    body = json.dumps(params).encode("utf-8")
    host = f"[{info.host}]" if ":" in info.host else info.host
    lines = [
        f"POST /{_job_name(job)} HTTP/1.1",
        f"Host: {host}:{info.port}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    if token:
        if not token.isprintable():  # a line break would end the header and start another
            raise ValueError(
                "REME_API_TOKEN holds a line break or control character; set it to the token alone"
            )
        lines.append(f"Authorization: Bearer {token}")
    if workspace is not None:
        lines.append(f"{identity.HEADER}: {identity.encode(workspace)}")
    # UTF-8, as the service encodes its token: Latin-1 failed on any other text before sending
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body


def _read_head(stream: BufferedReader) -> tuple[int, dict[str, str]]:
    status_line = stream.readline().decode("latin-1")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP response: {status_line.strip()!r}")
    headers = {}
    while (line := stream.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


def _job_name(job: str) -> str:
    """`job` when it is a job name (ASCII letters, digits, `_`, `-`, `.`); a `?`, `/`, space or CRLF
    would change the request line (`version?x` ran `version`), so such a name is refused here."""
    if not (job.isascii() and job.replace("_", "a").replace("-", "a").replace(".", "a").isalnum()):
        raise ValueError(f"unknown job {job!r}: job names are ASCII letters, digits, '_', '-' and '.'")
    return job


def _body_pieces(stream: BufferedReader, headers: dict[str, str]) -> Iterator[bytes]:
    """The body as it arrives: chunked transfer decoded, else Content-Length, else until close.

    A body that ends early (the service died mid-answer) raises ConnectionError: a cut-off answer
    must not pass for a whole one."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            line = stream.readline()
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise ConnectionError(f"the answer ended early (next chunk header {line[:40]!r})") from None
            if not size:
                return
            yield _exactly(stream, size)
            stream.readline()
    if "content-length" in headers:
        yield _exactly(stream, int(headers["content-length"]))
        return
    while piece := stream.read1(65536):
        yield piece


def _exactly(stream: BufferedReader, size: int) -> bytes:
    data = stream.read(size)
    if len(data) < size:
        raise ConnectionError(f"the answer ended early, after {len(data)} of {size} bytes")
    return data


def _lines(pieces: Iterator[bytes]) -> Iterator[bytes]:
    pending = b""
    for piece in pieces:
        pending += piece
        *complete, pending = pending.split(b"\n")
        yield from complete
    if pending:
        yield pending


def _sse_data(lines: Iterator[bytes]) -> Iterator[JSONValue]:
    """The JSON value of every `data:` line of an event stream (reme sends one line per event)."""
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r")
        if line.startswith("data:"):
            payload = line[5:].strip()
            try:
                yield _json(payload)
            except ValueError:
                yield payload


def _json(text: str | bytes) -> JSONValue:
    """Parsed JSON text (what `json.loads` returns is JSON by construction)."""
    value: JSONValue = json.loads(text)
    return value


def client_token() -> str | None:
    """`REME_API_TOKEN` from the environment, else from a `.env` file here (as the service reads it).

    Surrounding whitespace (a newline from `echo token > file`) is dropped: a service refuses a
    token that has any, and a header could not carry it."""
    token = os.environ.get("REME_API_TOKEN")
    if token is None and os.path.isfile(".env"):
        from dotenv import dotenv_values

        token = dotenv_values(".env").get("REME_API_TOKEN")
    return (token or "").strip() or None


def call_job(
    info: ServiceInfo,
    job: str,
    params: JSONObject,
    token: str | None = None,
    workspace: str | None = None,
    timeout: float | None = None,
) -> Reply:
    """POST `params` to `/<job>`; raise ServiceUnreachable when nothing answers there.

    With `workspace` (an absolute path) the service runs the job only if it serves that folder.
    `timeout` bounds connecting and each read (hooks must not wait); None waits for the job.
    """
    try:
        sock = socket.create_connection((info.host, info.port), timeout=timeout or CONNECT_TIMEOUT)
    except OSError as exc:
        raise ServiceUnreachable(f"no reme service reachable at {info.url} ({info.source}): {exc}") from None
    sock.settimeout(timeout)  # None: jobs may run for minutes (LLM pipelines), only connecting is bounded
    stream = sock.makefile("rb")
    try:
        sock.sendall(_request_bytes(info, job, params, token, workspace))
        status, headers = _read_head(stream)
    except (OSError, ValueError) as exc:
        stream.close()
        sock.close()
        raise ServiceUnreachable(f"the service at {info.url} did not answer the request: {exc}") from None
    served = identity.decode(headers.get(identity.HEADER))
    if headers.get("content-type", "").startswith("text/event-stream"):
        chunks = _closing(_sse_data(_lines(_body_pieces(stream, headers))), stream, sock)
        return Reply(status, chunks=chunks, workspace=served)
    try:
        body = b"".join(_body_pieces(stream, headers))
    finally:
        stream.close()
        sock.close()
    try:
        data = _json(body)
    except ValueError:
        data = None
    if not isinstance(data, dict) or "success" not in data:
        text = body.decode("utf-8", "replace").strip()[:500]
        data = {"success": False, "answer": f"HTTP {status} from {info.url}/{job}: {text}", "metadata": {}}
    return Reply(status, response=data, workspace=served)


def _closing(chunks: Iterator[JSONValue], stream: BufferedReader, sock: socket.socket) -> Iterator[JSONValue]:
    try:
        yield from chunks
    finally:
        stream.close()
        sock.close()

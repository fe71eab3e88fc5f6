"""What goes over the wire to a model server: requests every mainstream server accepts, and which
error answers are final.

The OpenAI format allows `null` in several request fields (an assistant tool-call message's
`content`, `name`, `refusal`, ...), and the OpenAI SDK sends them; llama-cpp-python's server
validates `content` as a string and answers HTTP 500, so no tool-using run can finish there.
`compatible_body` sends `""` for a null `content` and leaves out every other null field, a form
OpenAI, Ollama, vLLM and llama.cpp all accept. To any endpoint but OpenAI's own, the output limit
goes as `max_tokens` (the field local servers read) instead of `max_completion_tokens`.

`deterministic` tells a refusal (a request the server will never accept: most 4xx, and a 500 whose
body is a validation error) from a passing fault; `CompatTransport` marks such answers
`x-should-retry: false`, which the OpenAI and Anthropic SDKs obey, so a refusal costs one request,
and logs the whole error body (the failure message quotes only its first line). So is an answer
asking to be retried after more than `MAX_RETRY_AFTER` (a quota reset hours away): the OpenAI SDK
gives up on it, the Anthropic SDK would sleep for as long as the server says.

A reply is bounded too: at most `MAX_REPLY_BYTES` (a misbehaving server may send 100 MB), and a
non-streamed one (OpenAI's chat completions, Anthropic's messages) must arrive whole within the
request's timeout, which httpx applies to each read only (a server trickling a byte a second would
never time out). What is logged never holds the request's key or URL credentials, even where the
server quotes them back. A non-streamed chat reply that is no
completion (an HTML page, `choices: []`, an `{"error": ...}` sent with HTTP 200) is a `BadReply`
quoting the server, not an `IndexError` deep in the client.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import TYPE_CHECKING

from reme.jsontypes import JSONObject, JSONValue
from reme.llm.settings import MIN_MASKED_KEY, shown_url

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger(__name__)

TRANSIENT_4XX = frozenset({408, 409, 425, 429})
MAX_LOGGED_BODY = 20_000
MAX_REPLY_BYTES = 10_000_000  # a reply of 4096 tokens is ~100 KB, streamed ~1 MB
MAX_QUOTED_CHARS = 300
MAX_RETRY_AFTER = 120.0  # seconds a retry may wait on a server's word (the OpenAI SDK's own cap)
# headers that describe the body as sent: a body read here is decoded, so a rebuilt response drops them
DECODED_HEADERS = ("content-encoding", "content-length", "transfer-encoding")
# What validation errors look like in the servers' own words (pydantic/FastAPI, Go, llama.cpp).
VALIDATION = re.compile(
    r"validation error|input should be|field required|extra inputs are not permitted|"
    r"'loc': \(|\(\s*'body'|literal_error|string_type|missing_argument|not supported|unsupported|"
    r"invalid (?:type|value|request)|cannot unmarshal|json: unknown field|unrecognized request argument|"
    r"assertionerror",
    re.IGNORECASE,
)
OPENAI_HOSTS = ("api.openai.com",)
MODEL_ROUTES = ("/chat/completions", "/messages")  # OpenAI-compatible and Anthropic model requests
SECRET_HEADERS = ("authorization", "x-api-key", "api-key")


def error_text(body: object) -> str:
    """The server's error message from a parsed or raw error body (`{"error": {"message": ...}}` and kin)."""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        text = body
        try:
            body = json.loads(text)
        except ValueError:
            return text.strip()
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            for key in ("message", "detail", "error"):
                if inner.get(key) not in (None, ""):
                    value = inner[key]
                    return value.strip() if isinstance(value, str) else json.dumps(value, default=str)
            return ""
        if isinstance(inner, str):
            return inner.strip()
        if "detail" in body:
            return json.dumps(body["detail"], default=str)
    return "" if body is None else str(body).strip()


def asks_feature(body: object) -> bool:
    """The request asks for something servers often lack: a forced tool choice or a JSON-schema format."""
    if not isinstance(body, dict):
        return False
    choice = body.get("tool_choice")
    forced = choice is not None and choice not in ("auto", "none")
    response_format = body.get("response_format")
    schema = isinstance(response_format, dict) and response_format.get("type") == "json_schema"
    return forced or schema


def deterministic(status: int, body: object, *, asked_feature: bool = False) -> bool:
    """True for an answer that the same request would get again: retrying it only costs time."""
    if status in TRANSIENT_4XX:
        return False
    if 400 <= status < 500 or status == 501:
        return True
    if status != 500:
        return False
    text = error_text(body)
    # llama-cpp-python answers a validation error, and a bare `assert` on a feature it lacks, as 500
    return bool(VALIDATION.search(text)) or (asked_feature and not text)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks a retry to wait (`retry-after-ms`, or `retry-after` in seconds or as a
    date), None when it names none or nothing readable."""
    try:
        if "retry-after-ms" in headers:
            return float(headers["retry-after-ms"]) / 1000
        if "retry-after" in headers:
            return float(headers["retry-after"])
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(headers.get("retry-after", ""))
    except (TypeError, ValueError, IndexError):
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() - datetime.now(UTC).timestamp()


def reason(body: object, limit: int = 600) -> str:
    """The server's reason on one line, bounded, leading with the error that names the cause.

    A validation error against a union (llama-cpp-python's message types) lists one error per
    member; those about the `role` literal or missing fields of the other members come first and
    bury the one that matters, so that one is put first.
    """
    lines = [line.strip() for line in error_text(body).splitlines() if line.strip()]
    if len(lines) > 2:
        specific = [line for line in lines[1:] if "literal_error" not in line and "'missing'" not in line]
        lines = lines[:1] + specific + [line for line in lines[1:] if line not in specific]
    text = " ".join(" ".join(lines).split())
    if not text:
        return "no reason given"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compatible_body(body: JSONObject, *, openai_host: bool) -> JSONObject:
    """The chat-completions request in the form the strictest servers accept (see module doc)."""
    fixed: JSONObject = {k: v for k, v in body.items() if v is not None}
    messages = fixed.get("messages")
    if isinstance(messages, list):
        fixed["messages"] = [_message(m) for m in messages]
    if not openai_host and "max_completion_tokens" in fixed:
        fixed.setdefault("max_tokens", fixed.pop("max_completion_tokens"))
    return fixed


def _message(message: JSONValue) -> JSONValue:
    if not isinstance(message, dict):
        return message
    fixed: JSONObject = {k: v for k, v in message.items() if v is not None}
    if "content" in message and message["content"] is None:
        fixed["content"] = ""
    if fixed.get("tool_calls") == []:
        del fixed["tool_calls"]
    return fixed


class BadReply(Exception):
    """An HTTP 200 answer that is no usable reply: too large, or no chat completion.

    Not an httpx error, so the SDK neither retries it nor replaces its text with "Connection error.".
    """


def completion_problem(content: bytes, *, streamed: bool = False) -> str | None:
    """Why a chat-completions body is no completion with a message, or None; the body of a streamed
    request is never one (it came instead of an event stream)."""
    try:
        body = json.loads(content)
    except ValueError:
        body = None
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    if not streamed and isinstance(first, dict) and isinstance(first.get("message"), dict):
        return None
    said = error_text(body) if isinstance(body, dict) else ""
    said = " ".join((said or content.decode("utf-8", "replace")).split())[:MAX_QUOTED_CHARS]
    what = "no event stream for a streamed request" if streamed else "no chat completion"
    return f"the server answered HTTP 200 with {what}: {said or 'an empty body'}"


async def _capped(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """`chunks`, failing past `MAX_REPLY_BYTES` instead of filling memory."""
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise BadReply(f"the server's reply passed {MAX_REPLY_BYTES:,} bytes")
        yield chunk


def _capped_stream(inner: httpx2.AsyncByteStream) -> httpx2.AsyncByteStream:
    """A streamed reply bounded by `_capped` (a class of httpx2's, which is imported only here)."""
    import httpx2

    class Capped(httpx2.AsyncByteStream):
        def __aiter__(self) -> AsyncIterator[bytes]:
            return _capped(inner)

        async def aclose(self) -> None:
            await inner.aclose()

    return Capped()


class CompatTransport:
    """Wraps an httpx(2) async transport: rewrites chat requests, marks final refusals, logs their
    bodies, bounds replies."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        asked = streamed = model = False
        if request.method == "POST" and request.url.path.endswith(MODEL_ROUTES):
            model = True
            request, asked, streamed = await self._rewritten(request)
        started = time.monotonic()
        response = await self.inner.handle_async_request(request)
        sse = "event-stream" in response.headers.get("content-type", "event-stream")  # none named: trusted
        if model and 200 <= response.status_code < 300 and not (streamed and sse):
            return await self._completion(request, response, started, streamed)
        if response.status_code < 400:
            return type(response)(
                response.status_code,
                headers=response.headers,
                stream=_capped_stream(response.stream),  # type: ignore[arg-type]  # an AsyncByteStream
                extensions=response.extensions,
                request=request,
            )
        content = await _whole(response, (request.extensions.get("timeout") or {}).get("read"), started)
        content = _masked(content, request)  # what the client, its errors and the log see
        wait = retry_after(response.headers)
        final = deterministic(response.status_code, content, asked_feature=asked) or (
            wait is not None and wait > MAX_RETRY_AFTER
        )
        log.warning(
            "model server %s answered HTTP %s (%s): %s",
            shown_url(str(request.url)),
            response.status_code,
            "final, not retried" if final else "may be retried",
            content[:MAX_LOGGED_BODY].decode("utf-8", "replace"),
        )
        dropped = (*DECODED_HEADERS, "x-should-retry")
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in dropped]
        if final:
            headers.append(("x-should-retry", "false"))
        return type(response)(
            response.status_code,
            headers=headers,
            content=content,
            extensions=response.extensions,
            request=request,
        )

    async def _completion(
        self, request: httpx2.Request, response: httpx2.Response, started: float, streamed: bool
    ) -> httpx2.Response:
        """A model reply that is no event stream, read whole (bounded); a chat reply is checked to be a
        completion (an Anthropic client reports a body it cannot read itself)."""
        read = (request.extensions.get("timeout") or {}).get("read")
        content = await _whole(response, read, started)
        chat = request.url.path.endswith("/chat/completions")
        problem = completion_problem(_masked(content, request), streamed=streamed) if chat else None
        if problem:
            said = _masked(content, request)[:MAX_LOGGED_BODY].decode("utf-8", "replace")
            log.warning("model server %s: %s", shown_url(str(request.url)), said)
            raise BadReply(problem)
        return type(response)(
            response.status_code,
            headers=[(k, v) for k, v in response.headers.multi_items() if k.lower() not in DECODED_HEADERS],
            content=content,
            extensions=response.extensions,
            request=request,
        )

    async def _rewritten(self, request: httpx2.Request) -> tuple[httpx2.Request, bool, bool]:
        """The request in its compatible form (chat completions only), whether it asks a feature,
        whether it streams."""
        raw = await request.aread()
        try:
            body = json.loads(raw)
        except ValueError:
            return request, False, False
        if not isinstance(body, dict):
            return request, False, False
        streamed = body.get("stream") is True
        if not request.url.path.endswith("/chat/completions"):
            return request, False, streamed
        fixed = compatible_body(body, openai_host=request.url.host in OPENAI_HOSTS)
        if fixed == body:
            return request, asks_feature(body), streamed
        content = json.dumps(fixed, ensure_ascii=False).encode()
        headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
        new = type(request)(
            request.method, request.url, headers=headers, content=content, extensions=request.extensions
        )
        return new, asks_feature(fixed), streamed

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> CompatTransport:
        await self.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self.inner.__aexit__(exc_type, exc, traceback)


def _masked(content: bytes, request: httpx2.Request) -> bytes:
    """`content` without the key the request carries (a server may quote it back in an error)."""
    for name in SECRET_HEADERS:
        key = request.headers.get(name, "").removeprefix("Bearer ").strip().encode()
        if len(key) >= MIN_MASKED_KEY:
            content = content.replace(key, b"***")
    return content


async def _whole(response: httpx2.Response, seconds: float | None, started: float) -> bytes:
    """A non-streamed reply's body, bounded in size and whole within `seconds` of `started` (else a
    read timeout, which the SDK retries as it does its own)."""
    import httpx2

    chunks: list[bytes] = []
    try:
        async with asyncio.timeout(None if seconds is None else seconds - (time.monotonic() - started)):
            async for chunk in _capped(response.aiter_bytes()):
                chunks.append(chunk)
    except TimeoutError:
        raise httpx2.ReadTimeout(f"the reply did not arrive whole within the {seconds:g} s timeout") from None
    finally:
        await response.aclose()
    return b"".join(chunks)


def install(http_client: object) -> None:
    """Put `CompatTransport` in front of an httpx(2) client's own transport (once)."""
    transport = getattr(http_client, "_transport", None)
    if transport is not None and not isinstance(transport, CompatTransport):
        setattr(http_client, "_transport", CompatTransport(transport))  # noqa: B010 (a private slot)

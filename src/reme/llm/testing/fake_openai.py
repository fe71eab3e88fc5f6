"""A local fake OpenAI-compatible chat-completions server for tests: real HTTP, scripted replies.

Each POST to `/v1/chat/completions` takes the next entry of the script (the last one repeats once
the script is used up) and answers it the way the OpenAI API would, streamed (SSE) when asked.
`GET /v1/models` lists the model; `/v1/messages` answers the same entries in the shape of Anthropic's Messages API (not streamed).
Entries:

- `{"text": "..."}`, `{"tool": name, "args": {...}}`, `{"tools": [...]}`: a normal reply;
- `{"output": {...}}`: a call of the request's output tool (`final_result...`) with these arguments;
- `{"fault": "slow", "seconds": 2.0}`: wait before answering (`then`: the entry to answer with);
- `{"fault": "http", "status": 429}`: an HTTP error (with `retry-after-ms` so clients retry fast);
- `{"fault": "bad_tool_json", "tool": "write"}`: a tool call whose arguments are not valid JSON;
- `{"fault": "ignore_schema"}`: calls the output tool with arguments that ignore its schema;
- `{"tools": [{"tool": name, "arguments": "<raw text>"}]}`: tool calls whose arguments are sent as
  given (not JSON, the wrong shape); `"finish_reason"` on any reply entry overrides its own;
- `{"fault": "http", "status": 429, "retry_after": "100000"}`: a `retry-after` header as given;
- `{"fault": "raw", "body": "...", "status": 200}`: exactly this body (not JSON, truncated, a
  completion of the wrong shape); `"cut": true` declares its length but closes after half of it,
  `"gzip": true` sends it gzip-compressed (`content-encoding: gzip`);
- `{"fault": "trickle", "seconds": 0.5, "then": {...}}`: the reply to `then`, one byte per `seconds`;
- `{"fault": "hang"}`: headers of a 200 answer, then nothing until the server closes;
- `{"fault": "huge", "bytes": 100_000_000}`: a 200 answer that long, sent without holding it;
  `"content_type"` on these three replaces `application/json` (`text/event-stream`: a stream).

`profile` makes it answer as a given real server does, request for request (`server_profiles`:
`openai`, `strict-openai`, `llama-cpp-chatml`, `llama-cpp-template`, `ollama`): what it refuses
and with which status and body, what its model can reply, whether streams carry usage, whether it
serves one request at a time. Besides, `refuse_tool_choice=True` answers HTTP 500 to any
`tool_choice` other than "auto", and `refuse_json_schema=True` answers HTTP 400 to a `json_schema`
response format. Refusals take no script entry. `statuses` has the HTTP status of each chat
request, in the order of `requests`.

`SilentServer` accepts connections but never answers: a server that hangs.

`POST /v1/embeddings` answers deterministic vectors (a hashed bag of the input's words, so texts
sharing words are close) of `embedding_dimension`, and takes no script entry; its faults are a
separate queue, `embedding_faults`, one entry per request until used up: `{"fault": "http",
"status": 429}`, `{"fault": "slow", "seconds": 2.0}`, `{"fault": "dimension", "dimension": 4}`
(vectors of the wrong size), `{"fault": "nan"}` (NaN in every vector), `{"fault": "fewer"}` (one
vector short), `{"fault": "reversed"}` (the data listed last first, each with its true `index`),
`{"fault": "same_index"}` (every item `index: 0`) or `{"fault": "raw", "body": "..."}`.
`embedding_reject` (a set of substrings) answers HTTP 400 "input rejected" to every request with
an input containing one of them, as a model refusing a text does.
`embedding_down = True` answers HTTP 503 to every request. Its request bodies are kept in
`embedding_requests`.

Every request body is kept in `requests` for assertions. Usage is fixed per reply
(`PROMPT_TOKENS` in, `COMPLETION_TOKENS` out) so summed usage is predictable.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
import socket
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from reme.jsontypes import JSONObject, JSONValue
from reme.llm.testing.server_profiles import Body, Profile, items, obj
from reme.llm.testing.server_profiles import profile as server_profile

PROMPT_TOKENS = 11
COMPLETION_TOKENS = 7


class FakeOpenAI:
    """Serves scripted chat completions on a free loopback port until `close()`."""

    def __init__(
        self,
        script: Sequence[Body] = ({"text": "ok"},),
        model: str = "fake-model",
        *,
        refuse_tool_choice: bool = False,
        refuse_json_schema: bool = False,
        embedding_dimension: int = 8,
        profile: str = "openai",
    ) -> None:
        self.model = model
        self.profile: Profile = server_profile(profile)
        self.statuses: list[int] = []
        self.serving = threading.Lock()  # held while answering, for servers that answer one at a time
        self.embedding_dimension = embedding_dimension
        self.embedding_faults: list[JSONObject] = []
        self.embedding_requests: list[JSONObject] = []
        self.embedding_reject: set[str] = set()
        self.embedding_down = False
        self.refuse_tool_choice = refuse_tool_choice
        self.refuse_json_schema = refuse_json_schema
        self.requests: list[JSONObject] = []
        self._script: list[JSONObject] = []
        self._lock = threading.Lock()
        self.closing = threading.Event()  # ends the answers that hang
        self.set_script(script)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-openai", daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def set_script(self, script: Sequence[Body]) -> None:
        """Replace the script and start it from its first entry."""
        if not script:
            raise ValueError("the fake server needs at least one scripted entry")
        with self._lock:
            self._script = [dict(e) for e in script]
            self._position = 0

    def refusal(self, body: JSONObject) -> tuple[int, JSONObject] | None:
        """The HTTP status and body with which this server refuses the request (recorded), if it does."""
        choice = body.get("tool_choice")
        refused = self.profile.refusal(body)
        if refused is None and self.refuse_tool_choice and choice is not None and choice != "auto":
            refused = (
                500,
                {"error": {"message": "AssertionError: tool_choice must be 'auto'", "type": "server_error"}},
            )
        elif (
            refused is None
            and self.refuse_json_schema
            and obj(body.get("response_format")).get("type") == "json_schema"
        ):
            refused = (
                400,
                {
                    "error": {
                        "message": "response_format json_schema is not supported",
                        "type": "server_error",
                    }
                },
            )
        if refused is None:
            return None
        self.record(body, refused[0])
        return refused

    def record(self, body: JSONObject, status: int) -> int:
        """Keep the request and the status answered (0 until it is known); its index in `requests`."""
        with self._lock:
            self.requests.append(body)
            self.statuses.append(status)
            return len(self.requests) - 1

    def next_entry(self, body: JSONObject) -> JSONObject:
        with self._lock:
            entry = self._script[min(self._position, len(self._script) - 1)]
            self._position += 1
        return self.profile.entry(entry, body)

    def next_embedding_fault(self, body: JSONObject) -> JSONObject:
        with self._lock:
            self.embedding_requests.append(body)
            return self.embedding_faults.pop(0) if self.embedding_faults else {}

    def close(self) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


_WORD = re.compile(r"\w+")


def hashed_words(text: str, dimension: int) -> list[float]:
    """A deterministic bag-of-words vector: each lower-cased word adds ±1 at a position its hash picks."""
    vector = [0.0] * dimension
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha1(word.encode()).digest()
        vector[digest[0] % dimension] += 1.0 if digest[1] % 2 else -1.0
    return vector


def _number(value: JSONValue, default: float) -> float:
    """A numeric script field (`seconds`, `status`, `dimension`), or `default` when absent."""
    return float(value) if isinstance(value, (int, float, str)) else default


def _output_tool(body: Body) -> str | None:
    for value in items(body.get("tools")):
        tool = obj(value)
        name = str(obj(tool.get("function")).get("name") or tool.get("name", ""))
        if name.startswith("final_result"):
            return name
    return None


def _message(entry: Body, body: Body) -> tuple[JSONObject, str]:
    """The assistant message for an entry and its finish reason."""
    calls: list[tuple[str, str]] = []
    if entry.get("fault") == "bad_tool_json":
        calls.append((str(entry.get("tool", "write")), '{"path": "daily/oops.md", "content": '))
    elif entry.get("fault") == "ignore_schema":
        calls.append((_output_tool(body) or "final_result", json.dumps({"unexpected": "ignored the schema"})))
    elif "tool" in entry:
        calls.append((str(entry["tool"]), json.dumps(entry.get("args") or {})))
    elif "tools" in entry:
        calls.extend((str(obj(c)["tool"]), _arguments(obj(c))) for c in items(entry["tools"]))
    elif "output" in entry and _output_tool(body):
        calls.append((_output_tool(body) or "", json.dumps(entry["output"])))
    if calls:
        tool_calls: list[JSONValue] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
        return {"role": "assistant", "content": None, "tool_calls": tool_calls}, "tool_calls"
    text = entry.get("text")
    if text is None and "output" in entry:
        text = json.dumps(entry["output"])
    return {"role": "assistant", "content": str(text or "")}, "stop"


def _arguments(call: JSONObject) -> str:
    """A scripted call's arguments: `arguments` as given (raw text), else `args` as JSON."""
    raw = call.get("arguments")
    return raw if isinstance(raw, str) else json.dumps(call.get("args") or {})


def _anthropic_reply(message: JSONObject, model: str) -> JSONObject:
    """The same reply in the shape of Anthropic's Messages API (not streamed)."""
    blocks: list[JSONValue] = [{"type": "text", "text": message["content"]}] if message.get("content") else []
    for value in items(message.get("tool_calls")):
        call = obj(value)
        function = obj(call.get("function"))
        try:
            arguments = json.loads(str(function["arguments"]))
        except json.JSONDecodeError:
            arguments = {"unparsable_arguments": function["arguments"]}
        blocks.append({"type": "tool_use", "id": call["id"], "name": function["name"], "input": arguments})
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": "tool_use" if message.get("tool_calls") else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": PROMPT_TOKENS, "output_tokens": COMPLETION_TOKENS},
    }


_USAGE: JSONObject = {
    "prompt_tokens": PROMPT_TOKENS,
    "completion_tokens": COMPLETION_TOKENS,
    "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
}


def _handler_for(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        pace = 0.0  # seconds per byte of the answer in progress (`trickle`)

        def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
            return

        def do_GET(self) -> None:
            if urlsplit(self.path).path.rstrip("/").endswith("/models"):
                return self._json(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
            self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            try:
                self._answer()
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout): expected
                self.close_connection = True

        def _answer(self) -> None:
            self.pace = 0.0
            length = int(self.headers.get("content-length") or 0)
            try:
                body = obj(json.loads(self.rfile.read(length) or b"{}"))
            except json.JSONDecodeError:
                return self._json(400, {"error": {"message": "invalid JSON body"}})
            route = urlsplit(self.path).path.rstrip("/")
            if route.endswith("/embeddings"):
                return self._embeddings(body)
            if not route.endswith(("/chat/completions", "/messages")):
                return self._json(404, {"error": {"message": f"no route {self.path}"}})
            if server.profile.serial:
                with server.serving:
                    return self._chat(route, body)
            self._chat(route, body)

        def _chat(self, route: str, body: JSONObject) -> None:
            refused = server.refusal(body)
            if refused is not None:
                return self._json(*refused)
            entry = server.next_entry(body)
            index = server.record(body, 0)
            if entry.get("fault") == "slow":
                time.sleep(_number(entry.get("seconds"), 2.0))
                entry = obj(entry.get("then")) or {"text": "late reply"}
            if entry.get("fault") in ("raw", "hang", "huge"):
                server.statuses[index] = int(_number(entry.get("status"), 200))
                return self._broken(entry)
            if entry.get("fault") == "trickle":
                self.pace = _number(entry.get("seconds"), 1.0)
                entry = obj(entry.get("then")) or {"text": "late reply"}
            status = int(_number(entry.get("status"), 500)) if entry.get("fault") == "http" else 200
            server.statuses[index] = status
            if status != 200:
                error: JSONObject = {"error": {"message": f"injected HTTP {status}", "type": "fake"}}
                return self._json(status, error, retry_after=entry.get("retry_after"))
            message, finish = _message(entry, body)
            if finish == "tool_calls":
                finish = server.profile.tool_finish_reason()
            finish = str(entry.get("finish_reason") or finish)
            if route.endswith("/messages"):
                return self._json(200, _anthropic_reply(message, server.model))
            if body.get("stream"):
                return self._stream(message, finish, usage=server.profile.stream_usage(body))
            self._json(200, self._completion(message, finish))

        def _broken(self, entry: JSONObject) -> None:
            """A `raw`, `hang` or `huge` answer: a body no healthy server sends."""
            status = int(_number(entry.get("status"), 200))
            data = str(entry.get("body", "")).encode()
            data = gzip.compress(data) if entry.get("gzip") else data
            length = int(_number(entry.get("bytes"), 0)) if entry.get("fault") == "huge" else len(data)
            self.send_response(status)
            self.send_header("content-type", str(entry.get("content_type") or "application/json"))
            if entry.get("gzip"):
                self.send_header("content-encoding", "gzip")
            self.send_header("content-length", str(length if entry.get("fault") != "hang" else 100))
            self.end_headers()
            self.close_connection = True
            if entry.get("fault") == "hang":
                self.wfile.flush()
                server.closing.wait()
            elif entry.get("fault") == "huge":
                chunk = b"x" * 1_000_000
                self.wfile.write(b'{"id": "')
                for start in range(8, length, len(chunk)):
                    self.wfile.write(chunk[: length - start])
            else:
                self.wfile.write(data[: len(data) // 2] if entry.get("cut") else data)

        def _embeddings(self, body: JSONObject) -> None:
            fault = server.next_embedding_fault(body)
            if fault.get("fault") == "slow":
                time.sleep(_number(fault.get("seconds"), 2.0))
            if fault.get("fault") == "http":
                status = int(_number(fault.get("status"), 500))
                return self._json(status, {"error": {"message": f"injected HTTP {status}", "type": "fake"}})
            given = body.get("input")
            given = [given] if isinstance(given, str) else given
            if not isinstance(given, list) or not all(isinstance(t, str) for t in given):
                return self._json(400, {"error": {"message": "input must be a string or a list of strings"}})
            texts = [str(t) for t in given]
            if server.embedding_down:
                return self._json(503, {"error": {"message": "embedding service down", "type": "fake"}})
            if any(marker in text for marker in server.embedding_reject for text in texts):
                return self._json(400, {"error": {"message": "input rejected: too long", "type": "fake"}})
            if fault.get("fault") == "raw":
                return self._broken(fault)
            dimension = int(_number(fault.get("dimension"), server.embedding_dimension))
            data: list[JSONValue] = [
                {
                    "object": "embedding",
                    "index": 0 if fault.get("fault") == "same_index" else i,
                    "embedding": [math.nan] * dimension
                    if fault.get("fault") == "nan"
                    else [*hashed_words(text, dimension)],
                }
                for i, text in enumerate(texts)
            ]
            if fault.get("fault") == "fewer":
                data = data[:-1]
            if fault.get("fault") == "reversed":
                data.reverse()
            self._json(200, {"object": "list", "data": data, "model": body.get("model", server.model)})

        def _completion(self, message: JSONObject, finish: str) -> JSONObject:
            return {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 0,
                "model": server.model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": _USAGE,
            }

        def _stream(self, message: JSONObject, finish: str, usage: bool) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            deltas: list[JSONObject] = [{"role": "assistant", "content": ""}]
            text = str(message.get("content") or "")
            deltas += [{"content": text[i : i + 16]} for i in range(0, len(text), 16)]
            for i, call in enumerate(items(message.get("tool_calls"))):
                deltas.append({"tool_calls": [{"index": i, **obj(call)}]})
            for delta in deltas:
                self._event({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            last: JSONObject = {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
            if usage and server.profile.name == "strict-openai":
                self._event(last)
                last = {"choices": [], "usage": _USAGE}  # OpenAI's own usage chunk has no choices
            elif usage:
                last["usage"] = _USAGE
            self._event(last)
            self._write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def _event(self, payload: JSONObject) -> None:
            chunk = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": server.model,
                **payload,
            }
            self._write(f"data: {json.dumps(chunk)}\n\n".encode())

        def _json(self, status: int, payload: JSONObject, retry_after: JSONValue = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            if retry_after is not None:
                self.send_header("retry-after", str(retry_after))
            elif status >= 400:
                self.send_header("retry-after-ms", "10")
            self.end_headers()
            self._write(data)

        def _write(self, data: bytes) -> None:
            """Send `data`, one byte per `pace` seconds when the entry trickles."""
            if not self.pace:
                self.wfile.write(data)
                return
            for byte in data:
                if server.closing.wait(self.pace):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()

    return Handler


class SilentServer:
    """Accepts connections on a loopback port but never reads or answers a request (until `close()`)."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.05)
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self.connections = 0
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.setblocking(False)
            self._held.append(connection)
            self.connections += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for connection in self._held:
            connection.close()
        self._socket.close()

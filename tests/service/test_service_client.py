"""The CLI's socket-level HTTP client against raw socket servers answering with each body framing."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from reme.service.client import ServiceUnreachable, call_job
from reme.service.service_info import ServiceInfo


def serve_once(response: bytes) -> tuple[ServiceInfo, dict]:
    """A one-shot server that records the request and answers `response` verbatim, then closes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    seen: dict = {}

    def handle() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(
                next(
                    line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
                ).split(b":")[1]
            )
            while len(body) < length:
                body += conn.recv(65536)
            seen["head"], seen["body"] = head.decode(), json.loads(body)
            conn.sendall(response)
        listener.close()

    threading.Thread(target=handle, daemon=True).start()
    return ServiceInfo(port=listener.getsockname()[1], source="test"), seen


def test_request_carries_job_params_and_token():
    answer = json.dumps({"success": True, "answer": "é", "metadata": {}}).encode()
    info, seen = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(answer) + answer)
    reply = call_job(info, "read", {"path": "a.md", "start_line": 2}, token="t0k")
    assert reply.response == {"success": True, "answer": "é", "metadata": {}}
    assert seen["head"].startswith("POST /read HTTP/1.1\r\n")
    assert "Authorization: Bearer t0k" in seen["head"]
    assert seen["body"] == {"path": "a.md", "start_line": 2}


def test_close_delimited_body():
    answer = json.dumps({"success": False, "answer": "no", "metadata": {"k": 1}}).encode()
    info, _ = serve_once(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + answer)
    assert call_job(info, "version", {}).response == {"success": False, "answer": "no", "metadata": {"k": 1}}


def test_chunked_event_stream_is_split_into_data_chunks():
    events = b'data: {"type": "text", "text": "a"}\n\ndata: {"type": "done", "success": true}\n\n'
    split = [events[:7], events[7:40], events[40:]]  # chunk borders fall inside lines
    body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in split) + b"0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    info, _ = serve_once(head + body)
    reply = call_job(info, "talk", {"text": "a"})
    assert list(reply.chunks) == [{"type": "text", "text": "a"}, {"type": "done", "success": True}]


def test_non_reme_answer_becomes_a_failed_response():
    info, _ = serve_once(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 11\r\n\r\nupstream :(")
    reply = call_job(info, "version", {})
    assert reply.status == 502
    assert reply.response["success"] is False
    assert "HTTP 502" in reply.response["answer"] and "upstream :(" in reply.response["answer"]


def test_garbage_and_silence_are_unreachable():
    info, _ = serve_once(b"SSH-2.0-OpenSSH\r\n")
    with pytest.raises(ServiceUnreachable, match="did not answer"):
        call_job(info, "version", {})
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(
        ServiceUnreachable, match=f"no reme service reachable at http://127.0.0.1:{port} \\(test\\)"
    ):
        call_job(ServiceInfo(port=port, source="test"), "version", {})

"""The HTTP service as a real `reme start` subprocess: Response shape, validation, routing, OpenAPI."""

from __future__ import annotations

import json
import signal
import socket

import httpx
import pytest

from reme import __version__

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


def post(http_service, path: str, **kwargs) -> httpx.Response:
    return httpx.post(f"{http_service.url}{path}", timeout=30, **kwargs)


def test_service_file_names_the_listening_process(http_service):
    assert http_service.info == {
        "host": "127.0.0.1",
        "port": http_service.info["port"],
        "backend": "http",
        "pid": http_service.proc.pid,
        "workspace_dir": str(http_service.workspace.resolve()),
    }


def test_job_answers_with_the_response_shape(http_service):
    reply = post(http_service, "/version", json={})
    assert reply.status_code == 200
    assert reply.json() == {"success": True, "answer": __version__, "metadata": {"version": __version__}}
    assert post(http_service, "/version").json()["success"] is True  # an empty body means no parameters


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"job": 7}, "must be of type string"),
        ({"nope": 1}, "unknown parameter 'nope'"),
        ({"job": "no_such_job"}, "unknown job 'no_such_job'"),
    ],
)
def test_schema_violations_are_clean_failures(http_service, body, expected):
    reply = post(http_service, "/help", json=body)
    assert reply.status_code == (200 if "unknown job" in expected else 422)  # a failing step is still a run
    data = reply.json()
    assert (data["success"], set(data)) == (False, {"success", "answer", "metadata"})
    assert expected in data["answer"]


def test_a_failed_run_names_the_kind_of_its_failure(http_service):
    refused = post(http_service, "/help", json={"job": "no_such_job"})
    assert (refused.status_code, refused.headers["x-reme-error"]) == (200, "user")  # still a run: 200
    assert "x-reme-error" not in post(http_service, "/version", json={}).headers


def test_missing_required_parameter_is_refused(http_service):
    reply = post(http_service, "/list", json={})
    data = reply.json()
    assert (reply.status_code, data["success"]) == (422, False)
    assert "missing required parameter 'path'" in data["answer"]
    assert post(http_service, "/list", json={"path": "daily"}).json()["success"] is True


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{not json", "invalid JSON body"),
        (b"[1, 2]", "must be a JSON object"),
        (b'"text"', "must be a JSON object"),
        (b'{"path": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested more than 100 levels"),
        (b'{"path": ' + b'{"a":' * 500 + b"1" + b"}" * 500 + b"}", "nested more than 100 levels"),
    ],
)
def test_malformed_bodies_get_400_with_the_response_shape(http_service, content, expected):
    reply = post(http_service, "/version", content=content, headers={"Content-Type": "application/json"})
    assert reply.status_code == 400
    assert reply.json()["success"] is False
    assert expected in reply.json()["answer"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/no_such_job", "is unknown"), ("/private_version", "is not served"), ("/nightly", "is not served")],
)
def test_unknown_hidden_and_cron_jobs_are_not_routes(http_service, path, expected):
    reply = post(http_service, path, json={})
    assert reply.status_code == 404
    assert reply.json()["success"] is False
    assert expected in reply.json()["answer"]


def test_root_explains_the_interface(http_service):
    reply = post(http_service, "/", json={})
    assert reply.status_code == 404
    assert reply.json()["answer"].startswith("POST /<job>")


def test_oversize_body_is_refused_before_it_is_read(http_service):
    with socket.create_connection(("127.0.0.1", http_service.info["port"]), timeout=30) as sock:
        sock.sendall(b"POST /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n")
        sock.sendall(b"Content-Length: %d\r\n\r\n{" % (65 * 2**20))  # only one byte of it is ever sent
        head, _, body = sock.makefile("rb").read().partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413")
    assert json.loads(body)["answer"] == "the body is larger than 67108864 bytes"


def test_get_on_a_job_says_to_post(http_service):
    reply = httpx.get(f"{http_service.url}/version")
    assert reply.status_code == 405
    assert "use POST /version" in reply.json()["answer"]


def test_openapi_documents_each_job_with_its_own_parameter_schema(http_service):
    spec = httpx.get(f"{http_service.url}/openapi.json").json()
    served = {"/app_config", "/health_check", "/help", "/list", "/status", "/version"}
    assert set(spec["paths"]) == served
    help_job = post(http_service, "/help", json={"job": "list"}).json()["metadata"]["jobs"][0]
    list_body = spec["paths"]["/list"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert list_body == help_job["parameters"]
    assert list_body["required"] == ["path"]
    assert spec["paths"]["/list"]["post"]["operationId"] == "list"


def test_sigterm_stops_gracefully_and_removes_the_service_file(tmp_path, reme_service, service_config):
    workspace = tmp_path / "ws"
    started = reme_service(workspace, f"config={service_config}", "service.port=0")
    assert started.info["port"] > 0  # port 0 picks a free port and the file tells which
    assert post(started, "/version").json()["answer"] == __version__
    started.proc.send_signal(signal.SIGTERM)
    assert started.proc.wait(15) == 0
    assert not (workspace / "metadata" / "service.json").exists()


def test_busy_port_is_a_clear_start_error(tmp_path, http_service, run_reme):
    result = run_reme(
        "start", f"workspace_dir={tmp_path / 'ws'}", f"service.port={http_service.info['port']}"
    )
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{http_service.info['port']}" in result.stderr
    assert not (tmp_path / "ws" / "metadata" / "service.json").exists()


def test_non_ascii_answers_round_trip(http_service):
    data = post(http_service, "/help", json={"job": "未知"}).json()
    assert "'未知'" in data["answer"]
    assert json.loads(json.dumps(data)) == data


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},  # a page posting to localhost
        {"Origin": "null"},  # a sandboxed page or file://
        {"Host": "evil.example:2333"},  # DNS rebinding
    ],
)
def test_requests_forged_by_web_pages_are_refused(http_service, headers):
    reply = post(http_service, "/version", json={}, headers=headers)
    assert reply.status_code == 403
    assert reply.json()["success"] is False and reply.json()["answer"].startswith("refused:")


def test_local_origins_are_accepted(http_service):
    port = http_service.info["port"]
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        assert post(http_service, "/version", json={}, headers={"Origin": origin}).status_code == 200

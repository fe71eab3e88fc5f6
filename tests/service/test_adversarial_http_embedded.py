"""Adversarial checks of the HTTP service's access rules, its request bodies, the service file the
CLI trusts and the CLI's token (in-process; no network model).

Each test asserts the behaviour the docs promise, for a case that once broke it.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from reme import ReMe
from reme.service import service_info
from reme.service.client import ServiceUnreachable, call_job, client_token
from reme.service.http import build_http_app
from reme.service.lifecycle import stop
from reme.service.security import LoopbackGuard, ServiceConfigError
from reme.service.service_info import NoService, ServiceInfo, discover, write_service_file
from reme.service.settings import service_settings

SERVICE_CONFIG = Path(__file__).with_name("service_test_config.yaml")


@pytest.fixture
async def system_app(tmp_path: Path) -> AsyncIterator[ReMe]:
    """An application with the system jobs and the `list` stand-in only (fast to start), no cron."""
    async with ReMe(workspace_dir=tmp_path / "ws", config=SERVICE_CONFIG, **{"scheduler.cron": False}) as app:
        yield app


def _client(asgi: object) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=asgi, raise_app_exceptions=False)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:2333")


# --- loopback trust through a proxy ----------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [
        {"x-forwarded-for": "203.0.113.7"},
        {"forwarded": "for=203.0.113.7;proto=https"},
        {"x-real-ip": "203.0.113.7"},
        {"x-forwarded-host": "notes.example.com"},
    ],
)
async def test_a_loopback_service_without_a_token_refuses_a_request_a_proxy_relayed(
    system_app: ReMe, header: dict[str, str]
) -> None:
    """A loopback service has no token because only this machine can reach it. A reverse proxy on
    this machine (nginx sends `Host: 127.0.0.1:2333`, the address it dials, by default) relays the
    whole network to it: the Host check passed and every job ran for anyone. The proxy's
    forwarding headers give it away; such a request must not get loopback trust (SPEC §14)."""
    async with _client(LoopbackGuard(build_http_app(system_app))) as client:
        relayed = await client.post("/version", json={}, headers=header)
        local = await client.post("/version", json={})
    assert relayed.status_code == 403
    assert relayed.json()["success"] is False and "service.auth_token" in relayed.json()["answer"]
    assert local.status_code == 200 and local.json()["success"] is True


# --- tokens ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("tökén-1234", "printable ASCII"),
        ("секрет", "printable ASCII"),
        ("token\n", "printable ASCII"),
        (" token", "space"),
        ("token ", "space"),
    ],
)
def test_a_token_no_client_can_send_back_refuses_to_start(token: str, why: str) -> None:
    """The token is compared as UTF-8 bytes, but the CLI sent its header as Latin-1 (`é` became
    another byte, `секрет` failed to encode as "the service did not answer"), and header values lose
    their surrounding spaces: the service started and then answered every request 401."""
    for config, source in (
        ({"service": {"host": "0.0.0.0", "auth_token": token}}, "service.auth_token"),
        ({"service": {"host": "0.0.0.0"}}, "REME_API_TOKEN"),
    ):
        environ = {} if source == "service.auth_token" else {"REME_API_TOKEN": token}
        with pytest.raises(ServiceConfigError, match=why) as refused:
            _settings(config, environ)
        assert source in str(refused.value)


def _settings(config: dict[str, object], environ: dict[str, str]) -> object:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("REME_API_TOKEN", raising=False)
        for key, value in environ.items():
            patch.setenv(key, value)
        return service_settings(config)  # type: ignore[arg-type]


def test_the_cli_drops_the_newline_around_its_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """`REME_API_TOKEN` read from a file keeps its newline; sent as it was, it never matched."""
    monkeypatch.setenv("REME_API_TOKEN", "  s3cret-token\n")
    assert client_token() == "s3cret-token"


def test_a_line_break_inside_the_token_is_never_sent_as_a_header() -> None:
    """A token with a CR/LF inside ended the Authorization header and started another one of the
    token's choosing (header injection); the CLI now refuses to send it and says why."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        info = ServiceInfo(host="127.0.0.1", port=listener.getsockname()[1])
        with pytest.raises(ServiceUnreachable, match="REME_API_TOKEN holds a line break"):
            call_job(info, "version", {}, token='abc\r\nX-ReMe-Workspace: "/elsewhere"', timeout=2.0)
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(2.0)
            assert conn.recv(65536) == b""  # closed without a byte sent


# --- request bodies --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "key"),
    [
        (b'{"path": "notes/a.md", "path": "../../etc/passwd"}', "path"),
        (b'{"path": "a", "extra": {"k": 1, "k": 2}}', "k"),
    ],
)
async def test_a_body_naming_a_key_twice_is_refused(system_app: ReMe, body: bytes, key: str) -> None:
    """`{"path": "a", "path": "b"}` ran with "b": the parser keeps the last, a proxy or a log that
    checked the request may have read the first. An ambiguous request is refused, naming the key."""
    async with _client(build_http_app(system_app)) as client:
        reply = await client.post("/list", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == 400
    assert reply.json()["success"] is False and f"{key!r} twice" in reply.json()["answer"]


@pytest.mark.parametrize(("body", "named"), [(b"null", "null"), (b"[1]", "an array"), (b"7", "a number")])
async def test_a_body_that_is_not_an_object_is_named_in_json_terms(
    system_app: ReMe, body: bytes, named: str
) -> None:
    """The message said `got NoneType` / `got list`: Python's names for what the client wrote as JSON."""
    async with _client(build_http_app(system_app)) as client:
        reply = await client.post("/version", content=body)
    assert reply.status_code == 400 and reply.json()["answer"].endswith(f"got {named}")


# --- the service file ------------------------------------------------------------------------------


def _record(workspace: Path, pid: int) -> Path:
    return Path(write_service_file(workspace, ServiceInfo(port=2333, pid=pid, workspace_dir=str(workspace))))


def test_a_service_file_of_another_user_is_not_believed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _record(tmp_path / "ws", os.getpid())
    if os.getuid() == 0:  # root's files are trusted (root can do anything anyway): another owner
        os.chown(path, 4242, -1)
        monkeypatch.setattr(os, "getuid", lambda: 4343)
    else:
        monkeypatch.setattr(os, "getuid", lambda real=path.stat().st_uid: real + 1)
    with pytest.raises(NoService, match="not trusted: it belongs to another user"):
        discover(workspace_dir=tmp_path / "ws", environ={})


def test_the_service_writes_a_file_only_it_may_change_whatever_the_umask(tmp_path: Path) -> None:
    """With `umask 002` the file came out group-writable (another user of the group could point the
    CLI, its token and notes at a port of theirs); now it never is."""
    previous = os.umask(0o002)
    try:
        path = _record(tmp_path / "ws", os.getpid())
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) & 0o022 == 0
    assert discover(workspace_dir=tmp_path / "ws", environ={}).pid == os.getpid()


def test_a_stale_file_whose_pid_now_belongs_to_another_user_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service was killed; its pid number was reused by another user's process, which counted as
    "alive", so the CLI sent its token and notes to whatever listens on the recorded port now."""
    recycled = 999_999
    _record(tmp_path / "ws", recycled)
    real_kill = os.kill

    def kill(pid: int, sig: int) -> None:
        if pid == recycled:
            raise PermissionError(1, "Operation not permitted")
        real_kill(pid, sig)

    monkeypatch.setattr(os, "kill", kill)
    with pytest.raises(NoService, match="has exited"):
        discover(workspace_dir=tmp_path / "ws", environ={})
    status, message = stop(tmp_path / "ws")
    assert status == 0 and "removed the stale" in message
    assert not Path(service_info.service_file(tmp_path / "ws")).exists()

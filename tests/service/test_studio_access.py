"""Studio's access rules on a real service: token login → HttpOnly SameSite=Strict cookie, CSRF on
every state-changing request made with it, CSP on every answer, assets confined to the package,
event streams that never hold up shutdown, and `import reme` without the web parts."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import httpx
import pytest
from tests.service.studio_support import EventListener
from tests.support import start_service_process

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

TOKEN = "studio-token-123"


@pytest.fixture(scope="module")
def token_service(module_services, tmp_path_factory, service_config):
    return module_services(
        tmp_path_factory.mktemp("studio-auth") / "ws",
        f"config={service_config}",
        f"service.auth_token={TOKEN}",
        "service.port=0",
    )


def csrf_of(page: str) -> str:
    found = re.search(r'name="reme-csrf" content="([^"]+)"', page)
    assert found, page
    return found.group(1)


def login(url: str) -> httpx.Client:
    client = httpx.Client(base_url=url)
    reply = client.post("/studio/login", data={"token": TOKEN})
    assert reply.status_code == 303
    cookie = reply.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    return client


def test_without_a_session_only_the_login_form_and_assets_are_open(token_service):
    url = token_service.url
    page = httpx.get(f"{url}/studio")
    assert page.status_code == 200 and 'name="token"' in page.text and "reme-csrf" not in page.text
    assert "set-cookie" not in page.headers
    assert httpx.get(f"{url}/studio/assets/app.js").status_code == 200
    assert httpx.get(f"{url}/studio/events").status_code == 401
    assert httpx.post(f"{url}/version", json={}).status_code == 401
    wrong = httpx.post(f"{url}/studio/login", data={"token": "nope"})
    assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
    foreign = httpx.post(
        f"{url}/studio/login", data={"token": TOKEN}, headers={"Origin": "https://evil.example"}
    )
    assert foreign.status_code == 403 and "set-cookie" not in foreign.headers


def test_a_session_needs_its_csrf_token_for_every_state_changing_request(token_service):
    client = login(token_service.url)
    page = client.get("/studio")
    assert page.status_code == 200
    csrf = csrf_of(page.text)
    assert client.post("/version", json={}).status_code == 403
    assert client.post("/version", json={}, headers={"x-reme-csrf": "forged"}).status_code == 403
    refused = client.post("/write", json={"path": "a.md", "content": "x"}, headers={"x-reme-csrf": "forged"})
    assert refused.status_code == 403 and not (token_service.workspace / "a.md").exists()
    ok = client.post("/version", json={}, headers={"x-reme-csrf": csrf})
    assert ok.status_code == 200 and ok.json()["success"]
    client.post("/studio/logout", headers={"x-reme-csrf": csrf})
    client.cookies.clear()
    assert client.post("/version", json={}, headers={"x-reme-csrf": csrf}).status_code == 401


def test_every_answer_carries_the_csp_and_assets_stay_inside_the_package(token_service):
    url = token_service.url
    for reply in (
        httpx.get(f"{url}/studio"),
        httpx.post(f"{url}/version"),
        httpx.get(f"{url}/studio/assets/x.js"),
    ):
        csp = reply.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    for name in ("..%2Fhttp.py", "index.html", "login.html", "nope.js", "%2E%2E%2F__init__.py"):
        assert httpx.get(f"{url}/studio/assets/{name}").status_code == 404, name
    assert httpx.get(f"{url}/studio/assets/style.css").headers["content-type"].startswith("text/css")


def test_loopback_without_a_token_gets_a_cookie_and_still_checks_csrf(tmp_path, service_config):
    service = start_service_process(tmp_path / "ws", f"config={service_config}", "service.port=0")
    try:
        client = httpx.Client(base_url=service.url)
        page = client.get("/studio")
        assert "HttpOnly" in page.headers["set-cookie"] and "SameSite=Strict" in page.headers["set-cookie"]
        assert client.post("/version", json={}).status_code == 403  # cookie, no CSRF header
        assert (
            client.post("/version", json={}, headers={"x-reme-csrf": csrf_of(page.text)}).status_code == 200
        )
        assert httpx.post(f"{service.url}/version", json={}).status_code == 200  # the CLI's way: no cookie
        embedded = httpx.get(f"{service.url}/studio", headers={"Sec-Fetch-Dest": "image"})
        assert embedded.status_code == 403 and "set-cookie" not in embedded.headers
        forged = httpx.post(f"{service.url}/version", json={}, headers={"Origin": "https://evil.example"})
        assert forged.status_code == 403
    finally:
        service.stop()


def test_an_open_event_stream_does_not_hold_up_shutdown(tmp_path, service_config):
    (tmp_path / "ws" / "daily").mkdir(parents=True)
    service = start_service_process(tmp_path / "ws", f"config={service_config}", "service.port=0")
    listener = EventListener(service.url)
    try:
        deadline = time.monotonic() + 10
        listener.wait_open(deadline)
        (tmp_path / "ws" / "daily" / "live.md").write_text("# live\n", encoding="utf-8")
        assert listener.wait_for(b"daily/live.md", deadline)
        started = time.monotonic()
        assert service.stop(timeout=10) == 0
        assert time.monotonic() - started < 5
    finally:
        service.stop()
    listener.join()


def test_import_reme_does_not_import_studio():
    code = "import reme, sys; print(sorted(m for m in sys.modules if 'studio' in m or m == 'fastapi'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

"""Studio sessions under attack, over real HTTP against `reme start` with a token: a session the
browser held before logging in (planted by a page on another port of the same host, or simply an
old one) is revoked by the login, logout revokes the session on the server and not only in the
browser, a session id or CSRF token in the query string is never accepted, and each session has
its own CSRF token."""

from __future__ import annotations

import re

import httpx
import pytest
from tests.support import ServiceProcess

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

TOKEN = "studio-session-token"


@pytest.fixture(scope="module")
def service(module_services, tmp_path_factory, service_config) -> ServiceProcess:
    return module_services(
        tmp_path_factory.mktemp("studio-sessions") / "ws",
        f"config={service_config}",
        f"service.auth_token={TOKEN}",
        "service.port=0",
    )


@pytest.fixture
def url(service: ServiceProcess) -> str:
    return service.url


def login(url: str, cookie: str | None = None) -> str:
    """Log in with the token, sending `cookie` as the browser's Cookie header; the new session id."""
    headers = {"Cookie": cookie} if cookie else {}
    reply = httpx.post(f"{url}/studio/login", data={"token": TOKEN}, headers=headers)
    assert reply.status_code == 303, reply.text
    found = re.match(r"reme_studio=([^;]+);", reply.headers["set-cookie"])
    assert found, reply.headers["set-cookie"]
    return found.group(1)


def csrf_of(url: str, cookie: str) -> str | None:
    """The CSRF token the page hands to this Cookie header, or None when it shows the login form."""
    page = httpx.get(f"{url}/studio", headers={"Cookie": cookie})
    found = re.search(r'name="reme-csrf" content="([^"]+)"', page.text)
    return found.group(1) if found else None


def version(url: str, cookie: str, csrf: str) -> int:
    return httpx.post(f"{url}/version", json={}, headers={"Cookie": cookie, "X-ReMe-CSRF": csrf}).status_code


def test_logging_in_revokes_the_session_the_browser_already_had(url: str) -> None:
    old = login(url)
    old_csrf = csrf_of(url, f"reme_studio={old}")
    assert old_csrf and version(url, f"reme_studio={old}", old_csrf) == 200

    new = login(url, cookie=f"reme_studio={old}")
    assert new != old
    assert csrf_of(url, f"reme_studio={old}") is None  # the old cookie now gets the login form
    assert version(url, f"reme_studio={old}", old_csrf) == 401
    new_csrf = csrf_of(url, f"reme_studio={new}")
    assert new_csrf and version(url, f"reme_studio={new}", new_csrf) == 200


def test_a_planted_cookie_sent_beside_the_real_one_is_revoked_by_login(url: str) -> None:
    # A page on another port of this host can set a `reme_studio` cookie with a narrower Path; the
    # browser then sends both, the planted one first. Logging in must leave it worthless.
    planted = login(url)
    planted_csrf = csrf_of(url, f"reme_studio={planted}")
    assert planted_csrf
    fresh = login(url, cookie=f"reme_studio={planted}; other=1; reme_studio=stale")
    both = f"reme_studio={planted}; reme_studio={fresh}"
    assert version(url, f"reme_studio={planted}", planted_csrf) == 401
    fresh_csrf = csrf_of(url, both)
    assert fresh_csrf and fresh_csrf != planted_csrf
    assert version(url, both, fresh_csrf) == 200
    assert version(url, both, planted_csrf) == 403


def test_logout_revokes_the_session_on_the_server(url: str, service: ServiceProcess) -> None:
    sid = login(url)
    cookie = f"reme_studio={sid}"
    csrf = csrf_of(url, cookie)
    assert csrf
    out = httpx.post(f"{url}/studio/logout", headers={"Cookie": cookie, "X-ReMe-CSRF": csrf})
    assert out.status_code == 303 and "Max-Age=0" in out.headers["set-cookie"]
    # A browser (or a thief) that kept the cookie gets nothing with it.
    assert csrf_of(url, cookie) is None
    assert version(url, cookie, csrf) == 401
    written = httpx.post(
        f"{url}/write",
        json={"path": "after-logout.md", "content": "x"},
        headers={"Cookie": cookie, "X-ReMe-CSRF": csrf},
    )
    assert written.status_code == 401 and not (service.workspace / "after-logout.md").exists()


def test_a_session_id_or_csrf_token_in_the_query_string_is_never_accepted(
    url: str, service: ServiceProcess
) -> None:
    sid = login(url)
    csrf = csrf_of(url, f"reme_studio={sid}")
    assert csrf
    page = httpx.get(f"{url}/studio", params={"reme_studio": sid})
    assert page.status_code == 200 and "reme-csrf" not in page.text and 'name="token"' in page.text
    assert "set-cookie" not in page.headers
    for path in ("/version", "/write", "/studio/logout"):
        reply = httpx.post(
            f"{url}{path}",
            params={"reme_studio": sid, "x-reme-csrf": csrf},
            json={"path": "from-query.md", "content": "x"},
            headers={"X-ReMe-CSRF": csrf},
        )
        assert reply.status_code == 401, path
    assert not (service.workspace / "from-query.md").exists()
    # A real cookie with the CSRF token only in the query string is still a forged request.
    assert (
        httpx.post(
            f"{url}/version", params={"x-reme-csrf": csrf}, json={}, headers={"Cookie": f"reme_studio={sid}"}
        ).status_code
        == 403
    )
    assert version(url, f"reme_studio={sid}", csrf) == 200  # the session survived all of that


def test_each_session_has_its_own_csrf_token(url: str) -> None:
    first = login(url)
    first_csrf = csrf_of(url, f"reme_studio={first}")
    second = login(url)  # another browser: the first stays logged in
    second_csrf = csrf_of(url, f"reme_studio={second}")
    assert first_csrf and second_csrf and first_csrf != second_csrf
    assert version(url, f"reme_studio={second}", first_csrf) == 403
    assert version(url, f"reme_studio={first}", second_csrf) == 403
    assert version(url, f"reme_studio={first}", first_csrf) == 200
    assert version(url, f"reme_studio={second}", second_csrf) == 200

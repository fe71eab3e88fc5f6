"""The access rule of a service that serves Studio: session cookie + CSRF, or the bearer token.

Pure ASGI, so streamed responses pass untouched. A request carrying a valid session cookie is
authenticated by it, and unless it only reads (GET/HEAD) it must also carry the session's CSRF
token in `X-ReMe-CSRF`. Without a session, the Studio page, its assets and the login form are open
(they hold no notes); everything else needs the bearer token when one is configured, as before.
Every answer carries a strict Content-Security-Policy and related headers.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable

from starlette.types import Message, Receive, Scope, Send

from reme.service.security import send_json
from reme.service.studio.sessions import CSRF_HEADER, Sessions

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
READS = {"GET", "HEAD"}


def is_open(method: str, path: str) -> bool:
    """What a browser may fetch before logging in: the page (or its login form) and the assets."""
    if method in READS:
        return path in ("/studio", "/studio/") or path.startswith("/studio/assets/")
    return path == "/studio/login"


class StudioGate:
    def __init__(self, app: Callable[..., Awaitable[None]], token: str | None, sessions: Sessions) -> None:
        self.app = app
        self.sessions = sessions
        self._bearer = f"Bearer {token}".encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = list(scope.get("headers", ()))
        method, path = scope["method"], scope["path"]
        session = self.sessions.from_headers(headers)
        if session is not None:
            if method not in READS and path != "/studio/login" and not Sessions.csrf_ok(session, headers):
                await send_json(
                    send,
                    403,
                    f"refused: a request made with the Studio session cookie needs the {CSRF_HEADER} header",
                    SECURITY_HEADERS,
                )
                return
        elif self._bearer is not None and not is_open(method, path) and not self._has_bearer(headers):
            await send_json(
                send,
                401,
                "missing or invalid access token: send 'Authorization: Bearer <token>' "
                "(the CLI sends $REME_API_TOKEN), or log in to Studio at /studio",
                [(b"www-authenticate", b"Bearer"), *SECURITY_HEADERS],
            )
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, secured)

    def _has_bearer(self, headers: list[tuple[bytes, bytes]]) -> bool:
        sent = next((v for k, v in headers if k == b"authorization"), b"")
        return self._bearer is not None and secrets.compare_digest(sent, self._bearer)

"""Access control shared by the HTTP and MCP services: the bind rule and a bearer-token gate.

A service on loopback is reachable only from this machine; anything else exposes the user's notes,
so binding it needs a token, and once a token exists every request must present it.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

ENV_TOKEN = "REME_API_TOKEN"
# An ASGI application, called with (scope, receive, send). Looser than starlette's `ASGIApp` so that an
# app typing its scope as a plain dict (Studio's gate) can be wrapped too.
Asgi = Callable[..., Awaitable[None]]
# The Host (or Origin authority) a client on this machine sends: a name or IPv4 address, or an IPv6
# address in brackets without a zone id, then at most a numeric port.
_AUTHORITY = re.compile(r"(?:\[(?P<ipv6>[0-9A-Fa-f:.]+)\]|(?P<name>[^\[\]:@/]+))(?::(?P<port>[0-9]*))?")


class ServiceConfigError(ValueError):
    """The service configuration is unsafe or incomplete; the message says what to set."""


def resolve_token(
    service_config: Mapping[str, object], environ: Mapping[str, str] | None = None
) -> str | None:
    """`service.auth_token`, else `REME_API_TOKEN`, else None (empty values count as unset).

    A token no client can send back unchanged is refused here, at start, rather than answering
    every request with a 401 the user cannot explain (`_token_problem`).
    """
    env = os.environ if environ is None else environ
    configured = service_config.get("auth_token")  # text: `load_config` refuses anything else
    token = str(configured) if configured else env.get(ENV_TOKEN) or None
    if token is not None and (why := _token_problem(token)):
        source = "service.auth_token" if configured else ENV_TOKEN
        raise ServiceConfigError(f"{source} {why}")
    return token


def _token_problem(token: str) -> str | None:
    """Why `token` cannot travel in an `Authorization` header as it is, or None when it can.

    Header values lose their surrounding whitespace on the way, and clients encode non-ASCII text
    differently (Latin-1 or UTF-8, or not at all), so such a token would match for some clients only.
    """
    if not (token.isascii() and token.isprintable()):
        return (
            "holds characters other than printable ASCII (letters, digits, punctuation); choose another token"
        )
    if token != token.strip():
        return "starts or ends with a space, which is lost in an HTTP header; remove it"
    return None


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to expose the service beyond loopback without a token."""
    if not is_loopback(host) and not token:
        raise ServiceConfigError(
            f"refusing to bind {host}: a non-loopback address needs an access token; "
            f"set service.auth_token=... or the {ENV_TOKEN} environment variable, or bind 127.0.0.1"
        )


class BearerTokenGate:
    """Pure ASGI middleware: HTTP requests without `Authorization: Bearer <token>` get a 401.

    Pure ASGI (not BaseHTTPMiddleware) so that streamed responses (SSE, MCP) pass through untouched.
    """

    def __init__(self, app: Asgi, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await _send_unauthorized(send)
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                return secrets.compare_digest(value, self._expected)
        return False


# Headers a reverse proxy adds: a request carrying one came from elsewhere through this machine.
PROXY_HEADERS = (b"forwarded", b"x-forwarded-for", b"x-forwarded-host", b"x-real-ip")


class LoopbackGuard:
    """Pure ASGI middleware for loopback services: refuse requests that a web page could forge, or
    that a reverse proxy relays from another machine.

    Every page open in the user's browser can POST to 127.0.0.1 (a "simple" request needs no CORS
    preflight) or reach it through DNS rebinding. Both show as a foreign `Origin` or `Host` header,
    which the CLI, SDK clients and scripts on this machine never send, so those get a 403. Only
    needed without a token: a page cannot add the `Authorization` header, so with a token (e.g.
    behind a local reverse proxy that keeps its own Host header) the token gate suffices. A proxy
    that sets Host to the address it dials (nginx does by default) passes the Host check, so the
    forwarding headers it adds are refused too: loopback trust is for this machine's own clients.
    """

    def __init__(self, app: Asgi) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers", ()))
            host = headers.get(b"host", b"").decode("latin-1")
            origin = headers.get(b"origin", b"").decode("latin-1")
            if b"host" in headers and not is_loopback(_hostname(host)):  # none at all: not a browser
                await send_json(
                    send,
                    403,
                    f"refused: Host {host!r} is not this machine (DNS rebinding?); "
                    "a proxy needs service.auth_token set",
                )
                return
            if origin and not _same_service(origin, host):
                await send_json(send, 403, f"refused: requests from web pages ({origin}) are not accepted")
                return
            relayed = next((name for name in PROXY_HEADERS if name in headers), None)
            if relayed is not None:
                await send_json(
                    send,
                    403,
                    f"refused: the request came through a proxy ({relayed.decode()} header); "
                    "a service reached through a proxy needs service.auth_token set",
                )
                return
        await self.app(scope, receive, send)


def _same_service(origin: str, host: str) -> bool:
    """Whether a page's `Origin` is this service's own (Studio): a loopback name on the port the
    request came to. A page served by another local server (a dev server on :3000) is a web page like
    any other, though its host is loopback too."""
    scheme, _, authority = origin.partition("://")
    default = "443" if scheme == "https" else "80"
    return is_loopback(_hostname(authority)) and _port(authority, default) == _port(host, default)


def _port(authority: str, default: str) -> str:
    match = _AUTHORITY.fullmatch(authority)
    return (match["port"] or default) if match else ""


def _hostname(authority: str) -> str:
    """`127.0.0.1:2333` → `127.0.0.1`, `[::1]:2333` → `::1`, `localhost` → `localhost`; "" (no
    host, never loopback) for any other shape, such as `[::1]evil.com` or `127.0.0.1:80@evil.com`,
    so that no lenient reading lets a foreign name pass for this machine."""
    match = _AUTHORITY.fullmatch(authority)
    return (match["ipv6"] or match["name"]) if match else ""


async def _send_unauthorized(send: Send) -> None:
    await send_json(
        send,
        401,
        f"missing or invalid access token: send 'Authorization: Bearer <token>' (the CLI sends ${ENV_TOKEN})",
        [(b"www-authenticate", b"Bearer")],
    )


async def send_json(
    send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"success": False, "answer": message, "metadata": {}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})

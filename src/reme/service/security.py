"""Access control shared by the HTTP and MCP services: the bind rule and a bearer-token gate.

A service on loopback is reachable only from this machine; anything else exposes the user's notes,
so binding it needs a token, and once a token exists every request must present it.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
from collections.abc import Mapping
from typing import Any

ENV_TOKEN = "REME_API_TOKEN"


class ServiceConfigError(ValueError):
    """The service configuration is unsafe or incomplete; the message says what to set."""


def resolve_token(service_config: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str | None:
    """`service.auth_token`, else `REME_API_TOKEN`, else None (empty values count as unset)."""
    env = os.environ if environ is None else environ
    token = service_config.get("auth_token") or env.get(ENV_TOKEN) or None
    return str(token) if token is not None else None


def is_loopback(host: str) -> bool:
    if host == "localhost":
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

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await _send_unauthorized(send)
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: dict[str, Any]) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                return secrets.compare_digest(value, self._expected)
        return False


async def _send_unauthorized(send: Any) -> None:
    body = json.dumps(
        {
            "success": False,
            "answer": f"missing or invalid access token: send 'Authorization: Bearer <token>' "
            f"(the CLI sends ${ENV_TOKEN})",
            "metadata": {},
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b"Bearer"),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})

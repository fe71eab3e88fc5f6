"""Browser sessions: a login with the access token yields an opaque session id and a CSRF token.

The session id travels only in an `HttpOnly`, `SameSite=Strict` cookie; the CSRF token is handed to
the page and must come back in a header on every state-changing request, which a page on another
site can neither read nor forge. Sessions live in memory: a restart logs the browser out.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

COOKIE = "reme_studio"
CSRF_HEADER = "x-reme-csrf"
LIFETIME_S = 12 * 3600
MAX_SESSIONS = 256  # the oldest is forgotten beyond this, so logins cannot grow memory without bound


@dataclass(frozen=True)
class Session:
    sid: str
    csrf: str
    created: float


class Sessions:
    def __init__(self) -> None:
        self._by_id: dict[str, Session] = {}

    def create(self) -> Session:
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), time.monotonic())
        self._by_id[session.sid] = session
        while len(self._by_id) > MAX_SESSIONS:
            self._by_id.pop(next(iter(self._by_id)))
        return session

    def get(self, sid: str | None) -> Session | None:
        session = self._by_id.get(sid or "")
        if session is None:
            return None
        if time.monotonic() - session.created > LIFETIME_S:
            self._by_id.pop(session.sid, None)
            return None
        return session

    def drop(self, sid: str) -> None:
        self._by_id.pop(sid, None)

    def from_headers(self, headers: list[tuple[bytes, bytes]]) -> Session | None:
        return self.get(cookie_value(headers, COOKIE))

    @staticmethod
    def csrf_ok(session: Session, headers: list[tuple[bytes, bytes]]) -> bool:
        sent = next((v for k, v in headers if k == CSRF_HEADER.encode()), b"")
        return secrets.compare_digest(sent, session.csrf.encode())


def cookie_value(headers: list[tuple[bytes, bytes]], name: str) -> str | None:
    for key, value in headers:
        if key != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            key_part, _, val = part.strip().partition("=")
            if key_part == name:
                return val
    return None


def set_cookie(session: Session, secure: bool) -> str:
    flags = "; Secure" if secure else ""
    return f"{COOKIE}={session.sid}; Path=/; HttpOnly; SameSite=Strict; Max-Age={LIFETIME_S}{flags}"


def clear_cookie() -> str:
    return f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"

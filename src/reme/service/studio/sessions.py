"""Browser sessions: a login with the access token yields an opaque session id and a CSRF token.

The session id travels only in an `HttpOnly`, `SameSite=Strict` cookie, never in a URL; the CSRF
token is handed to the page and must come back in a header on every state-changing request, which a
page on another site can neither read nor forge. Each session has its own CSRF token, so both rotate
together. A login revokes every session the request presented (a cookie planted before it, e.g. by
a page on another port of the same host, cannot stay valid: no session fixation). Sessions live in
memory: a restart logs the browser out.
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
        """The first live session among the request's cookies (a browser may send several of one name)."""
        return next((s for sid in cookie_values(headers, COOKIE) if (s := self.get(sid))), None)

    def revoke_presented(self, headers: list[tuple[bytes, bytes]]) -> None:
        """Forget every session id the request carries, live or not, so none outlives a login or logout."""
        for sid in cookie_values(headers, COOKIE):
            self.drop(sid)

    @staticmethod
    def csrf_ok(session: Session, headers: list[tuple[bytes, bytes]]) -> bool:
        sent = next((v for k, v in headers if k == CSRF_HEADER.encode()), b"")
        return secrets.compare_digest(sent, session.csrf.encode())


def cookie_values(headers: list[tuple[bytes, bytes]], name: str) -> list[str]:
    """Every value of cookie `name`, in the order sent: one per Path or domain the browser holds."""
    found: list[str] = []
    for key, value in headers:
        if key != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            key_part, _, val = part.strip().partition("=")
            if key_part == name and val:
                found.append(val)
    return found


def set_cookie(session: Session, secure: bool) -> str:
    flags = "; Secure" if secure else ""
    return f"{COOKIE}={session.sid}; Path=/; HttpOnly; SameSite=Strict; Max-Age={LIFETIME_S}{flags}"


def clear_cookie() -> str:
    return f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"

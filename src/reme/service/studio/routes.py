"""Studio's own routes: the page, its assets, login/logout and the change stream.

Nothing here reads or writes notes: the page does that through the job endpoints. Asset names are
looked up in the packaged folder's listing, so no request path reaches any other file.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from reme.service.http import read_body
from reme.service.studio.events import ChangeFeed
from reme.service.studio.sessions import Session, Sessions, clear_cookie, set_cookie

MEDIA_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml"}
MAX_LOGIN_BYTES = 4096
FAILED_LOGIN_DELAY_S = 0.5


def packaged_assets() -> dict[str, tuple[bytes, str]]:
    """Every file shipped in `studio/assets`, by name, with its media type (read once at start)."""
    folder = resources.files("reme.service.studio") / "assets"
    found = {}
    for entry in folder.iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in MEDIA_TYPES:
            found[entry.name] = (entry.read_bytes(), MEDIA_TYPES[suffix])
    return found


def _page(assets: dict[str, tuple[bytes, str]], session: Session) -> HTMLResponse:
    html = assets["index.html"][0].decode().replace("{{csrf}}", session.csrf)
    return HTMLResponse(html, headers={"Cache-Control": "no-store"})


def _login_page(assets: dict[str, tuple[bytes, str]], failed: bool) -> HTMLResponse:
    html = assets["login.html"][0].decode()
    html = html.replace("{{error_class}}", "error" if failed else "error hidden")
    return HTMLResponse(html, status_code=401 if failed else 200, headers={"Cache-Control": "no-store"})


def _same_origin(request: Request) -> bool:
    """A login form posted from another site (login CSRF) shows a foreign Origin."""
    origin = request.headers.get("origin")
    return origin is None or origin == "null" or urlsplit(origin).netloc == request.headers.get("host")


def mount_studio(
    api: FastAPI, workspace: Path, token: str | None, sessions: Sessions, closing: threading.Event
) -> None:
    """Add Studio's routes to `api` (the job routes' app); `sessions` is shared with the gate."""
    assets = packaged_assets()
    feed = ChangeFeed(workspace, closing)

    async def page(request: Request) -> Response:
        session = sessions.from_headers(request.headers.raw)  # the gate's reading of the cookies
        if session is not None:
            return _page(assets, session)
        if token:
            return _login_page(assets, failed=False)
        if request.headers.get("sec-fetch-dest", "document") != "document":
            # an <img> or script of another page must not mint sessions (and push out the user's)
            return Response("open Studio as a page", status_code=403, media_type="text/plain")
        session = sessions.create()  # loopback without a token: the machine's user is the user
        response = _page(assets, session)
        response.headers["set-cookie"] = set_cookie(session, request.url.scheme == "https")
        return response

    async def asset(name: str) -> Response:
        found = assets.get(name)
        if found is None or name.endswith(".html"):
            return Response("no such Studio asset", status_code=404, media_type="text/plain")
        return Response(found[0], media_type=found[1], headers={"Cache-Control": "no-cache"})

    async def login(request: Request) -> Response:
        body = await read_body(request, MAX_LOGIN_BYTES) if _same_origin(request) else None
        if body is None:
            return Response("refused", status_code=403, media_type="text/plain")
        sent = (parse_qs(body.decode("utf-8", "replace")).get("token") or [""])[0]
        if not token or not secrets.compare_digest(sent.encode(), token.encode()):
            await asyncio.sleep(FAILED_LOGIN_DELAY_S)
            return _login_page(assets, failed=True)
        sessions.revoke_presented(request.headers.raw)  # a fresh session, never one set before login
        session = sessions.create()
        response = RedirectResponse("/studio", status_code=303)
        response.headers["set-cookie"] = set_cookie(session, request.url.scheme == "https")
        return response

    async def logout(request: Request) -> Response:
        sessions.revoke_presented(request.headers.raw)
        response = RedirectResponse("/studio", status_code=303)
        response.headers["set-cookie"] = clear_cookie()
        return response

    async def events() -> Response:
        return StreamingResponse(
            feed.stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    for path in ("/studio", "/studio/"):
        api.add_api_route(path, page, methods=["GET"], include_in_schema=False)
    api.add_api_route("/studio/assets/{name}", asset, methods=["GET"], include_in_schema=False)
    api.add_api_route("/studio/login", login, methods=["POST"], include_in_schema=False)
    api.add_api_route("/studio/logout", logout, methods=["POST"], include_in_schema=False)
    api.add_api_route("/studio/events", events, methods=["GET"], include_in_schema=False)

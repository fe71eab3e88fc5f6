"""Which workspace a service serves: every answer names it, and a client may demand it.

A client told `workspace_dir=` sends the folder it means in `X-ReMe-Workspace`; a service serving
another folder refuses with 409 before any job runs, so nothing lands in the wrong workspace. Every
answer carries the service's own folder in the same header, so the client can check it as well.
Values are JSON strings (ASCII-escaped), which keeps any path a valid header. Standard library
only: the CLI imports this on every call.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from reme.jsontypes import parse_json

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "x-reme-workspace"


def encode(path: str | os.PathLike[str]) -> str:
    return json.dumps(str(path))


def decode(value: str | bytes | None) -> str | None:
    """The path in a header value, or None when absent or not a JSON string."""
    if value is None:
        return None
    try:
        path = parse_json(value)
    except ValueError:
        return None
    return path if isinstance(path, str) else None


def resolve(path: str | os.PathLike[str]) -> str:
    """The absolute, symlink-free form a client sends (`~` expanded, relative to its own folder)."""
    return os.path.realpath(os.path.expanduser(os.fspath(path)))


def same_workspace(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    if resolve(a) == resolve(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


class WorkspaceIdentity:
    """ASGI middleware: names the workspace on every answer; refuses requests meant for another one."""

    def __init__(self, app: ASGIApp, workspace: str | os.PathLike[str]) -> None:
        self.app = app
        self.workspace = resolve(workspace)
        self._header = (HEADER.encode(), encode(self.workspace).encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        wanted = decode(dict(scope.get("headers", ())).get(HEADER.encode()))
        if wanted is not None and not same_workspace(wanted, self.workspace):
            await self._refuse(send, wanted)
            return

        async def named(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), self._header]}
            await send(message)

        await self.app(scope, receive, named)

    async def _refuse(self, send: Send, wanted: str) -> None:
        message = (
            f"this service serves workspace {self.workspace}, not {wanted}; nothing was done. "
            f"Start a service for it with `reme start workspace_dir={wanted}`"
        )
        body = json.dumps({"success": False, "answer": message, "metadata": {}}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 409, "headers": [*headers, self._header]})
        await send({"type": "http.response.body", "body": body})

"""Starting the configured service: checks, application lifecycle, uvicorn, the service file.

Order matters: unsafe configurations are refused before anything starts; the service file is
written only once the socket listens (so a client that finds it can connect) and removed on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import uvicorn

from reme.app.application import Application
from reme.jsontypes import JSONObject
from reme.service.lifecycle import already_running, describe, port_holder
from reme.service.security import Asgi, LoopbackGuard, ServiceConfigError, is_loopback
from reme.service.service_info import MCP_PATHS, ServiceInfo, remove_service_file, write_service_file
from reme.service.settings import service_settings


class _Server(uvicorn.Server):
    """uvicorn re-raises a caught SIGINT/SIGTERM after shutdown, which would end the process before
    reme removes its service file and closes components; here a signal only asks for shutdown.

    uvicorn waits for requests in flight before shutting down, so a signal also asks long work (a
    reindex) to end at its next consistent point: `on_exit`.
    """

    on_exit: Callable[[], None] | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.on_exit is not None:
            self.on_exit()
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


def interrupt_work(app: Application) -> None:
    """Ask every component to end long-running work (a rebuild, a reconcile) at a consistent point."""
    for component in app.components.values():
        component.interrupt()


def bind_socket(host: str, port: int) -> socket.socket:
    """Listen before announcing: a busy port is a clear error naming who holds it, and port 0 picks a free one."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ServiceConfigError(f"cannot resolve service.host {host!r}: {exc}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        holder = (
            f"it is taken by {port_holder(host, port)}" if exc.errno == errno.EADDRINUSE else exc.strerror
        )
        raise ServiceConfigError(
            f"cannot listen on {host}:{port}: {holder}; choose another port with service.port=..."
        ) from None
    return sock


def refuse_second_service(workspace_dir: Path, port: int) -> None:
    """`reme start` again on a workspace whose service already listens on that port says which one runs.

    Another port (`service.port=`, 0 included) is a deliberate second service: several may share a
    workspace, since writes are serialised across processes.
    """
    running = already_running(workspace_dir)
    if running is not None and running.port == port:
        raise ServiceConfigError(
            f"a reme service already runs for workspace {workspace_dir} ({describe(running)}); "
            f"use it as it is, or stop it first with `reme stop workspace_dir={workspace_dir}`"
        )


def connectable_host(host: str) -> str:
    """The address a local client should dial: a wildcard bind is reached through loopback."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


async def serve_asgi(
    asgi: Asgi,
    sock: socket.socket,
    workspace_dir: Path,
    info: ServiceInfo,
    stop: asyncio.Event | None = None,
    on_exit: Callable[[], None] | None = None,
) -> None:
    """Run uvicorn on a bound socket until a signal (or `stop`); the service file exists exactly while it serves."""
    server = _Server(uvicorn.Config(asgi, log_level="warning", access_log=False, lifespan="auto"))
    server.on_exit = on_exit
    info = info._replace(
        host=connectable_host(info.host),
        port=sock.getsockname()[1],
        pid=os.getpid(),
        workspace_dir=str(workspace_dir),
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    watcher = asyncio.create_task(_exit_on(stop, server)) if stop is not None else None
    try:
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            write_service_file(workspace_dir, info)
            where = f"{info.url}{info.path or ''}"
            print(
                f"reme: {info.backend} service on {where} (workspace {workspace_dir})",
                file=sys.stderr,
                flush=True,
            )
        await task
    finally:
        if watcher is not None:
            watcher.cancel()
        remove_service_file(workspace_dir, os.getpid())
        sock.close()


async def _exit_on(stop: asyncio.Event, server: _Server) -> None:
    await stop.wait()
    if server.on_exit is not None:
        server.on_exit()
    server.should_exit = True


async def run_service(config: JSONObject, stop: asyncio.Event | None = None) -> None:
    """Start the application and serve it with the configured backend until a signal or `stop`."""
    settings = service_settings(config)
    if not settings.uses_stdio:
        workspace_dir = Path(str(config.get("workspace_dir") or ".reme")).expanduser().resolve()
        refuse_second_service(workspace_dir, settings.port)
    sock = None if settings.uses_stdio else bind_socket(settings.host, settings.port)
    app = Application(config)
    try:
        if sock is None:
            from reme.service.mcp import serve_stdio

            await serve_stdio(app)
            return
        await app.start(background=True)
        closing = threading.Event()  # set on a stop signal: Studio's event streams end
        info = ServiceInfo(host=settings.host, port=settings.port, backend=settings.backend)
        asgi: Asgi
        if settings.backend == "http":
            from reme.service.http import build_http_app

            asgi = build_http_app(app, settings.token, closing)
        else:
            from reme.service.mcp import build_mcp_asgi_app

            path = settings.path or MCP_PATHS[settings.transport]
            asgi = build_mcp_asgi_app(app, settings.transport, path, settings.token)
            info = info._replace(transport=settings.transport, path=path)
        if is_loopback(settings.host) and not settings.token:
            asgi = LoopbackGuard(asgi)  # with a token, forged requests already fail (no Authorization)

        def on_exit() -> None:
            closing.set()
            interrupt_work(app)

        await serve_asgi(asgi, sock, app.workspace_dir, info, stop, on_exit=on_exit)
    finally:
        if sock is not None:
            sock.close()
        await app.close()

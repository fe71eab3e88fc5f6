"""A workspace's service over its life: `reme stop`, a second `reme start`, a port someone else holds.

The workspace's service file (`metadata/service.json`, written by the service once it listens)
is the one record of which process serves a workspace: `reme stop` signals that process and waits
for the file to go; `reme start` refuses to start a second network service beside it; a port that
cannot be bound is named as taken by a reme service (which workspace) or by another program.
Standard library only: `reme stop` must not load the application.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from reme.service.service_info import ServiceInfo, pid_alive, recorded_service, service_file

STOP_WAIT_SECONDS = 30.0  # a service finishing a request or a reindex batch before it exits


def _is_reme(pid: int) -> bool:
    """Whether the process looks like a reme service (a recycled pid must not be signalled).

    Linux shows a process's command line in /proc; elsewhere the pid is trusted as recorded.
    """
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read().split(b"\0")
    except FileNotFoundError:
        return not os.path.isdir("/proc/self")  # no /proc at all: cannot tell, trust the file
    except OSError:
        return True
    return any(b"reme" in os.path.basename(word) for word in words[:3]) and b"start" in words


def already_running(workspace_dir: str | os.PathLike[str]) -> ServiceInfo | None:
    """The live service recorded in this workspace, if any."""
    info, _ = recorded_service(workspace_dir)
    return info if info is not None and (info.pid is None or _is_reme(info.pid)) else None


def describe(info: ServiceInfo) -> str:
    """`pid 123, http://127.0.0.1:2333` (the endpoint path for an MCP service)."""
    where = f"{info.url}{info.path or ''}"
    return f"pid {info.pid}, {where}" if info.pid is not None else where


def stop(workspace_dir: str | os.PathLike[str], wait: float = STOP_WAIT_SECONDS) -> tuple[int, str]:
    """Stop the service recorded in the workspace: SIGTERM, then wait for its service file to go.

    Returns the exit status and the sentence to print. No service running is not an error (status
    0: what was asked holds); a stale file left by a killed service is removed and reported.
    """
    workspace_dir = os.path.abspath(os.path.expanduser(os.fspath(workspace_dir)))
    path = service_file(workspace_dir)
    info, why = recorded_service(workspace_dir)
    if info is None:
        if why is not None and "has exited" in why:
            with contextlib.suppress(OSError):
                os.unlink(path)
            return 0, f"no reme service runs for workspace {workspace_dir}: {why}; removed the stale {path}"
        return (
            0,
            f"no reme service runs for workspace {workspace_dir} ({why or f'no {path}'}); nothing to stop",
        )
    if info.pid is None:
        return 1, f"{path} names no pid; stop the service at {info.url} where it was started"
    if not _is_reme(info.pid):
        return 1, (
            f"{path} names pid {info.pid}, which is not a reme service now; nothing was signalled. "
            f"Remove {path} if no service runs there"
        )
    try:
        os.kill(info.pid, signal.SIGTERM)
    except ProcessLookupError:
        return 0, f"the reme service of workspace {workspace_dir} (pid {info.pid}) had already exited"
    except PermissionError:
        return 1, f"not allowed to stop pid {info.pid} (another user's process); stop it as that user"
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if recorded_service(workspace_dir)[0] is None or not pid_alive(info.pid):
            return 0, f"stopped the reme service of workspace {workspace_dir} ({describe(info)})"
        time.sleep(0.05)
    return 1, (
        f"the reme service of workspace {workspace_dir} ({describe(info)}) has not exited after {wait:.0f} s; "
        f"it may be finishing long work — try again, or `kill {info.pid}`"
    )


def port_holder(host: str, port: int) -> str:
    """Who holds a port reme could not bind: a reme service (which workspace) or another program."""
    from reme.service.client import ServiceUnreachable, call_job
    from reme.service.runner import connectable_host  # loaded already: only a starting service asks

    probe = ServiceInfo(host=connectable_host(host), port=port)
    try:
        reply = call_job(probe, "version", {}, None, None, timeout=2.0)
    except (ServiceUnreachable, OSError, ValueError):
        return "another program (not a reme service)"
    if reply.workspace is not None:
        return f"a reme service of workspace {reply.workspace}"
    return "another program (not a reme service)"

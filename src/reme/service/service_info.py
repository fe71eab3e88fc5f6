"""Where a running service can be reached: the service file and the CLI's discovery order.

A starting service writes `metadata/service.json` (`host, port, backend, pid, workspace_dir`)
into its workspace so that `reme <job>` run in that folder finds it without flags; it removes the
file on exit. Discovery order (docs/workspaces.md): explicit `host=`/`port=`, the
`REME_SERVICE_INFO` environment variable, else the service file of the workspace the command acts
on: `workspace_dir=`, else `$REME_WORKSPACE_DIR`, else the nearest `.reme/` of the current folder
or a parent, else the user's `~/.reme`. A workspace without a live service is an error, never a
fall-back to the default address: that would answer from whatever workspace happens to run there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import NamedTuple

from reme.jsontypes import JSONValue

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 2333
DEFAULT_WORKSPACE = ".reme"
SERVICE_FILE = os.path.join("metadata", "service.json")
ENV_SERVICE_INFO = "REME_SERVICE_INFO"
MCP_PATHS = {"sse": "/sse", "streamable-http": "/mcp"}  # default endpoint of each network transport
# The largest request body a service reads, over HTTP and MCP alike: above the largest file the file
# jobs accept (16 MiB of text, base64 overhead included), far below memory.
MAX_BODY_BYTES = 64 * 2**20
FILE_MODE = 0o644  # readable by all (clients of other users may look), written by the service's user only

# A NamedTuple rather than a dataclass: `dataclasses` alone costs the CLI more than its request.


class ServiceInfo(NamedTuple):
    """Address of a service and where that address came from (for error messages)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    backend: str = "http"
    transport: str | None = None
    path: str | None = None
    pid: int | None = None
    workspace_dir: str | None = None
    source: str = "default address"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def to_file_dict(self) -> dict[str, str | int]:
        return {k: v for k, v in self._asdict().items() if k != "source" and v is not None}


def service_file(workspace_dir: str | os.PathLike[str]) -> str:
    return os.path.join(os.path.expanduser(os.fspath(workspace_dir)), SERVICE_FILE)  # `workspace_dir=~/notes`


def write_service_file(workspace_dir: str | os.PathLike[str], info: ServiceInfo) -> str:
    """Write the service file atomically (temporary file + rename)."""
    path = service_file(workspace_dir)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(
        os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "w", encoding="utf-8"
    ) as handle:
        if os.name == "posix":  # whatever the umask: a file others may change is not believed
            os.fchmod(handle.fileno(), FILE_MODE)
        handle.write(json.dumps(info.to_file_dict(), indent=2) + "\n")
    os.replace(tmp, path)
    return path


class UntrustedFile(ValueError):
    """A service file another user wrote or may rewrite: believing it would send the CLI's token
    and the notes it carries to a port of that user's choosing."""


def _read_service(path: str) -> tuple[JSONValue, int | None]:
    """The file's JSON and its owner's uid (None where there are no owners); UntrustedFile when
    another user (root aside) owns it. Its mode is not judged: the service writes it 0644, and on a
    file system without modes (a Windows drive under WSL: every file 0777) a mode check would hide
    every service."""
    with open(path, encoding="utf-8") as handle:
        owner = _check_owner(os.fstat(handle.fileno()))
        value: JSONValue = json.load(handle)
    return value, owner


def _check_owner(stat: os.stat_result) -> int | None:
    if os.name != "posix":
        return None
    if stat.st_uid not in (os.getuid(), 0):
        raise UntrustedFile(f"it belongs to another user (uid {stat.st_uid}); remove it")
    return stat.st_uid


def remove_service_file(workspace_dir: str | os.PathLike[str], pid: int) -> None:
    """Remove the service file if it is still ours (another service may have replaced it)."""
    path = service_file(workspace_dir)
    try:
        recorded, _ = _read_service(path)
        if isinstance(recorded, dict) and recorded.get("pid") == pid:
            os.unlink(path)
    except (OSError, ValueError):
        pass


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user counts)."""
    return _process_state(pid) != "exited"


def _process_state(pid: int) -> str:
    """`exited`, `ours` (we may signal it) or `foreign` (another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "exited"
    except PermissionError:
        return "foreign"
    return "ours"


def _from_mapping(data: JSONValue, source: str) -> ServiceInfo:
    raw = data.get("port") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(raw, int | str):
        raise ValueError(f"{source}: expected a JSON object with at least 'port'")
    try:
        port = int(raw)
    except ValueError:
        raise ValueError(f"{source}: port {raw!r} is not a number") from None
    if not 0 < port < 65536:  # else "connection refused", as if no service ran there
        raise ValueError(f"{source}: port {port} is out of range (1 to 65535)")
    pid = data.get("pid")
    return ServiceInfo(
        host=str(data.get("host") or DEFAULT_HOST),
        port=port,
        backend=str(data.get("backend") or "http"),
        transport=_text(data.get("transport")),
        path=_text(data.get("path")),
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        workspace_dir=_text(data.get("workspace_dir")),
        source=source,
    )


def _text(value: JSONValue) -> str | None:
    return value if isinstance(value, str) else None


class NoService(Exception):
    """No live service is recorded for the workspace the command acts on."""


def recorded_service(workspace_dir: str | os.PathLike[str]) -> tuple[ServiceInfo | None, str | None]:
    """The live service recorded in a workspace, else None and why (None when no file is there)."""
    path = service_file(workspace_dir)
    try:
        data, owner = _read_service(path)
        info = _from_mapping(data, path)
    except FileNotFoundError:
        return None, None
    except UntrustedFile as exc:
        return None, f"{path} is not trusted: {exc}"
    except (OSError, ValueError) as exc:
        return None, f"{path} is unreadable ({exc})"
    if info.pid is not None and _gone(info.pid, owner):
        return None, f"the service recorded in {path} (pid {info.pid}) has exited"
    return info, None


def _gone(pid: int, owner: int | None) -> bool:
    """Whether the recorded process is no longer the service: it exited, or the file is ours and
    its pid now belongs to another user's process (the number was reused)."""
    state = _process_state(pid)
    return state == "exited" or (state == "foreign" and owner is not None and owner == os.getuid())


def read_service_file(workspace_dir: str | os.PathLike[str]) -> ServiceInfo | None:
    """The service recorded in a workspace, or None when absent, unreadable or its process is gone."""
    return recorded_service(workspace_dir)[0]


def default_workspace(environ: Mapping[str, str] | None = None, cwd: str | None = None) -> str:
    """The workspace a command acts on without `workspace_dir=`: `$REME_WORKSPACE_DIR`, else the
    nearest `.reme/` folder of `cwd` or one of its parents, else the user's `~/.reme` (the default
    `reme install claude-code` and the plugin use too)."""
    env = os.environ if environ is None else environ
    if env.get("REME_WORKSPACE_DIR"):
        return env["REME_WORKSPACE_DIR"]
    folder = os.path.abspath(cwd or os.getcwd())
    while True:
        candidate = os.path.join(folder, DEFAULT_WORKSPACE)
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.path.join(os.path.expanduser("~"), DEFAULT_WORKSPACE)
        folder = parent


def discover(
    host: str | None = None,
    port: int | str | None = None,
    workspace_dir: str | os.PathLike[str] | None = None,
    environ: dict[str, str] | None = None,
) -> ServiceInfo:
    """Resolve the service address in the documented order; raise ValueError on a bad env value,
    NoService when no live service is recorded for the workspace (`workspace_dir`, else the default)."""
    if host is not None or port is not None:
        return _from_mapping(
            {"host": host or DEFAULT_HOST, "port": port if port is not None else DEFAULT_PORT},
            "host=/port= arguments",
        )
    env = os.environ if environ is None else environ
    if env.get(ENV_SERVICE_INFO):
        try:
            data = json.loads(env[ENV_SERVICE_INFO])
        except ValueError as exc:
            raise ValueError(f"{ENV_SERVICE_INFO} is not valid JSON: {exc}") from None
        return _from_mapping(data, f"{ENV_SERVICE_INFO} environment variable")
    folder = default_workspace(env) if workspace_dir is None else workspace_dir
    found, why = recorded_service(folder)
    if found is None:
        raise NoService(
            f"no reme service runs for workspace {folder} ({why or f'no {service_file(folder)}'})"
        )
    return found

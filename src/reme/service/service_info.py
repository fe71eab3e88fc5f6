"""Where a running service can be reached: the service file and the CLI's discovery order.

A starting service writes `metadata/service.json` (`host, port, backend, pid`) into its workspace
so that `reme <job>` run in that folder finds it without flags; it removes the file on exit.
Discovery order: explicit `host=`/`port=`, the `REME_SERVICE_INFO` environment variable, the
service file of `workspace_dir=` (or the default workspace `.reme/` of the current folder), then
the default address.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 2333
DEFAULT_WORKSPACE = ".reme"
SERVICE_FILE = Path("metadata") / "service.json"
ENV_SERVICE_INFO = "REME_SERVICE_INFO"
MCP_PATHS = {"sse": "/sse", "streamable-http": "/mcp"}  # default endpoint of each network transport


@dataclass(frozen=True)
class ServiceInfo:
    """Address of a service and where that address came from (for error messages)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    backend: str = "http"
    transport: str | None = None
    path: str | None = None
    pid: int | None = None
    source: str = field(default="default address", compare=False)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def to_file_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("source")
        return {key: value for key, value in data.items() if value is not None}


def service_file(workspace_dir: str | os.PathLike[str]) -> Path:
    return Path(workspace_dir) / SERVICE_FILE


def write_service_file(workspace_dir: str | os.PathLike[str], info: ServiceInfo) -> Path:
    """Write the service file atomically (temporary file + rename)."""
    path = service_file(workspace_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(info.to_file_dict(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def remove_service_file(workspace_dir: str | os.PathLike[str], pid: int) -> None:
    """Remove the service file if it is still ours (another service may have replaced it)."""
    path = service_file(workspace_dir)
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == pid:
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _from_mapping(data: Any, source: str) -> ServiceInfo:
    if not isinstance(data, dict) or not isinstance(data.get("port"), int | str):
        raise ValueError(f"{source}: expected a JSON object with at least 'port'")
    try:
        port = int(data["port"])
    except ValueError:
        raise ValueError(f"{source}: port {data['port']!r} is not a number") from None
    return ServiceInfo(
        host=str(data.get("host") or DEFAULT_HOST),
        port=port,
        backend=str(data.get("backend") or "http"),
        transport=data.get("transport"),
        path=data.get("path"),
        pid=data.get("pid"),
        source=source,
    )


def read_service_file(workspace_dir: str | os.PathLike[str]) -> ServiceInfo | None:
    """The service recorded in a workspace, or None when absent, unreadable or its process is gone."""
    path = service_file(workspace_dir)
    try:
        info = _from_mapping(json.loads(path.read_text(encoding="utf-8")), str(path))
    except (OSError, ValueError):
        return None
    if info.pid is not None and not _pid_alive(info.pid):
        return None
    return info


def discover(
    host: str | None = None,
    port: int | str | None = None,
    workspace_dir: str | os.PathLike[str] | None = None,
    environ: dict[str, str] | None = None,
) -> ServiceInfo:
    """Resolve the service address in the documented order; raise ValueError on a bad env value."""
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
    found = read_service_file(workspace_dir if workspace_dir is not None else DEFAULT_WORKSPACE)
    return found or ServiceInfo(source="default address")

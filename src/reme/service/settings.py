"""The `service.*` settings, validated before anything heavy is imported so a refusal is instant."""

from __future__ import annotations

from typing import NamedTuple

from reme.jsontypes import JSONObject, JSONValue
from reme.service.security import ServiceConfigError, check_bind, resolve_token

BACKENDS = ("http", "mcp")
TRANSPORTS = ("stdio", "sse", "streamable-http")
MCP_PROFILES = ("full", "read_only")  # read_only: only the tools of jobs that change nothing


class ServiceSettings(NamedTuple):
    backend: str
    transport: str
    host: str
    port: int
    token: str | None
    path: str | None

    @property
    def uses_stdio(self) -> bool:
        return self.backend == "mcp" and self.transport == "stdio"


def service_settings(config: JSONObject) -> ServiceSettings:
    """Settings from `service.*`, refusing unknown backends/transports and unsafe binds."""
    service = config.get("service") or {}
    if not isinstance(service, dict):
        raise ServiceConfigError(
            f"service must be a mapping of settings (service.backend, ...), got {service!r}"
        )
    backend = service.get("backend") or "http"
    transport = service.get("transport") or "stdio"
    profile = service.get("mcp_profile") or "full"
    if profile not in MCP_PROFILES:
        raise ServiceConfigError(
            f"service.mcp_profile must be one of {', '.join(MCP_PROFILES)}, got {profile!r}"
        )
    if backend not in BACKENDS:
        raise ServiceConfigError(f"service.backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "mcp" and transport not in TRANSPORTS:
        raise ServiceConfigError(
            f"service.transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}"
        )
    path = service.get("path")
    settings = ServiceSettings(
        backend=str(backend),
        transport=str(transport),
        host=str(service.get("host") or "127.0.0.1"),
        port=_port(service.get("port", 2333)),
        token=resolve_token(service),
        path=str(path) if path else None,
    )
    if not settings.uses_stdio:
        check_bind(settings.host, settings.token)
    return settings


def _port(value: JSONValue) -> int:
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            return int(value)
        except ValueError:
            pass
    raise ServiceConfigError(f"service.port must be a port number, got {value!r}")

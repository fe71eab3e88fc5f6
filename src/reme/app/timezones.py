"""The application timezone: a configured IANA name, else the machine's local zone."""

from __future__ import annotations

import os
from datetime import datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from reme.app.config import ConfigError


def resolve_timezone(name: str | None) -> tzinfo:
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(f"config key 'timezone': unknown IANA timezone {name!r}") from None
    return local_timezone()


def local_timezone() -> tzinfo:
    """The machine's zone as an IANA zone when it can be named, else its current fixed offset."""
    env = os.environ.get("TZ", "").lstrip(":")
    candidates = [env] if env else []
    localtime = Path("/etc/localtime")
    if localtime.is_symlink():
        target = str(localtime.resolve())
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    for candidate in candidates:
        try:
            return ZoneInfo(candidate)
        except (ZoneInfoNotFoundError, ValueError):
            continue
    return datetime.now().astimezone().tzinfo  # type: ignore[return-value]

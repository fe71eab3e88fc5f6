"""Loading the YAML configuration: packaged configs, imports, env expansion, overrides, redaction.

Precedence, lowest first: imported files, the config file itself, then overrides (dot keys such as
`service.port=8090`, or nested dicts). Dicts merge deeply; lists and scalars are replaced.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from reme.app.spelling import did_you_mean
from reme.app.values import parse_value
from reme.errors import ReMeError, UserError
from reme.jsontypes import JSONObject, JSONValue
from reme.workspace.buckets import parse_buckets
from reme.workspace.gitrepo import redact_url

PACKAGED_DIR = Path(str(resources.files("reme") / "config"))
TOP_LEVEL_KEYS = {
    "imports",
    "workspace_dir",
    "timezone",
    "service",
    "components",
    "jobs",
    "scheduler",
    "digest",
    "sync",
}
SERVICE_KEYS = {"backend", "host", "port", "auth_token", "transport", "path", "mcp_profile"}
SERVICE_TEXT_KEYS = ("backend", "host", "auth_token", "transport", "path", "mcp_profile")
SCHEDULER_KEYS = {"cron"}
DIGEST_KEYS = {"buckets"}
SYNC_KEYS = {"remote", "interval", "author"}
# `token` only as the key's last word: `auth_token` is a secret, `max_tokens` and `tokenizer` are not.
_SECRET_KEY = re.compile(r"api_?key|secret|password|authorization|token$", re.IGNORECASE)
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Bounds on a loaded config: every later walk copies each value, so an alias bomb or runaway nesting
# would otherwise hang start-up or end in a RecursionError.
MAX_VALUES = 1_000_000
MAX_DEPTH = 64
# How a value that is not text is named in an error (YAML also gives dates: `date`, `datetime`).
_TYPE_WORDS: dict[type, str] = {
    bool: "boolean",
    int: "number",
    float: "number",
    list: "list",
    dict: "mapping",
}
_YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ConfigError(UserError, ValueError):
    """A configuration problem; the message names the offending key."""


def find_config_file(name_or_path: str | Path) -> Path:
    """A path to an existing file, or the name of a packaged config (`default`)."""
    candidate = Path(name_or_path).expanduser()
    if candidate.is_file():
        return candidate
    packaged = PACKAGED_DIR / f"{name_or_path}.yaml"
    if packaged.is_file():
        return packaged
    known = ", ".join(sorted(p.stem for p in PACKAGED_DIR.glob("*.yaml")))
    raise ConfigError(f"config {str(name_or_path)!r} is neither a file nor a packaged config ({known})")


class _UniqueKeyLoader(_YAML_LOADER):  # the C loader when PyYAML was built with it
    """Refuses a key written twice in one mapping: plain YAML keeps the last one and hides the first."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[object, object]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (str, int, float, bool)):
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"found duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _read_yaml(path: Path) -> JSONObject:
    try:
        data: object = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; save the config as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config: {exc.strerror}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    _check_size(str(path), data)
    return data


def _check_size(where: str, data: JSONValue) -> None:
    """Refuse more than MAX_VALUES values (aliases expanded) or nesting deeper than MAX_DEPTH, without recursing."""
    stack: list[tuple[JSONValue, int]] = [(data, 1)]
    count = 0
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise ConfigError(f"{where}: more than {MAX_VALUES} values once aliases are expanded")
        if depth > MAX_DEPTH:
            raise ConfigError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((child, depth + 1) for child in children)


def _load_with_imports(path: Path, seen: tuple[Path, ...] = ()) -> JSONObject:
    path = path.resolve()
    if path in seen:
        raise ConfigError(f"{path}: import cycle")
    data = _read_yaml(path)
    merged: JSONObject = {}
    imports = data.pop("imports", None) or []
    if not isinstance(imports, list):
        raise ConfigError(f"{path}: imports must be a list of file names")
    for item in imports:
        for target in _import_targets(path, str(item)):
            merged = deep_merge(merged, _load_with_imports(target, (*seen, path)))
    return deep_merge(merged, data)


def _import_targets(importer: Path, item: str) -> list[Path]:
    """Files named by one `imports` entry (a glob allowed), beside the importer or packaged."""
    for base in (importer.parent, PACKAGED_DIR):
        if any(ch in item for ch in "*?["):
            matches = sorted(base.glob(item))
            if matches:
                return matches
        elif (base / item).is_file():
            return [base / item]
    if any(ch in item for ch in "*?["):
        return []
    raise ConfigError(f"{importer}: imports: file {item!r} not found")


def deep_merge(base: JSONObject, over: Mapping[str, JSONValue]) -> JSONObject:
    """Merge `over` into a copy of `base`: dicts recursively, everything else replaced."""
    result = copy.deepcopy(base)
    for key, value in over.items():
        below = result.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            result[key] = deep_merge(below, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def set_dotted(config: JSONObject, dotted: str, value: JSONValue) -> None:
    """Set `a.b.c` in nested dicts, creating missing levels."""
    parts = dotted.split(".")
    node = config
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict):
            raise ConfigError(f"cannot set {dotted!r}: {'.'.join(parts[: i + 1])!r} is not a mapping")
        node = child
    node[parts[-1]] = value


def expand_env(value: JSONValue) -> JSONValue:
    """Expand `${VAR}` and `${VAR:-default}` in every string.

    A whole-string placeholder becomes a number or boolean (`${PORT:-2333}`), unless its default is a
    string (`${REME_API_TOKEN:-}`, `${REME_WORKSPACE_DIR:-.reme}`): a token `0123` or a folder `2026`
    stays text. Typing follows the command line's rules (`parse_value`).
    """
    if isinstance(value, dict):
        return {k: expand_env(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value

    def substitute(match: re.Match[str]) -> str:
        return os.environ.get(match.group(1)) or (match.group(2) or "")

    expanded = _ENV.sub(substitute, value)
    whole = _ENV.fullmatch(value)
    if whole is None or (whole.group(2) is not None and not _is_scalar(parse_value(whole.group(2)))):
        return expanded
    typed = parse_value(expanded)
    return typed if _is_scalar(typed) else expanded


def _is_scalar(value: object) -> bool:
    return isinstance(value, (int, float, bool))


def load_config(
    config: str | Path | None = None,
    overrides: Mapping[str, JSONValue] | None = None,
    *,
    load_env_file: bool = True,
) -> dict[str, Any]:
    """The effective configuration: file (+ imports), `.env`, overrides, env expansion, checks.

    Its shape is checked (`check_config`); callers read it as plain JSON, narrowing what they use.
    """
    if load_env_file:
        from dotenv import load_dotenv

        load_dotenv(Path.cwd() / ".env", override=False)
    data = _load_with_imports(find_config_file(config or "default"))
    _check_size("config overrides", dict(overrides or {}))
    for key, value in (overrides or {}).items():
        below = data.get(key)
        if "." in key:
            set_dotted(data, key, copy.deepcopy(value))
        elif isinstance(value, dict) and isinstance(below, dict):
            data[key] = deep_merge(below, value)
        else:
            data[key] = copy.deepcopy(value)
    expanded = expand_env(data)
    assert isinstance(expanded, dict)  # expanding keeps a mapping a mapping
    check_config(expanded)
    return expanded


def check_config(data: JSONObject) -> None:
    """Refuse unknown top-level and service keys, and badly shaped sections, naming the key."""
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise ConfigError(_unknown(repr(key), str(key), TOP_LEVEL_KEYS))
    service = data.setdefault("service", {})
    if not isinstance(service, dict):
        raise ConfigError("config key 'service' must be a mapping")
    for key in service:
        if key not in SERVICE_KEYS:
            raise ConfigError(_unknown(f"'service.{key}'", str(key), SERVICE_KEYS))
    for key in SERVICE_TEXT_KEYS:
        _check_text(f"service.{key}", service.get(key))
    port = service.get("port", 2333)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise ConfigError(f"config key 'service.port' must be a port number, got {port!r}")
    for section in ("components", "jobs"):
        block = data.setdefault(section, {})
        if not isinstance(block, dict):
            raise ConfigError(f"config key {section!r} must be a mapping")
        for name, spec in block.items():
            if spec is not None and not isinstance(spec, dict):
                raise ConfigError(f"config key '{section}.{name}' must be a mapping")
            if section == "components" and spec and not isinstance(spec.get("enabled", True), bool):
                raise ConfigError(
                    f"config key 'components.{name}.enabled' must be true or false, got {spec['enabled']!r}"
                )
    workspace_dir = data.get("workspace_dir", ".reme")
    if workspace_dir is None:
        raise ConfigError("config key 'workspace_dir' must be a path")
    if not isinstance(workspace_dir, Path):  # the Python API may pass a Path
        _check_text("workspace_dir", workspace_dir, "a path")
    _check_text("timezone", data.get("timezone"), "an IANA name such as 'Europe/Paris'")
    scheduler = _section(data, "scheduler", SCHEDULER_KEYS)
    if not isinstance(scheduler.get("cron", True), bool):
        raise ConfigError(f"config key 'scheduler.cron' must be true or false, got {scheduler['cron']!r}")
    _check_sync(_section(data, "sync", SYNC_KEYS))
    digest = _section(data, "digest", DIGEST_KEYS)
    if "buckets" in digest:
        try:
            digest["buckets"] = [dict(bucket.to_dict()) for bucket in parse_buckets(digest["buckets"])]
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


def _check_text(where: str, value: JSONValue, what: str = "text") -> None:
    """Refuse a non-text value for a text setting: YAML reads an unquoted `0123` as 83, `1_000` as 1000
    and `yes` as true, so turning it back into a string would not give what the user wrote."""
    if value is None or isinstance(value, str):
        return
    kind = _TYPE_WORDS.get(type(value), type(value).__name__)
    if isinstance(value, (dict, list)):
        raise ConfigError(f"config key {where!r} must be {what}, got a {kind}")
    shown = f"a {kind}" if _SECRET_KEY.search(where) else repr(value)  # a secret is never echoed
    leaf = where.rpartition(".")[2]
    raise ConfigError(
        f'config key {where!r} must be {what}, got {shown}: quote it ({leaf}: "..." in the file, '
        f"{where}='\"...\"' on the command line, ${{VAR:-}} for a placeholder); unquoted, YAML reads "
        "0123, 1_000 or yes as a number or a boolean"
    )


def _check_sync(sync: JSONObject) -> None:
    """`sync.remote` one URL without a password in it, `sync.interval` a cron expression and
    `sync.author` `Name <email>` (docs/spec.md §18, docs/sync.md): a bad value found at the first
    commit or push would otherwise fail every sync, or turn the scheduled one off without a word."""
    from reme.workspace.gitrepo import Identity, check_remote

    _check_text("sync.remote", sync.get("remote"), "one repository URL or path")
    _check_text("sync.author", sync.get("author"), "text of the form 'Name <email>'")
    for key in ("remote", "author"):
        if _has_control_character(sync.get(key)):
            raise ConfigError(f"config key 'sync.{key}' must be one line without control characters")
    if sync.get("remote"):
        try:
            check_remote(str(sync["remote"]))
        except ReMeError as exc:
            raise ConfigError(f"config key 'sync.remote': {exc.message}") from None
    author = sync.get("author")
    if author:
        try:
            Identity.parse(str(author), "")
        except ReMeError:
            raise ConfigError(
                f"config key 'sync.author' must look like 'Name <email>' (Ana <ana@example.org>), got {author!r}"
            ) from None
    interval = sync.get("interval")
    if interval:
        from croniter import croniter

        if not isinstance(interval, str) or not croniter.is_valid(interval):
            raise ConfigError(f"config key 'sync.interval' must be a cron expression, got {interval!r}")


def _has_control_character(value: JSONValue) -> bool:
    return isinstance(value, str) and any(ord(ch) < 32 or ord(ch) == 127 for ch in value)


def _section(data: JSONObject, key: str, known: set[str]) -> JSONObject:
    """An optional mapping section whose keys are all known; the error names the bad key."""
    section = data.get(key) or {}
    if not isinstance(section, dict):
        raise ConfigError(f"config key {key!r} must be a mapping")
    for name in section:
        if name not in known:
            raise ConfigError(_unknown(f"'{key}.{name}'", str(name), known))
    return section


def _unknown(shown: str, name: str, known: set[str]) -> str:
    """The message for an unknown key: the key, a spelling hint when one is close, the known keys."""
    return f"unknown config key {shown} (known: {', '.join(sorted(known))}){did_you_mean(name, known)}"


def redact(value: JSONValue, key: str = "") -> JSONValue:
    """A copy with secret-looking values (keys, tokens, passwords, a URL's `user:password@`) replaced by `***`."""
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    if key and _SECRET_KEY.search(key) and value not in (None, ""):
        return "***"
    return redact_url(value) if isinstance(value, str) else value

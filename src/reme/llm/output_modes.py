"""Output modes of structured agent results, and the one fallback when an endpoint refuses a mode.

`tool` (the default) makes the model call an output tool, which OpenAI-compatible clients request
with `tool_choice: "required"`; llama-cpp-python's server answers that with HTTP 500, and some
servers refuse a JSON-schema `response_format` (`native`). `prompted` asks for JSON in the
instructions and works with any server. When the first request of a run is refused
deterministically (see `wire.deterministic`), the run is tried once more in `prompted` mode; a
fallback that worked is remembered per endpoint and model, in the process and in
`settings.modes_file` (under the workspace's `metadata/`), so the next process does not pay the
refused request again. A remembered fallback holds only for the model and configured mode it was
found with: another model at the same endpoint is probed afresh.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reme.jsontypes import JSONObject
from reme.llm.settings import ModelSettings, shown_url
from reme.workspace.atomic import atomic_write

FALLBACK = {"tool": "prompted", "native": "prompted"}
MAX_ENTRIES = 64  # endpoints kept in the file; the oldest go first
log = logging.getLogger(__name__)

_accepted: dict[tuple[str, str, str, str], str] = {}
_lock = threading.Lock()


def _endpoint(settings: ModelSettings) -> str:
    """The endpoint's key in the file (in the workspace, which may be synced): no URL credentials."""
    return f"{settings.backend} {shown_url(settings.base_url)}"


def _key(settings: ModelSettings) -> tuple[str, str, str, str]:
    return (settings.backend, settings.base_url, settings.model, settings.output_mode)


def _read(path: str) -> JSONObject:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # missing or damaged: derived state, probed again
    return data if isinstance(data, dict) else {}


def mode_for(settings: ModelSettings) -> str:
    """The configured mode, or the fallback this endpoint and model were found to need."""
    with _lock:
        known = _accepted.get(_key(settings))
        if known is not None:
            return known
        if settings.modes_file:
            entry = _read(settings.modes_file).get(_endpoint(settings))
            if (
                isinstance(entry, dict)
                and entry.get("model") == settings.model
                and entry.get("configured") == settings.output_mode
                and entry.get("mode") in FALLBACK.values()
            ):
                _accepted[_key(settings)] = str(entry["mode"])
                return str(entry["mode"])
        return settings.output_mode


def remember(settings: ModelSettings, mode: str, reason: str = "") -> None:
    """Keep `mode` for this endpoint and model, in the process and in `settings.modes_file`."""
    with _lock:
        _accepted[_key(settings)] = mode
        if not settings.modes_file:
            return
        data = _read(settings.modes_file)
        data.pop(_endpoint(settings), None)
        data[_endpoint(settings)] = {
            "model": settings.model,
            "configured": settings.output_mode,
            "mode": mode,
            "reason": reason[:500],
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        kept = dict(list(data.items())[-MAX_ENTRIES:])
        try:
            path = Path(settings.modes_file)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, json.dumps(kept, ensure_ascii=False, indent=1))
        except OSError as exc:  # a read-only workspace still works: it just probes again next time
            log.warning("cannot keep the output mode in %s: %s", settings.modes_file, exc)


def forget(settings: ModelSettings | None = None) -> None:
    """Forget remembered fallbacks: all in this process, or this endpoint's (also in its file)."""
    with _lock:
        if settings is None:
            _accepted.clear()
            return
        for key in [k for k in _accepted if k[:2] == _key(settings)[:2]]:
            del _accepted[key]
        if settings.modes_file and _endpoint(settings) in (data := _read(settings.modes_file)):
            del data[_endpoint(settings)]
            try:
                atomic_write(Path(settings.modes_file), json.dumps(data, ensure_ascii=False, indent=1))
            except OSError as exc:
                log.warning("cannot update %s: %s", settings.modes_file, exc)


def output_spec(output_type: Any, mode: str) -> Any:
    """`output_type` wrapped for pydantic-ai in the given mode (plain text needs no mode)."""
    if output_type is str:
        return str
    from pydantic_ai import NativeOutput, PromptedOutput, ToolOutput

    return {"tool": ToolOutput, "native": NativeOutput, "prompted": PromptedOutput}[mode](output_type)


def is_refusal(exc: BaseException, *, asked_feature: bool = False) -> bool:
    """An HTTP error the server gives for a request it will never accept (not a passing fault).

    `asked_feature`: the request asked for a forced tool choice or a JSON-schema format, so a 500
    with no reason (llama-cpp-python's bare `assert`) counts as a refusal too.
    """
    from pydantic_ai.exceptions import ModelHTTPError

    from reme.llm.wire import deterministic

    return isinstance(exc, ModelHTTPError) and deterministic(
        exc.status_code, exc.body, asked_feature=asked_feature
    )

"""Output modes of structured agent results, and the one fallback when an endpoint refuses a mode.

`tool` (the default) makes the model call an output tool, which OpenAI-compatible clients request
with `tool_choice: "required"`; llama.cpp's server answers that with HTTP 500, and some servers
refuse a JSON-schema `response_format` (`native`). `prompted` asks for JSON in the instructions and
works with any server. When the first request of a run is refused, the run is tried once more in
`prompted` mode; a fallback that worked is remembered for that endpoint for the rest of the process.
"""

from __future__ import annotations

import threading
from typing import Any

from reme.llm.settings import ModelSettings

FALLBACK = {"tool": "prompted", "native": "prompted"}
REFUSAL_STATUSES = (400, 422, 500, 501)  # what servers answer to a tool_choice/response_format they lack

_accepted: dict[tuple[str, str, str], str] = {}
_lock = threading.Lock()


def _endpoint(settings: ModelSettings) -> tuple[str, str, str]:
    return (settings.backend, settings.base_url, settings.model)


def mode_for(settings: ModelSettings) -> str:
    """The configured mode, or the fallback this endpoint was found to need."""
    with _lock:
        return _accepted.get(_endpoint(settings), settings.output_mode)


def remember(settings: ModelSettings, mode: str) -> None:
    with _lock:
        _accepted[_endpoint(settings)] = mode


def forget() -> None:
    """Forget which endpoints needed a fallback (`reme doctor` probes afresh; tests start clean)."""
    with _lock:
        _accepted.clear()


def output_spec(output_type: Any, mode: str) -> Any:
    """`output_type` wrapped for pydantic-ai in the given mode (plain text needs no mode)."""
    if output_type is str:
        return str
    from pydantic_ai import NativeOutput, PromptedOutput, ToolOutput

    return {"tool": ToolOutput, "native": NativeOutput, "prompted": PromptedOutput}[mode](output_type)


def is_refusal(exc: BaseException) -> bool:
    """An HTTP error of the kind a server gives for a request feature it does not support."""
    from pydantic_ai.exceptions import ModelHTTPError

    return isinstance(exc, ModelHTTPError) and exc.status_code in REFUSAL_STATUSES

"""Resolved settings of one chat model, and which of them are still missing.

Kept free of pydantic-ai so that checking configuration (and `import reme`) stays cheap.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reme.jsontypes import JSONObject

BACKENDS = ("openai", "anthropic", "ollama", "scripted")
# How an agent returns structured output: a call of an output tool (`tool_choice: "required"`), the
# endpoint's JSON-schema response format, or JSON asked for in the prompt (works with any server).
OUTPUT_MODES = ("tool", "native", "prompted")
OLLAMA_DEFAULT_URL = "http://localhost:11434/v1"
ROLES = ("chat", "memory")
# Settings a role (e.g. `memory`) may override; the rest are shared by every role.
ROLE_KEYS = (
    "backend",
    "model",
    "base_url",
    "api_key",
    "timeout",
    "max_retries",
    "output_mode",
    "max_tokens",
    "run_budget",
)
# Output tokens per reply when none is configured: a chat answer is short; memory writing returns
# whole cards, dream units and proactive topic lists. A server given no limit may generate until its
# context is full (minutes on a CPU), so a limit is always sent.
DEFAULT_MAX_TOKENS = {"chat": 2048, "memory": 4096}
FALLBACK_MAX_TOKENS = 4096
MIN_MASKED_KEY = 8  # a key this long or longer is masked wherever a server quotes it back
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/?#]*@", re.IGNORECASE)
_QUERY_VALUE = re.compile(r"([?&][^=&#]*=)[^&#]*")
_HTTP_URL = re.compile(r"https?://[^/?#\s]+[^\s]*", re.IGNORECASE)
_SENDABLE_KEY = re.compile(r"[\x21-\x7e]+")  # printable ASCII without spaces: what an HTTP header can carry


def shown_url(url: str) -> str:
    """`url` as it may be logged, shown or kept on disk: `user:password@` and query values masked."""
    return _QUERY_VALUE.sub(r"\1***", _USERINFO.sub(r"\1***@", url))


def _url_problem(url: str) -> str | None:
    """Why `url` can never serve as an endpoint (the SDKs add their path after it), or None."""
    if not _HTTP_URL.fullmatch(url):
        return f"must be an http:// or https:// URL such as http://localhost:11434/v1, not {shown_url(url)!r}"
    if "?" in url or "#" in url:
        return (
            f"must have no query string or fragment (the client adds its path after it): {shown_url(url)!r}"
        )
    return None


@dataclass(frozen=True)
class ModelSettings:
    """Everything needed to build one model client; `api_key` is never logged or reported."""

    backend: str = "openai"
    model: str = ""
    base_url: str = ""
    api_key: str = field(default="", repr=False)
    timeout: float = 60.0
    max_retries: int = 2
    output_retries: int = 2
    max_steps: int = 20
    output_mode: str = "tool"
    max_tokens: int = FALLBACK_MAX_TOKENS
    run_budget: float = 600.0  # wall-clock seconds for all model requests of one job run
    modes_file: str = ""  # where the output mode that works per endpoint is kept ("" = this process only)

    def missing(self) -> str | None:
        """Name of the first setting that keeps this model from working, or None when usable."""
        if self.backend not in BACKENDS:
            return f"llm.backend (unknown backend {self.backend!r}; use one of {', '.join(BACKENDS)})"
        if self.backend == "scripted":
            return None
        if not self.model:
            return "LLM_MODEL"
        if self.backend == "anthropic" and not self.api_key:
            return "LLM_API_KEY"
        if self.backend == "openai" and not self.api_key and not self.base_url:
            return "LLM_API_KEY (or LLM_BASE_URL for a local OpenAI-compatible server)"
        if self.api_key and not _SENDABLE_KEY.fullmatch(self.api_key):
            return "LLM_API_KEY (it contains a space, a line break or a character that is not ASCII; copy the key again)"
        problem = _url_problem(self.base_url) if self.base_url else None
        return f"LLM_BASE_URL ({problem})" if problem else None

    def redacted(self, text: str) -> str:
        """`text` (a server's answer, an error) with this model's key and URL credentials masked."""
        if len(self.api_key) >= MIN_MASKED_KEY:
            text = text.replace(self.api_key, "***")
        return text.replace(self.base_url, shown_url(self.base_url)) if self.base_url else text

    def describe(self) -> JSONObject:
        """Public view for health checks: no secrets."""
        return {
            "backend": self.backend,
            "model": self.model,
            "base_url": shown_url(self.base_url) or None,
            "api_key_set": bool(self.api_key),
            "output_mode": self.output_mode,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "run_budget": self.run_budget,
            "missing": self.missing(),
        }

    def lowered(self, *, timeout: float | None = None, max_tokens: int | None = None) -> ModelSettings:
        """These settings with a pipeline's own limits applied: they may lower, never raise, the configured ones."""
        return replace(
            self,
            timeout=self.timeout if timeout is None else min(self.timeout, float(timeout)),
            max_tokens=self.max_tokens if max_tokens is None else min(self.max_tokens, int(max_tokens)),
        )


def _number(value: object, kind: type[int] | type[float], where: str, minimum: float) -> float:
    """`value` as an int or float of at least `minimum`; a ValueError naming the setting otherwise."""
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError
        number = kind(value)
        if not (math.isfinite(number) and number >= minimum) or number != float(value):
            raise ValueError  # NaN, inf, or an int setting given a fraction (`1.5` is not 1)
    except (TypeError, ValueError):
        raise ValueError(f"{where} must be a number of at least {minimum:g}, not {value!r}") from None
    return number


_NUMBERS: dict[str, tuple[type[int] | type[float], float]] = {
    "timeout": (float, 0.001),
    "max_retries": (int, 0),
    "output_retries": (int, 0),
    "max_steps": (int, 1),
    "max_tokens": (int, 1),
    "run_budget": (float, 0.001),
}


def _output_mode(value: object, where: str) -> str:
    mode = str(value)
    if mode not in OUTPUT_MODES:
        raise ValueError(f"{where} must be one of {', '.join(OUTPUT_MODES)}, not {value!r}")
    return mode


def resolve_settings(settings: Mapping[str, object], role: str | None = None) -> ModelSettings:
    """Settings of the component, with `settings[role]` (e.g. `memory`) overriding per-role keys.

    Empty role values (an unset `${LLM_MEMORY_MODEL:-}`) fall back to the shared value. A value that
    is not a valid number (or output mode) raises ValueError naming the setting (`components.llm.timeout`).
    """
    defaults = replace(
        ModelSettings(), max_tokens=DEFAULT_MAX_TOKENS.get(role or "chat", FALLBACK_MAX_TOKENS)
    )
    numbers: dict[str, Any] = {}  # each checked by `_number` for its field's kind
    for key, (kind, minimum) in _NUMBERS.items():
        value = settings.get(key)
        value = getattr(defaults, key) if value in (None, "") else value
        numbers[key] = _number(value, kind, f"components.llm.{key}", minimum)
    base = ModelSettings(
        backend=str(settings.get("backend") or "openai"),
        model=str(settings.get("model") or ""),
        base_url=str(settings.get("base_url") or "").strip(),
        api_key=str(settings.get("api_key") or "").strip(),
        output_mode=_output_mode(settings.get("output_mode") or "tool", "components.llm.output_mode"),
        modes_file=str(settings.get("modes_file") or ""),
        **numbers,
    )
    if base.backend == "ollama" and not base.base_url:
        base = replace(base, base_url=OLLAMA_DEFAULT_URL)
    overrides = settings.get(role) if role else None
    if not isinstance(overrides, dict):
        return base
    changes: dict[str, Any] = {}  # each checked for its field's kind
    for key in ROLE_KEYS:
        value = overrides.get(key)
        value = value.strip() if isinstance(value, str) else value  # an env value may keep a Windows `\r`
        if value in (None, ""):
            continue
        if key in _NUMBERS:
            kind, minimum = _NUMBERS[key]
            changes[key] = _number(value, kind, f"components.llm.{role}.{key}", minimum)
        elif key == "output_mode":
            changes[key] = _output_mode(value, f"components.llm.{role}.output_mode")
        else:
            changes[key] = str(value)
    return replace(base, **changes)

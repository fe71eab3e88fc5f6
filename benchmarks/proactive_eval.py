"""Proactive refresh over the LoCoMo development conversations, day by day.

Each conversation gets a fresh workspace; for every day note in date order the note is written as
`daily/<date>/conversation.md` and `proactive_refresh date=<date>` runs, as the 18:00 cron would.
Reported per conversation and overall: LLM calls and tokens per run, topics pushed per day, churn
(share of the previous run's pushed topics gone from the next run), duplicate-topic rate (share of
pushed topics with a lexically near-duplicate pushed the same day) and the share of pushed topics'
evidence paths that exist (must be 100%).

With `LLM_BASE_URL` (and `LLM_MODEL`, `LLM_API_KEY`) any OpenAI-compatible endpoint is used;
without, the scripted model answers with one topic per run (it measures the pipeline's own cost and
guarantees, not the quality of topics).

    .venv/bin/python benchmarks/proactive_eval.py                         # scripted model
    LLM_BASE_URL=... LLM_MODEL=... .venv/bin/python benchmarks/proactive_eval.py --days 10
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from datasets import DATA_DIR, locomo_conversations  # noqa: E402
from reme import ReMe  # noqa: E402
from reme.pipelines.proactive.topics import similarity  # noqa: E402

LEXICAL_THRESHOLD = 0.8  # the topics step's default
SCRIPT = [
    {
        "output": {
            "topics": [
                {
                    "title": "What the user is working on",
                    "reason": "the latest conversation",
                    "kind": "follow_up",
                    "confidence": 0.7,
                    "evidence_paths": ["$evidence_path"],
                }
            ],
            "resolved": [],
            "plans": [],
            "order": [],
        }
    }
]


@dataclass
class Tally:
    """What the runs of one conversation (or of all) measured."""

    runs: int = 0
    failures: int = 0
    calls: list[int] = field(default_factory=list)
    input_tokens: list[int] = field(default_factory=list)
    output_tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    pushed: list[int] = field(default_factory=list)
    churn: list[float] = field(default_factory=list)
    duplicates: list[float] = field(default_factory=list)
    paths: int = 0
    paths_existing: int = 0

    def add(self, other: Tally) -> None:
        for name, value in vars(other).items():
            setattr(self, name, getattr(self, name) + value)

    def row(self, name: str) -> str:
        def mean(values: list[float] | list[int]) -> str:
            return f"{statistics.fmean(values):.2f}" if values else "–"

        existing = f"{100 * self.paths_existing / self.paths:.1f}%" if self.paths else "–"
        return (
            f"| {name} | {self.runs} | {self.failures} | {mean(self.calls)} | {max(self.calls, default=0)} "
            f"| {mean(self.input_tokens)} | {mean(self.output_tokens)} | {mean(self.pushed)} "
            f"| {mean(self.churn)} | {mean(self.duplicates)} | {existing} | {mean(self.seconds)} |"
        )


HEADER = (
    "| conversation | runs | failed | LLM calls/run | max calls | input tokens/run | output tokens/run "
    "| topics/day | churn | duplicate rate | evidence paths existing | s/run |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def llm_overrides() -> dict[str, Any]:
    if os.environ.get("LLM_BASE_URL"):
        return {}  # the default config reads LLM_BASE_URL / LLM_MODEL / LLM_API_KEY
    os.environ.setdefault("REME_PLUGINS", "reme.testing")  # the scripted backend is opt-in (docs/testing.md)
    return {"components.llm.backend": "scripted", "components.llm.script": SCRIPT}


def _duplicate_rate(topics: list[dict[str, Any]]) -> float:
    if not topics:
        return 0.0
    titles = [t["title"] for t in topics]
    near = sum(
        any(j != i and similarity(a, b) >= LEXICAL_THRESHOLD for j, b in enumerate(titles))
        for i, a in enumerate(titles)
    )
    return near / len(titles)


async def run_conversation(notes: dict[str, str], days: int | None, workspace: Path) -> Tally:
    tally = Tally()
    previous: set[str] | None = None
    async with ReMe(workspace_dir=workspace, timezone="UTC", **llm_overrides()) as app:
        for name in sorted(notes)[:days]:
            day = Path(name).stem
            target = workspace / "daily" / day / "conversation.md"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(notes[name], encoding="utf-8")
            started = time.perf_counter()
            response = await app.run("proactive_refresh", date=day)
            tally.seconds.append(time.perf_counter() - started)
            meta = response.metadata
            tally.runs += 1
            tally.calls.append(int(meta.get("llm_calls") or 0))
            usage = meta.get("usage") or {}
            tally.input_tokens.append(int(usage.get("input_tokens") or 0))
            tally.output_tokens.append(int(usage.get("output_tokens") or 0))
            if not response.success:
                tally.failures += 1
                print(f"  {day}: failed: {response.answer}", file=sys.stderr)
                continue
            topics = meta.get("topics") or []
            ids = {t["id"] for t in topics}
            tally.pushed.append(len(topics))
            tally.duplicates.append(_duplicate_rate(topics))
            if previous:
                tally.churn.append(len(previous - ids) / len(previous))
            previous = ids
            for topic in topics:
                tally.paths += len(topic["paths"])
                tally.paths_existing += sum((workspace / p).is_file() for p in topic["paths"])
    return tally


async def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", default="", help="comma-separated names (default: all)")
    parser.add_argument("--days", type=int, default=None, help="at most this many days per conversation")
    args = parser.parse_args(argv)
    root = DATA_DIR / "locomo" / "notes"
    if not root.is_dir():
        raise SystemExit(f"LoCoMo notes not found at {root} (set REME_BENCH_DATA)")
    wanted = {c for c in args.conversations.split(",") if c}
    model = os.environ.get("LLM_MODEL", "?") if os.environ.get("LLM_BASE_URL") else "scripted"
    lines = [f"model: {model}", HEADER]
    total = Tally()
    for conversation in locomo_conversations(root):
        if wanted and conversation.name not in wanted:
            continue
        with tempfile.TemporaryDirectory(prefix="proactive-eval-") as folder:
            tally = await run_conversation(conversation.notes, args.days, Path(folder) / "ws")
        total.add(tally)
        lines.append(tally.row(conversation.name))
    lines.append(total.row("**all**"))
    table = "\n".join(lines)
    print(table)
    return table


if __name__ == "__main__":
    asyncio.run(main())

"""LoCoMo evidence recall: each conversation's day notes become ``daily/<date>.md`` of one workspace.

Prints turn recall within the first B characters (categories 1-4 pooled, each category, category 5
apart), file recall within B and MRR, for every chunk size asked for.

    .venv/bin/python benchmarks/retrieval_locomo.py --chunk-chars 600,1000,1500 --engine harness
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from datasets import LocomoConversation, LocomoQuestion, locomo_conversations  # noqa: E402
from reme.index.chunking import DEFAULT_CHUNK_CHARS, DEFAULT_CONTEXT_CHARS  # noqa: E402
from retrieval_engines import ENGINES, search_files  # noqa: E402
from retrieval_metrics import (  # noqa: E402
    BUDGETS,
    file_recall_within,
    mean,
    recall_within,
    reciprocal_rank,
    visible_lines,
)

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SEARCH_LIMIT = 60  # enough hits to fill the largest budget with the smallest chunks


def workspace_path(note: str) -> str:
    return "daily/" + note.removeprefix("notes/")


def evaluate(conversations: list[LocomoConversation], engine: str, chunk_chars: int, **options) -> list[dict]:
    """One row per question: its category and each metric."""
    rows = []
    for conversation in conversations:
        files = conversation_files(conversation)
        lines = {path: text.split("\n") for path, text in files.items()}
        questions = [q for q in conversation.questions if q.evidence]
        ranked = search_files(
            engine, files, [q.question for q in questions], SEARCH_LIMIT, chunk_chars=chunk_chars, **options
        )
        rows += [question_row(q, hits, lines) for q, hits in zip(questions, ranked, strict=True)]
    return rows


def conversation_files(conversation: LocomoConversation) -> dict[str, str]:
    return {workspace_path(name): text for name, text in conversation.notes.items()}


def question_row(question: LocomoQuestion, hits: list, lines: dict[str, list[str]]) -> dict:
    """One question's category and metrics over its ranked hits."""
    evidence = [(workspace_path(f), line) for f, line in question.evidence]
    row = {"category": question.category, "mrr": reciprocal_rank(hits, evidence)}
    for budget in BUDGETS:
        visible = visible_lines(hits, lines, budget)
        row[f"turn@{budget}"] = recall_within(evidence, visible)
        row[f"file@{budget}"] = file_recall_within(evidence, visible)
    return row


def summary_lines(label: str, rows: list[dict]) -> list[str]:
    groups = {"cat1-4": [r for r in rows if r["category"] != 5]}
    groups |= {CATEGORY_NAMES[c]: [r for r in rows if r["category"] == c] for c in (1, 2, 3, 4, 5)}
    out = []
    for name, group in groups.items():
        turns = " ".join(f"{mean([r[f'turn@{b}'] for r in group]):6.3f}" for b in BUDGETS)
        files = " ".join(f"{mean([r[f'file@{b}'] for r in group]):6.3f}" for b in (2000, 8000))
        out.append(
            f"{label:>14} {name:>12} {len(group):5d} {turns}  {files}  {mean([r['mrr'] for r in group]):6.3f}"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engine", choices=ENGINES, default="harness")
    parser.add_argument(
        "--chunk-chars", default=str(DEFAULT_CHUNK_CHARS), help="comma-separated sizes to sweep"
    )
    parser.add_argument(
        "--context-chars", type=int, default=DEFAULT_CONTEXT_CHARS, help="harness/keyword only"
    )
    parser.add_argument("--conversations", default="", help="comma-separated names (default: all)")
    parser.add_argument(
        "--tokenizer", default="{}", help='tokenizer settings as JSON, e.g. {"stemmer": null}'
    )
    parser.add_argument("--k1", type=float, default=1.2)
    parser.add_argument("--b", type=float, default=0.75)
    args = parser.parse_args()

    conversations = locomo_conversations()
    if args.conversations:
        wanted = set(args.conversations.split(","))
        conversations = [c for c in conversations if c.name in wanted]
    options = {}
    if args.engine != "search":
        options = {"tokenizer_settings": json.loads(args.tokenizer), "context_chars": args.context_chars}
    if args.engine == "harness":
        options |= {"k1": args.k1, "b": args.b}
    header = (
        f"{'chunk_chars':>14} {'questions':>12} {'n':>5} "
        + " ".join(f"{'T@' + str(b):>6}" for b in BUDGETS)
        + f"  {'F@2000':>6} {'F@8000':>6}  {'MRR':>6}"
    )
    print(f"LoCoMo turn recall within B characters, engine={args.engine}")
    print(header)
    for chunk_chars in (int(v) for v in args.chunk_chars.split(",")):
        started = time.perf_counter()
        rows = evaluate(conversations, args.engine, chunk_chars, **options)
        for line in summary_lines(str(chunk_chars), rows):
            print(line)
        print(f"{'':>14} ({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()

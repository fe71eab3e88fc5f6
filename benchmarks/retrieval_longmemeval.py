"""LongMemEval-S (dev split) retrieval: each case's sessions become ``session/dialog/*.jsonl`` transcripts.

Prints session recall_any / recall_all over the top-k distinct sessions of the ranked hits, and
turn recall (messages flagged ``has_answer``) within the first B characters of returned text
(rendered messages; a piece of a long message costs its own length).
Session files are numbered (``s000.jsonl`` ...) so the dataset's ids (``answer_...``) cannot leak
into the index; ``has_answer`` is not written either.

    .venv/bin/python benchmarks/retrieval_longmemeval.py --chunk-chars 600 --engine harness
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from datasets import longmemeval_cases  # noqa: E402
from reme.index.chunking import DEFAULT_CHUNK_CHARS, DEFAULT_CONTEXT_CHARS  # noqa: E402
from retrieval_engines import ENGINES, search_files  # noqa: E402
from retrieval_metrics import BUDGETS, mean, recall_within, visible_transcript_lines  # noqa: E402

SESSION_KS = (1, 3, 5, 10)
SEARCH_LIMIT = 100


def case_files(case: dict) -> tuple[dict[str, str], dict[str, str], dict[str, list[tuple[str, int]]]]:
    """Transcript files, their session ids, and each session's evidence lines."""
    files: dict[str, str] = {}
    session_of: dict[str, str] = {}
    evidence: dict[str, list[tuple[str, int]]] = {}
    for number, session in enumerate(case["sessions"]):
        path = f"session/dialog/s{number:03d}.jsonl"
        lines = []
        for index, message in enumerate(session["messages"]):
            record = {
                key: message[key] for key in ("role", "name", "content", "created_at") if key in message
            }
            lines.append(json.dumps({"id": f"m{index}", **record}, ensure_ascii=False))
            if message.get("has_answer"):
                evidence.setdefault(session["session_id"], []).append((path, index + 1))
        files[path] = "\n".join(lines) + "\n"
        session_of[path] = session["session_id"]
    return files, session_of, evidence


def evaluate(cases: list[dict], engine: str, chunk_chars: int, **options) -> list[dict]:
    rows = []
    for case in cases:
        files, session_of, evidence = case_files(case)
        queries = answered(case)
        ranked = search_files(
            engine, files, [q["question"] for q in queries], SEARCH_LIMIT, chunk_chars=chunk_chars, **options
        )
        rows += [
            question_row(query, hits, session_of, evidence)
            for query, hits in zip(queries, ranked, strict=True)
        ]
    return rows


def answered(case: dict) -> list[dict]:
    return [q for q in case["queries"] if q["metadata"]["answer_session_ids"]]


def question_row(query: dict, hits: list, session_of: dict, evidence: dict) -> dict:
    """Session recall over the distinct sessions of the ranked hits, and turn recall within B."""
    gold = set(query["metadata"]["answer_session_ids"])
    order = list(dict.fromkeys(session_of[hit.path] for hit in hits))
    row = {"type": query["metadata"]["question_type"]}
    for k in SESSION_KS:
        found = gold & set(order[:k])
        row[f"any@{k}"] = float(bool(found))
        row[f"all@{k}"] = float(found == gold)
    turns = [line for session in gold for line in evidence.get(session, [])]
    for budget in BUDGETS:
        visible = visible_transcript_lines(hits, budget)
        row[f"turn@{budget}"] = recall_within(turns, visible) if turns else float("nan")
    return row


def summary_lines(label: str, rows: list[dict]) -> list[str]:
    groups = {"all": rows} | {
        t: [r for r in rows if r["type"] == t] for t in sorted({r["type"] for r in rows})
    }
    out = []
    for name, group in groups.items():
        sessions = " ".join(f"{mean([r[f'any@{k}'] for r in group]):5.2f}" for k in SESSION_KS)
        alls = " ".join(f"{mean([r[f'all@{k}'] for r in group]):5.2f}" for k in SESSION_KS)
        with_turns = [r for r in group if r["turn@500"] == r["turn@500"]]
        turns = " ".join(f"{mean([r[f'turn@{b}'] for r in with_turns]):5.2f}" for b in BUDGETS)
        out.append(f"{label:>6} {name:>26} {len(group):3d}  {sessions}  {alls}  {turns}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engine", choices=ENGINES, default="harness")
    parser.add_argument(
        "--chunk-chars", default=str(DEFAULT_CHUNK_CHARS), help="comma-separated chunk sizes to sweep"
    )
    parser.add_argument(
        "--context-chars", type=int, default=DEFAULT_CONTEXT_CHARS, help="harness/keyword only"
    )
    parser.add_argument("--tokenizer", default="{}", help="tokenizer settings as JSON")
    args = parser.parse_args()

    cases = longmemeval_cases()
    options = {}
    if args.engine != "search":
        options = {"tokenizer_settings": json.loads(args.tokenizer), "context_chars": args.context_chars}
    print(
        f"LongMemEval-S dev ({len(cases)} cases), engine={args.engine}; questions without answer sessions skipped"
    )
    print(
        f"{'chunk':>6} {'type':>26} {'n':>3}  "
        + " ".join(f"{'any' + str(k):>5}" for k in SESSION_KS)
        + "  "
        + " ".join(f"{'all' + str(k):>5}" for k in SESSION_KS)
        + "  "
        + " ".join(f"{'T' + str(b):>5}" for b in BUDGETS)
    )
    for chunk_chars in (int(v) for v in args.chunk_chars.split(",")):
        started = time.perf_counter()
        for line in summary_lines(str(chunk_chars), evaluate(cases, args.engine, chunk_chars, **options)):
            print(line)
        print(f"{'':>6} ({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()

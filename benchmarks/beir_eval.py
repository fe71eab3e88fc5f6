"""BM25 quality on BEIR-format sets with reme's analyser: SciFact (vs published Lucene) and CMRC 2018.

    .venv/bin/python benchmarks/beir_eval.py --dataset scifact --engine keyword
    .venv/bin/python benchmarks/beir_eval.py --dataset cmrc --engine harness --k1 0.9 --b 0.4

Documents are indexed whole (title + text), as Lucene/Anserini do for the published figures.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from datasets import DATA_DIR, BeirSet, beir_set  # noqa: E402
from reme.index.tokenizer import Tokenizer  # noqa: E402
from retrieval_bm25 import MemoryBM25  # noqa: E402

DATASETS = {"scifact": DATA_DIR / "beir-scifact", "cmrc": DATA_DIR / "cmrc2018" / "beir-dev"}
DEPTH = 1000


def ndcg_at(ranked: list[str], judged: dict[str, int], k: int) -> float:
    gains = sum((2 ** judged.get(doc, 0) - 1) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]))
    ideal = sorted(judged.values(), reverse=True)[:k]
    best = sum((2**rel - 1) / math.log2(rank + 2) for rank, rel in enumerate(ideal))
    return gains / best if best else 0.0


def recall_at(ranked: list[str], judged: dict[str, int], k: int) -> float:
    relevant = {doc for doc, rel in judged.items() if rel > 0}
    return len(relevant & set(ranked[:k])) / len(relevant)


def rank_all(data: BeirSet, engine: str, tokenizer: Tokenizer, k1: float, b: float) -> dict[str, list[str]]:
    if engine == "harness":
        bm25 = MemoryBM25(tokenizer, k1=k1, b=b)
        for doc_id, text in data.corpus.items():
            bm25.add(doc_id, text)
        return {qid: [doc for doc, _ in bm25.search(q, DEPTH)] for qid, q in data.queries.items()}
    from reme.index.keyword import KeywordIndex

    with tempfile.TemporaryDirectory(prefix="reme-beir-") as directory:
        index = KeywordIndex(directory, tokenizer)
        for doc_id, text in data.corpus.items():
            index.upsert(f"beir/{doc_id}", [(doc_id, text)])
        index.commit()
        return {qid: [doc for doc, _ in index.search(q, DEPTH)] for qid, q in data.queries.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="scifact")
    parser.add_argument("--engine", choices=("harness", "keyword"), default="harness")
    parser.add_argument("--tokenizer", default="{}", help="tokenizer settings as JSON")
    parser.add_argument("--k1", type=float, default=1.2, help="harness only (the engine uses 1.2)")
    parser.add_argument("--b", type=float, default=0.75, help="harness only (the engine uses 0.75)")
    args = parser.parse_args()

    data = beir_set(DATASETS[args.dataset])
    tokenizer = Tokenizer(**json.loads(args.tokenizer))
    started = time.perf_counter()
    ranked = rank_all(data, args.engine, tokenizer, args.k1, args.b)
    elapsed = time.perf_counter() - started
    qids = list(data.queries)
    metrics = {
        "nDCG@10": sum(ndcg_at(ranked[q], data.qrels[q], 10) for q in qids) / len(qids),
        "R@1": sum(recall_at(ranked[q], data.qrels[q], 1) for q in qids) / len(qids),
        "R@100": sum(recall_at(ranked[q], data.qrels[q], 100) for q in qids) / len(qids),
        "R@1000": sum(recall_at(ranked[q], data.qrels[q], 1000) for q in qids) / len(qids),
    }
    params = f"k1={args.k1} b={args.b}" if args.engine == "harness" else "k1=1.2 b=0.75"
    print(f"{args.dataset}: {len(data.corpus)} docs, {len(qids)} queries, engine={args.engine} {params}")
    print(" ".join(f"{name:>8}" for name in metrics))
    print(" ".join(f"{100 * value:8.2f}" for value in metrics.values()), f"  ({elapsed:.1f} s)")


if __name__ == "__main__":
    main()

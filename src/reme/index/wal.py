"""One SQLite database in WAL mode shared by threads and processes: the catalog's and the vector cache's base.

Readers never block writers (WAL); a write is one `BEGIN IMMEDIATE` transaction, rolled back on
any error, so a kill leaves the previous state. One connection per object, guarded by a lock.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias

Row: TypeAlias = tuple[Any, ...]  # a SQLite row as stored: the query that reads it knows its columns' types
Params: TypeAlias = Sequence[str | int | float | bytes | None]  # values bound to a statement's `?`


class WalDatabase:
    BUSY_TIMEOUT_S = 30.0  # how long to wait for another process's write transaction

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            db_path, check_same_thread=False, isolation_level=None, timeout=self.BUSY_TIMEOUT_S
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One immediate (write-locked) transaction, rolled back on any error."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def query(self, sql: str, params: Params = ()) -> list[Row]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def size_bytes(self) -> int:
        """The database file and its write-ahead log."""
        files = (self.db_path, self.db_path.with_name(self.db_path.name + "-wal"))
        return sum(path.stat().st_size for path in files if path.exists())

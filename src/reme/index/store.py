"""The metadata catalog: SQLite (WAL) is the truth of what is indexed.

Tables: `files` (catalog: path, mtime, size, front-matter name/description, how many keyword docs
the file gave), `chunks` (line ranges and text for hydrating hits), `links` (forward edges; the
reverse index is an index on `target`; an edge is *pending* while its target does not exist, so
pending/real transitions need no bookkeeping) and `intents` (paths whose update is in flight).

Crash consistency: a writer first records its paths in `intents` (committed), then writes the
keyword engine, then replaces catalog rows and clears the intents in one transaction. After a kill
at any point the catalog is either old or new, and the start-up repair re-syncs every path still in
`intents`. Readers never need a lock (WAL); writers are serialised by the caller's file lock.

Every write transaction bumps `meta.generation`, so any process notices with one read that the
catalog changed under it (see `guard`), and logs the paths it wrote in `changes`, so a reader that
follows the catalog (the vector index) re-reads only those paths' rows (`changed_paths`).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reme.index.wal import WalDatabase

SCHEMA_VERSION = 3  # 2: chunks.role; 3: files.content_sha
CATALOG_TABLES = ("meta", "files", "chunks", "links", "intents", "changes")  # what `_SCHEMA` creates

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    name TEXT,
    description TEXT,
    error TEXT,
    keyword_docs INTEGER NOT NULL DEFAULT 0,
    content_sha TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    seq INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    text TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks (path, seq);
CREATE TABLE IF NOT EXISTS links (
    source TEXT NOT NULL,
    seq INTEGER NOT NULL,
    target TEXT NOT NULL,
    predicate TEXT,
    anchor TEXT,
    alias TEXT,
    embed INTEGER NOT NULL,
    line INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS links_by_source ON links (source, seq);
CREATE INDEX IF NOT EXISTS links_by_target ON links (target);
CREATE TABLE IF NOT EXISTS intents (path TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS changes (generation INTEGER NOT NULL, path TEXT);
CREATE INDEX IF NOT EXISTS changes_by_generation ON changes (generation);
"""

# write transactions whose paths the change log keeps; a reader further behind re-reads everything
CHANGE_LOG_GENERATIONS = 1000


@dataclass(frozen=True)
class ChunkRow:
    chunk_id: str
    path: str
    start_line: int
    end_line: int
    heading_path: list[str]
    text: str
    role: str = ""  # transcripts: the role its messages share (see Chunk.role)


@dataclass(frozen=True)
class ChangeMark:
    """A point in the catalog's history (`MetadataStore.change_mark`)."""

    catalog_id: str
    generation: int


@dataclass(frozen=True)
class LinkRow:
    source: str
    target: str
    predicate: str | None = None
    anchor: str | None = None
    alias: str | None = None
    embed: bool = False
    line: int = 1


@dataclass(frozen=True)
class FileRow:
    path: str
    mtime_ns: int
    size: int
    name: str | None = None
    description: str | None = None
    error: str | None = None
    keyword_docs: int = 0
    # transcripts: sha256 of the indexed bytes (one that only grew since re-indexes its end)
    content_sha: str | None = None


@dataclass
class FileRecord:
    """Everything the catalog keeps about one indexed file, written in one transaction."""

    file: FileRow
    chunks: list[ChunkRow] = field(default_factory=list)
    links: list[LinkRow] = field(default_factory=list)
    keep: int | None = None  # a grown transcript: its first `keep` chunk rows stay, `chunks` follow them


_CHUNK_ROWS = "SELECT chunk_id, path, start_line, end_line, heading_path, text, role FROM chunks"


def _create_schema(db: sqlite3.Connection) -> None:
    """Create the tables and meta rows that are missing (all of a new catalog's)."""
    for statement in _SCHEMA.strip().split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    db.execute("INSERT OR IGNORE INTO meta VALUES ('catalog_id', ?)", (secrets.token_hex(8),))


def _chunk_row(row: Sequence) -> ChunkRow:
    chunk_id, path, start, end, heading, text, role = row
    return ChunkRow(chunk_id, path, start, end, json.loads(heading), text, role)


class MetadataStore(WalDatabase):
    """SQLite catalog of indexed files, their chunks and their links."""

    def __init__(self, db_path: Path) -> None:
        super().__init__(db_path)
        self.recreated: list[str] = []  # tables an existing catalog lacked (dropped by hand): rebuild
        with self.transaction() as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "meta" in tables and self._get_meta(db, "schema_version") != str(SCHEMA_VERSION):
                for table in tables:  # written by another reme version: derived data, start afresh
                    db.execute(f'DROP TABLE "{table}"')
            elif "meta" in tables:
                self.recreated = [table for table in CATALOG_TABLES if table not in tables]
            _create_schema(db)

    def missing_tables(self) -> list[str]:
        """Catalog tables that are gone (dropped outside reme): one query, for health."""
        with self._lock:
            rows = self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        present = {row[0] for row in rows}
        return [table for table in CATALOG_TABLES if table not in present]

    def restore_schema(self) -> None:
        """Create any table that is gone (empty), so a rebuild can refill it."""
        with self.transaction() as db:
            _create_schema(db)

    # meta ----------------------------------------------------------------------------------------

    @staticmethod
    def _get_meta(db: sqlite3.Connection, key: str) -> str | None:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            return self._get_meta(self._db, key)

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # intents -------------------------------------------------------------------------------------

    def begin_intents(self, paths: Iterable[str]) -> None:
        """Durably note that these paths are about to change (repair re-syncs them after a crash)."""
        with self.transaction() as db:
            paths = list(paths)
            db.executemany("INSERT OR IGNORE INTO intents VALUES (?)", [(p,) for p in paths])
            _bump_generation(db, paths)

    def generation(self) -> int:
        """How many write transactions the catalog has seen, from any process."""
        value = self.get_meta("generation")
        return int(value) if value else 0

    def change_mark(self) -> ChangeMark:
        """Where the catalog stands now: which catalog (a rebuilt one is another) and its generation."""
        rows: dict[str, str] = dict(
            self.query("SELECT key, value FROM meta WHERE key IN ('catalog_id', 'generation')")
        )
        return ChangeMark(rows.get("catalog_id", ""), int(rows.get("generation", 0)))

    def changed_paths(self, since: ChangeMark) -> set[str] | None:
        """The paths written since `since` (a `change_mark`), or None when the log cannot tell: another
        catalog, a mark older than the log keeps, or a write that did not log (an older reme)."""
        with self._lock:
            if self._get_meta(self._db, "catalog_id") != since.catalog_id:
                return None
            now = int(self._get_meta(self._db, "generation") or 0)
            rows = self._db.execute(
                "SELECT generation, path FROM changes WHERE generation > ?", (since.generation,)
            ).fetchall()
        if len({generation for generation, _ in rows}) != now - since.generation:
            return None
        return {path for _, path in rows if path is not None}

    def intents(self) -> list[str]:
        return [row[0] for row in self.query("SELECT path FROM intents ORDER BY path")]

    # catalog writes ------------------------------------------------------------------------------

    def apply(self, records: Sequence[FileRecord], deleted: Sequence[str], settled: Iterable[str]) -> None:
        """Replace the rows of `records`, drop `deleted`, and clear the intents of `settled`, atomically."""
        with self.transaction() as db:
            for path in [*deleted, *(r.file.path for r in records)]:
                db.execute("DELETE FROM files WHERE path = ?", (path,))
                db.execute("DELETE FROM links WHERE source = ?", (path,))
            for path in deleted:
                db.execute("DELETE FROM chunks WHERE path = ?", (path,))
            for record in records:
                f = record.file
                first = record.keep or 0
                db.execute("DELETE FROM chunks WHERE path = ? AND seq >= ?", (f.path, first))
                db.execute(
                    "INSERT INTO files (path, mtime_ns, size, name, description, error, keyword_docs, content_sha)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        f.path,
                        f.mtime_ns,
                        f.size,
                        f.name,
                        f.description,
                        f.error,
                        f.keyword_docs,
                        f.content_sha,
                    ),
                )
                db.executemany(
                    "INSERT OR REPLACE INTO chunks (chunk_id, path, seq, start_line, end_line, heading_path, text, role)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            c.chunk_id,
                            f.path,
                            first + i,
                            c.start_line,
                            c.end_line,
                            json.dumps(c.heading_path),
                            c.text,
                            c.role,
                        )
                        for i, c in enumerate(record.chunks)
                    ],
                )
                db.executemany(
                    "INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (f.path, i, ln.target, ln.predicate, ln.anchor, ln.alias, int(ln.embed), ln.line)
                        for i, ln in enumerate(record.links)
                    ],
                )
            db.executemany("DELETE FROM intents WHERE path = ?", [(p,) for p in settled])
            _bump_generation(db, [*deleted, *(r.file.path for r in records)])

    # catalog reads -------------------------------------------------------------------------------

    def file(self, path: str) -> FileRow | None:
        rows = self.query("SELECT * FROM files WHERE path = ?", (path,))
        return FileRow(*rows[0]) if rows else None

    def files(self, paths: Iterable[str]) -> dict[str, FileRow]:
        wanted = list(dict.fromkeys(paths))
        found: dict[str, FileRow] = {}
        for batch in _batches(wanted):
            marks = ",".join("?" * len(batch))
            for row in self.query(f"SELECT * FROM files WHERE path IN ({marks})", batch):
                found[row[0]] = FileRow(*row)
        return found

    def stamps(self) -> dict[str, tuple[int, int]]:
        """`path -> (mtime_ns, size)` of every catalogued file (for reconciling with the disk)."""
        return {
            path: (mtime, size) for path, mtime, size in self.query("SELECT path, mtime_ns, size FROM files")
        }

    def paths_under(self, folder: str) -> list[str]:
        """Catalogued paths equal to `folder` or inside it."""
        folder = folder.rstrip("/")
        rows = self.query(
            "SELECT path FROM files WHERE path = ? OR (path >= ? AND path < ?)", (folder, *_inside(folder))
        )
        return [row[0] for row in rows]

    def chunks_by_id(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
        found: dict[str, ChunkRow] = {}
        for batch in _batches(list(chunk_ids)):
            marks = ",".join("?" * len(batch))
            for row in self.query(f"{_CHUNK_ROWS} WHERE chunk_id IN ({marks})", batch):
                found[row[0]] = _chunk_row(row)
        return found

    def chunks_of(self, path: str) -> list[ChunkRow]:
        """The chunk rows of one file, in file order."""
        return [_chunk_row(row) for row in self.query(f"{_CHUNK_ROWS} WHERE path = ? ORDER BY seq", (path,))]

    def chunk_order(self, paths: Iterable[str] | None = None) -> list[tuple[str, str]]:
        """Every chunk's `(chunk_id, path)` in file order (by path, then position in the file); only
        these files' chunks when `paths` is given."""
        if paths is None:
            return [
                (row[0], row[1]) for row in self.query("SELECT chunk_id, path FROM chunks ORDER BY path, seq")
            ]
        order: list[tuple[str, str]] = []
        for batch in _batches(sorted(set(paths))):
            marks = ",".join("?" * len(batch))
            sql = f"SELECT chunk_id, path FROM chunks WHERE path IN ({marks}) ORDER BY path, seq"
            order += [(row[0], row[1]) for row in self.query(sql, batch)]
        return order

    def keyword_doc_total(self) -> int:
        return int(self.query("SELECT COALESCE(SUM(keyword_docs), 0) FROM files")[0][0])

    def counts(self) -> dict[str, int]:
        files, chunks, links = (
            self.query(f"SELECT COUNT(*) FROM {table}")[0][0] for table in ("files", "chunks", "links")
        )
        return {"files": files, "chunks": chunks, "links": links}

    # links ---------------------------------------------------------------------------------------

    def outlinks(self, source: str) -> list[LinkRow]:
        rows = self.query(
            "SELECT source, target, predicate, anchor, alias, embed, line FROM links WHERE source = ? ORDER BY seq",
            (source,),
        )
        return [LinkRow(s, t, p, a, al, bool(e), ln) for s, t, p, a, al, e, ln in rows]

    def inlinks(self, target: str) -> list[LinkRow]:
        rows = self.query(
            "SELECT source, target, predicate, anchor, alias, embed, line FROM links WHERE target = ? "
            "ORDER BY source, seq",
            (target,),
        )
        return [LinkRow(s, t, p, a, al, bool(e), ln) for s, t, p, a, al, e, ln in rows]

    def links_into(self, folder: str) -> list[LinkRow]:
        """Links whose target is `folder` itself or any path inside it."""
        folder = folder.rstrip("/")
        rows = self.query(
            "SELECT source, target, predicate, anchor, alias, embed, line FROM links "
            "WHERE target = ? OR (target >= ? AND target < ?) ORDER BY source, seq",
            (folder, *_inside(folder)),
        )
        return [LinkRow(s, t, p, a, al, bool(e), ln) for s, t, p, a, al, e, ln in rows]

    def unresolved_targets(self) -> list[str]:
        """Link targets with no catalogued file (pending unless they exist outside the indexed set)."""
        rows = self.query(
            "SELECT DISTINCT target FROM links WHERE target NOT IN (SELECT path FROM files) ORDER BY target"
        )
        return [row[0] for row in rows]


def _bump_generation(db: sqlite3.Connection, paths: Sequence[str]) -> None:
    """Count one more write transaction and log its paths (a NULL row when it wrote none, so every
    generation the log keeps has a row and a gap shows)."""
    generation = db.execute(
        "INSERT INTO meta VALUES ('generation', '1') "
        "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING CAST(value AS INTEGER)"
    ).fetchone()[0]
    db.executemany(
        "INSERT INTO changes VALUES (?, ?)",
        [(generation, path) for path in dict.fromkeys(paths)] or [(generation, None)],
    )
    db.execute("DELETE FROM changes WHERE generation <= ?", (generation - CHANGE_LOG_GENERATIONS,))


def _inside(folder: str) -> tuple[str, str]:
    """Bounds of the paths strictly inside `folder`: they sort between `folder/` and `folder0`."""
    return folder + "/", folder + "0"


def _batches(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]

"""BM25 keyword engine: tantivy postings fed with reme's own tokens.

Why tantivy (benchmarks/speed_keyword.py, 100k chunks, same tokens for every engine, quiet machine):
query p50 0.65 ms / p95 1.3 ms (block-max WAND) against bm25s 1.4 ms, SQLite FTS5 87 ms and
rank_bm25 630 ms; one file's chunks replaced and committed in ~21 ms (bm25s and rank_bm25 must
rebuild: 6-13 s; FTS5 is faster at 4 ms but 130x slower to query); an existing index opens in ~10 ms.
Text is tokenized in Python by `reme.index.tokenizer` and handed over as whitespace-joined terms,
so query and index analysis can never drift apart.

Scores are Lucene's BM25 (k1 1.2, b 0.75, lossy one-byte length norms, Lucene >= 8 scale without the
constant (k1 + 1) factor). The index lives in `<directory>/keyword-<tokenizer fingerprint>-v<schema>/`,
so a changed analyser (or engine schema) never reuses a stale index. Writers are serialised within
the process by a lock and across processes by tantivy's own writer lock (waited for, not failed on);
the caller's metadata lock keeps the catalog and the engine in step.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import date
from pathlib import Path
from typing import Protocol

import tantivy

from reme.errors import Unavailable
from reme.workspace.dates import path_day

K1 = 1.2  # tantivy's fixed BM25 parameters, the Lucene defaults
B = 0.75
_LUCENE_SCALE = 1.0 / (1.0 + K1)
_REGEX_META = re.compile(r"([\\.+*?()|\[\]{}^$#&\-~\"])")
_WRITER_WAIT_S = 30.0
MAX_QUERY_TERMS = 256  # distinct terms per query: bounds the clauses (and memory) of one search
SCHEMA_VERSION = 2  # bump when the engine's fields change: the folder name changes with it
TITLE_BOOST = 3.0  # a query term in a note's title field (name, title heading, path words) vs its body


class EngineUnavailable(Unavailable):
    """The keyword engine cannot take a write now (another writer holds its lock past the wait, a
    commit failed); nothing of the write is kept, and the next sync or reconcile tries again."""


class TokenizerLike(Protocol):
    fingerprint: str

    def tokenize(self, text: str) -> list[str]: ...


def path_date(path: str) -> int:
    """`YYYYMMDD` of the date that starts a path's second segment, 0 when undated (docs/spec.md §1)."""
    day = path_day(path)
    return _day_number(day) if day else 0


def engine_folder(directory: str | Path, tokenizer: TokenizerLike) -> Path:
    """Where the index of this tokenizer (and engine schema) lives inside `directory`."""
    return Path(directory) / f"keyword-{tokenizer.fingerprint}-v{SCHEMA_VERSION}"


def _build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("path", stored=False, tokenizer_name="raw", index_option="basic")
    builder.add_unsigned_field("date", indexed=True, fast=True)
    builder.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
    builder.add_text_field("title", stored=False, tokenizer_name="whitespace", index_option="freq")
    return builder.build()


class KeywordIndex:
    """One tokenizer's BM25 index of chunks, keyed by chunk id and grouped by workspace path.

    Writes are buffered in an open tantivy writer until `commit()`; readers see the last commit of
    any process (the reader reloads when `meta.json` changes).
    """

    def __init__(
        self, directory: str | Path, tokenizer: TokenizerLike, *, writer_heap: int = 50_000_000
    ) -> None:
        self.tokenizer = tokenizer
        self.path = engine_folder(directory, tokenizer)
        for folder in (self.path.parent, self.path):  # a file where a folder belongs: derived, rebuilt
            if (folder.exists() or folder.is_symlink()) and not folder.is_dir():
                folder.unlink()
        self.path.mkdir(parents=True, exist_ok=True)
        self._schema = _build_schema()
        self._index = tantivy.Index(self._schema, str(self.path), reuse=True)
        self._index.config_reader(reload_policy="Manual")
        self._writer_heap = writer_heap
        self._writer: tantivy.IndexWriter | None = None
        self._write_lock = threading.RLock()
        self._meta_stamp: tuple[int, ...] | None = self._stat_meta()

    # maintenance ---------------------------------------------------------------------------------

    def stale_siblings(self) -> list[Path]:
        """Indexes of other tokenizer fingerprints next to this one (safe to delete)."""
        return [p for p in self.path.parent.glob("keyword-*") if p.is_dir() and p != self.path]

    def remove_stale_siblings(self) -> None:
        for stale in self.stale_siblings():
            shutil.rmtree(stale, ignore_errors=True)

    def remove_leftovers(self) -> list[str]:
        """Delete engine files the last commit does not refer to; returns their names.

        A writer killed mid-commit leaves segment and delete files behind, and a stale
        `<segment>.<opstamp>.del` makes every later commit that reaches that opstamp fail with
        FileAlreadyExists. Call it only while holding the index's write lock with no writer open.
        """
        with self._write_lock:
            if self._writer is not None:
                raise RuntimeError("cannot clean the engine folder while a writer is open")
            try:
                meta = json.loads((self.path / "meta.json").read_text(encoding="utf-8"))
            except (FileNotFoundError, ValueError):
                return []  # no commit yet (or unreadable: the caller rebuilds)
            wanted: dict[str, str | None] = {}  # segment id -> the name of its current delete file
            for segment in meta.get("segments", []):
                segment_id = segment["segment_id"].replace("-", "")
                deletes = segment.get("deletes")
                wanted[segment_id] = f"{segment_id}.{deletes['opstamp']}.del" if deletes else None
            removed = []
            for entry in os.scandir(self.path):
                segment_id, _, rest = entry.name.partition(".")
                if entry.name.startswith(".") or entry.name == "meta.json" or not entry.is_file():
                    continue
                if segment_id in wanted and (not rest.endswith("del") or entry.name == wanted[segment_id]):
                    continue
                os.unlink(entry.path)
                removed.append(entry.name)
            if removed:
                self._forget_managed(set(removed))
            return removed

    def _forget_managed(self, names: set[str]) -> None:
        """Drop deleted files from tantivy's list of the files it manages (`.managed.json`)."""
        managed = self.path / ".managed.json"
        try:
            listed = json.loads(managed.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return
        temporary = managed.with_name(".managed.json.reme-tmp")
        temporary.write_text(json.dumps([name for name in listed if name not in names]), encoding="utf-8")
        os.replace(temporary, managed)

    # writing -------------------------------------------------------------------------------------

    def _open_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            deadline = time.monotonic() + _WRITER_WAIT_S
            while True:
                try:
                    self._writer = self._index.writer(self._writer_heap, 1)
                    break
                except ValueError as exc:  # LockBusy: another process is writing
                    if "lock" not in str(exc).lower():
                        raise
                    if time.monotonic() > deadline:
                        raise EngineUnavailable(
                            f"the keyword engine stays locked by another writer: {exc}"
                        ) from exc
                    time.sleep(0.02)
        return self._writer

    def upsert(self, path: str, chunks: Iterable[tuple[str, str]], title: str = "") -> int:
        """Replace every chunk of `path` by `chunks` (chunk id, search text); returns docs added.

        `title` (`reme.index.titles.title_text`) goes into every chunk's title field, weighed
        TITLE_BOOST times a body word. Chunks without any body term are skipped: they can never
        match on their own, and leaving them out keeps the document count (and so the scores)
        equal to Lucene's.
        """
        with self._write_lock:
            self._open_writer().delete_documents_by_term("path", path)
            return self.add(path, chunks, title)

    def add(self, path: str, chunks: Iterable[tuple[str, str]], title: str = "") -> int:
        """Add chunks of `path` beside those it has (as `upsert` adds them); returns docs added."""
        with self._write_lock:
            writer = self._open_writer()
            day = path_date(path)
            title_terms = " ".join(self.tokenizer.tokenize(title)) if title else ""
            added = 0
            for chunk_id, search_text in chunks:
                terms = self.tokenizer.tokenize(search_text)
                if not terms:
                    continue
                doc = tantivy.Document()
                doc.add_text("chunk_id", chunk_id)
                doc.add_text("path", path)
                doc.add_unsigned("date", day)
                doc.add_text("body", " ".join(terms))
                if title_terms:
                    doc.add_text("title", title_terms)
                writer.add_document(doc)
                added += 1
            return added

    def delete_chunks(self, chunk_ids: Iterable[str]) -> None:
        """Delete these chunks' documents (applied at the next commit)."""
        with self._write_lock:
            writer = self._open_writer()
            for chunk_id in chunk_ids:
                writer.delete_documents_by_term("chunk_id", chunk_id)

    def has_terms(self, search_text: str) -> bool:
        """Whether a chunk with this search text gets a document (one without terms is skipped)."""
        return bool(self.tokenizer.tokenize(search_text))

    def delete_path(self, path: str) -> None:
        with self._write_lock:
            self._open_writer().delete_documents_by_term("path", path)

    def clear(self) -> None:
        """Delete every document (applied at the next commit)."""
        with self._write_lock:
            self._open_writer().delete_all_documents()

    def commit(self) -> None:
        """Publish the buffered writes durably, finish merges and release the writer lock."""
        with self._write_lock:
            writer, self._writer = self._writer, None
            if writer is None:
                return
            try:
                writer.commit()
            except BaseException as exc:
                writer.rollback()
                if isinstance(exc, ValueError):  # tantivy's error: the write failed (disk, files gone)
                    raise EngineUnavailable(f"the keyword engine could not commit: {exc}") from exc
                raise
            finally:
                writer.wait_merging_threads()
            self._meta_stamp = ()  # the next search reloads

    def rollback(self) -> None:
        """Drop the buffered writes and release the writer lock."""
        with self._write_lock:
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.rollback()
                writer.wait_merging_threads()

    # reading -------------------------------------------------------------------------------------

    def _stat_meta(self) -> tuple[int, int, int] | None:
        """Identity of the last commit of any process (meta.json is replaced on every commit)."""
        try:
            st = (self.path / "meta.json").stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_ino, st.st_size)

    def _reload(self) -> None:
        stamp = self._stat_meta()  # taken first: a commit landing during the reload forces another
        for attempt in range(5):
            try:
                self._index.reload()
                break
            except Exception:  # another process garbage-collected files mid-reload: read meta again
                if attempt == 4:
                    raise
                time.sleep(0.01)
        self._meta_stamp = stamp

    def _searcher(self) -> tantivy.Searcher:
        if self._stat_meta() != self._meta_stamp:
            self._reload()
        return self._index.searcher()

    def chunk_ids(self) -> list[str]:
        """Every chunk id the engine holds (sorted): what to compare with a fresh build."""
        searcher = self._searcher()
        hits = searcher.search(tantivy.Query.all_query(), max(searcher.num_docs, 1)).hits
        return sorted(searcher.doc(address)["chunk_id"][0] for _, address in hits)

    @property
    def num_docs(self) -> int:
        return self._searcher().num_docs

    def search(
        self,
        query: str,
        limit: int,
        path_prefix: str | None = None,
        *,
        start_date: date | None = None,
        end_date: date | None = None,
        strict_date_filter: bool = False,
    ) -> list[tuple[str, float]]:
        """Best `limit` chunks for an OR of the query's terms: `(chunk_id, score)`, best first.

        `path_prefix` scopes by the start of the path; dates filter on the path's date segment,
        keeping undated paths unless `strict_date_filter` (which does nothing without a date).
        """
        return self.search_terms(
            self.tokenizer.tokenize(query),
            limit,
            path_prefix,
            start_date=start_date,
            end_date=end_date,
            strict_date_filter=strict_date_filter,
        )

    def search_terms(
        self,
        terms: Sequence[str],
        limit: int,
        path_prefix: str | None = None,
        *,
        start_date: date | None = None,
        end_date: date | None = None,
        strict_date_filter: bool = False,
    ) -> list[tuple[str, float]]:
        """`search` for already tokenized terms (a repeated term counts again, as in Lucene).

        A term repeated n times is one clause boosted n times (the same score as n clauses), and only
        the first MAX_QUERY_TERMS distinct terms count: a huge query costs no more than a long one.
        """
        if not terms or limit <= 0:
            return []
        schema = self._schema
        clauses: list[tuple[tantivy.Occur, tantivy.Query]] = [
            (tantivy.Occur.Should, _term_clause(schema, field, term, count * weight))
            for term, count in weighted_terms(terms)
            for field, weight in (("body", 1.0), ("title", TITLE_BOOST))
        ]
        filters = self._filters(path_prefix, start_date, end_date, strict_date_filter)
        if filters:
            clauses += [(tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0)) for f in filters]
            query = tantivy.Query.boolean_query(clauses, minimum_number_should_match=1)
        else:
            query = tantivy.Query.boolean_query(clauses)
        searcher = self._searcher()
        hits = searcher.search(query, limit, count=False).hits
        return [(searcher.doc(address)["chunk_id"][0], score * _LUCENE_SCALE) for score, address in hits]

    def _filters(
        self,
        path_prefix: str | None,
        start_date: date | None,
        end_date: date | None,
        strict_date_filter: bool,
    ) -> list[tantivy.Query]:
        schema = self._schema
        filters = []
        if path_prefix:
            pattern = _REGEX_META.sub(r"\\\1", path_prefix) + ".*"
            filters.append(tantivy.Query.regex_query(schema, "path", pattern))
        if start_date is not None or end_date is not None:
            lower = _day_number(start_date) if start_date else 1
            upper = _day_number(end_date) if end_date else None
            dated = tantivy.Query.range_query(schema, "date", tantivy.FieldType.Unsigned, lower, upper)
            if strict_date_filter:
                filters.append(dated)
            else:
                undated = tantivy.Query.range_query(schema, "date", tantivy.FieldType.Unsigned, 0, 0)
                filters.append(
                    tantivy.Query.boolean_query(
                        [(tantivy.Occur.Should, dated), (tantivy.Occur.Should, undated)]
                    )
                )
        return filters


def weighted_terms(terms: Sequence[str]) -> list[tuple[str, int]]:
    """`(term, times repeated)` of the first MAX_QUERY_TERMS distinct terms, in query order."""
    return list(Counter(terms).items())[:MAX_QUERY_TERMS]


def _term_clause(schema: tantivy.Schema, field: str, term: str, weight: float) -> tantivy.Query:
    query = tantivy.Query.term_query(schema, field, term)
    return query if weight == 1 else tantivy.Query.boost_query(query, weight)


def _day_number(day: date) -> int:
    return day.year * 10000 + day.month * 100 + day.day

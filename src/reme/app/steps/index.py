"""Job steps of the index area: search, node_search, traverse, reindex, index_update_loop.

Each step validates what JSON Schema cannot (dates, paths), then calls the index component.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from datetime import date
from functools import partial
from typing import Any

from reme.app.components.index import index_service
from reme.app.components.workspace import workspace_of
from reme.app.jobs import JobContext, JobError
from reme.app.registry import register_step
from reme.index import as_of as as_of_marks
from reme.index.date_query import with_iso_dates
from reme.index.search import SearchFilters, render_hits, render_nodes
from reme.index.service import IndexService
from reme.index.watch import watch_paths
from reme.workspace import frontmatter
from reme.workspace.dates import check_date
from reme.workspace.paths import UnsafePathError, check_relative

log = logging.getLogger(__name__)
MAX_NODE_BYTES = 1_000_000  # a node read for its statements (`as_of`); bigger ones are shown as they are
READY_WAIT_S = 2.0  # how long a search waits for a running catch-up before answering with a note


def _index(ctx: JobContext) -> IndexService:
    return index_service(ctx.app)


async def _caught_up(index: IndexService) -> None:
    """Before reading: finish index writes another process left interrupted (one read when none).

    In a worker thread: the catalog's lock may be held by a batch being written.
    """
    await asyncio.to_thread(index.catch_up)


def _date(ctx: JobContext, key: str) -> date | None:
    raw = ctx.params.get(key)
    if raw in (None, ""):
        return None
    try:
        return date.fromisoformat(check_date(raw, ctx.app.today()))
    except ValueError as exc:
        raise JobError(f"{key}: {exc}, e.g. 2026-06-01") from None


async def _ready_index(ctx: JobContext, wait_s: float) -> IndexService:
    """The index, caught up with the files if that is done within `wait_s`; the response says
    whether it is (`metadata.index_ready`) and, when not, how far the catch-up has got."""
    index = _index(ctx)
    if not index.ready:
        await asyncio.to_thread(index.ensure_ready, wait=False)  # returns at once while another catches up
    if not index.ready and wait_s > 0:
        await asyncio.to_thread(index.progress.wait, wait_s)
    await _caught_up(index)
    ctx.response.metadata["index_ready"] = index.ready
    if not index.ready:
        ctx.response.metadata["index_progress"] = index.progress.to_dict()
    return index


def _with_readiness(ctx: JobContext, index: IndexService, answer: str) -> str:
    return answer if index.ready else f"{index.progress.note()}\n{answer}"


def _path(raw: str, what: str) -> str:
    try:
        return check_relative(raw)
    except UnsafePathError as exc:
        raise JobError(f"{what}: {exc}") from None


@register_step("search")
async def search(ctx: JobContext, ready_wait_s: float = READY_WAIT_S) -> None:
    params = ctx.params
    query = params["query"].strip()
    if not query:
        raise JobError("query is empty; give some words to search for")
    start, end = _date(ctx, "start_date"), _date(ctx, "end_date")
    if start and end and start > end:
        raise JobError(f"start_date {start} is after end_date {end}")
    prefix = params.get("path_prefix") or None
    if prefix:
        _path(prefix, "path_prefix")
    as_of = _date(ctx, "as_of")
    index = await _ready_index(ctx, ready_wait_s)
    limit = params["limit"]
    hits = await index.searcher.search(
        with_iso_dates(query),  # "May 7 2023" also as 2023-05-07, the form resolved dates take
        limit=min(limit * 2, 200) if as_of else limit,  # room for valid hits below stale ones
        min_score=params["min_score"],
        filters=SearchFilters(prefix, start, end, params["strict_date_filter"]),
        expand_links=params["expand_links"],
        max_links_per_direction=params["max_links_per_direction"],
        fold_files=params["fold_files"],
        generated_folder=None if params["include_generated"] else workspace_of(ctx.app).folder("digest"),
    )
    marked = as_of_marks.mark(hits, as_of or ctx.app.today(), explicit=as_of is not None)[:limit]
    note = as_of_marks.render_marks(marked, as_of or ctx.app.today(), as_of is not None)
    answer = render_hits(query, [m.hit for m in marked]) + (f"\n\n{note}" if note else "")
    ctx.response.answer = _with_readiness(ctx, index, answer)
    ctx.response.metadata["results"] = [m.to_dict() for m in marked]
    if as_of:
        ctx.response.metadata["as_of"] = as_of.isoformat()
    _flag_pending(ctx, index)


def _flag_pending(ctx: JobContext, index: IndexService) -> None:
    """Say so when index writes are still in flight (a reindex batch, a writer elsewhere): the
    results may miss or show the previous version of those files for a moment. With vectors on,
    also how many chunks still wait for their embedding (they are found by keywords meanwhile)."""
    pending = index.pending_writes()
    if pending:
        ctx.response.metadata["index_pending_writes"] = pending
        ctx.response.answer += (
            f"\n\n(note: {pending} index write(s) in flight; results may be a moment behind)"
        )
    if index.vectors is None:
        return
    try:
        reason = index.vectors.unavailable()  # a query just failed: no second wait on the endpoint
        if reason is not None:
            raise RuntimeError(reason)
        waiting = index.vectors.pending()
    except Exception as exc:  # the model cannot load or the endpoint is down: keyword results stand
        ctx.response.metadata["vector_error"] = f"{type(exc).__name__}: {exc}"
        ctx.response.answer += f"\n\n(note: semantic search is unavailable, keyword results only: {exc})"
        return
    ctx.response.metadata["vectors_pending"] = waiting
    if waiting:
        ctx.response.answer += (
            f"\n\n(note: {waiting} chunk(s) not embedded yet; they are matched by keywords only until "
            "the index loop embeds them: a running service (`reme start`) does it in the background, "
            "`reindex` at once)"
        )


@register_step("node_search")
async def node_search(ctx: JobContext, folder: str | None = None, ready_wait_s: float = READY_WAIT_S) -> None:
    query = ctx.params["query"].strip()
    if not query:
        raise JobError("query is empty; give some words to search for")
    index = await _ready_index(ctx, ready_wait_s)
    folder = folder or workspace_of(ctx.app).folder("digest")
    keyword_only = bool(ctx.params.get("keyword_only", False))
    nodes = await asyncio.to_thread(
        partial(index.searcher.node_search, keyword_only=keyword_only),
        with_iso_dates(query),
        ctx.params["limit"],
        folder,
    )
    as_of = _date(ctx, "as_of")
    nodes = await asyncio.to_thread(_node_validity, ctx, nodes, as_of)
    held = as_of_marks.render_node_validity(nodes)
    answer = render_nodes(query, nodes) + (f"\n\nstatements {_when(as_of)}:\n{held}" if held else "")
    ctx.response.answer = _with_readiness(ctx, index, answer)
    if as_of:
        ctx.response.metadata["as_of"] = as_of.isoformat()
    ctx.response.metadata["results"] = nodes
    _flag_pending(ctx, index)


def _when(as_of: date | None) -> str:
    return f"valid on {as_of.isoformat()}" if as_of else "now (superseded ones marked)"


def _node_validity(ctx: JobContext, nodes: list[dict[str, Any]], as_of: date | None) -> list[dict[str, Any]]:
    """Each node's statements on the day (docs/spec.md §17.3), read from its file; unchanged without validity."""
    ws = workspace_of(ctx.app)
    day = as_of or ctx.app.today()
    out = []
    for node in nodes:
        try:
            file = ws.absolute(node["path"])
            if file.stat().st_size > MAX_NODE_BYTES:
                raise ValueError("too big to summarise")
            text = file.read_text(encoding="utf-8")
        except (OSError, ValueError):
            out.append(node)
            continue
        body = frontmatter.parse(text).body
        out.append({**node, **as_of_marks.node_validity(body, day, explicit=as_of is not None)})
    return out


@register_step("traverse")
async def traverse(ctx: JobContext, max_nodes: int = 1000, ready_wait_s: float = READY_WAIT_S) -> None:
    raw = ctx.params["path"]
    seeds = [raw] if isinstance(raw, str) else list(raw)
    if not seeds:
        raise JobError("path is empty; give one path or a list of paths to start from")
    seeds = [_path(seed, "path") for seed in seeds]
    index = await _ready_index(ctx, ready_wait_s)
    nodes, edges = await asyncio.to_thread(
        index.graph.traverse, seeds, ctx.params["depth"], ctx.params["direction"], max_nodes
    )
    ctx.response.metadata.update({"nodes": nodes, "edges": edges})
    lines = [f"{len(nodes)} node(s), {len(edges)} edge(s):"]
    for node in nodes:
        about = ": ".join(part for part in (node["name"], node["description"]) if part)
        missing = "" if node["exists"] else " (missing)"
        lines.append(f"- {node['path']}{missing}" + (f" {about}" if about else ""))
    for edge in edges:
        predicate = f" [{edge['predicate']}]" if edge["predicate"] else ""
        anchor = f"#{edge['anchor']}" if edge["anchor"] else ""
        resolved = edge["resolved"]
        named = f" ({resolved})" if resolved and resolved != edge["target"] else ""
        lines.append(f"  {edge['source']} -> {edge['target']}{anchor}{named}{predicate}")
    ctx.response.answer = _with_readiness(ctx, index, "\n".join(lines))


@register_step("reindex")
def reindex(ctx: JobContext) -> None:
    index = _index(ctx)
    if sys.stderr.isatty():
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("reindexing", total=None)
            report = index.reindex(lambda done, total: bar.update(task, completed=done, total=total))
        embedded = _embed_with_bar(index)
    else:
        report = index.reindex()
        embedded = index.embed_pending()
    stats = index.stats()
    ctx.response.metadata.update({**report.to_dict(), **{k: stats[k] for k in ("files", "chunks", "links")}})
    ctx.response.answer = (
        f"Reindexed {len(report.indexed)} file(s): {stats['chunks']} chunks, {stats['links']} links."
    )
    if index.vectors is not None:
        pruned = index.vectors.prune(slack=0) if not report.stopped else 0  # text no chunk has any more
        figures = stats.get("vectors", {})
        ctx.response.metadata.update(
            {"embedded": embedded, "vectors": figures.get("vectors", 0), "vectors_pruned": pruned}
        )
        ctx.response.answer += (
            f" Vectors: {figures.get('vectors', 0)} ({embedded} embedded now, the rest were cached"
            f"{', ' + str(figures['vectors_pending']) + ' still pending' if figures.get('vectors_pending') else ''})."
        )
    if report.stopped:
        ctx.response.answer = (
            f"Reindex stopped by shutdown after {len(report.indexed)} file(s); the index is consistent "
            "(each file old or new). Run reindex again to finish."
        )


def _embed_with_bar(index: IndexService) -> int:
    """Embed what the rebuild left without a vector, with a progress bar on a terminal."""
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task("embedding", total=None)
        return index.embed_pending(lambda done, total: bar.update(task, completed=done, total=total))


async def _embed_in_background(index: IndexService, idle_s: float, retry_s: float) -> None:
    """Embed new and changed chunks batch by batch in a worker thread (writes and keyword search go
    on meanwhile); poll when nothing is pending, back off while the model or endpoint fails. Each
    time it catches up, vectors of text no chunk has any more are dropped (past a slack)."""
    vectors = index.vectors
    if vectors is None:
        return
    busy = True  # the first idle moment also prunes what earlier runs left
    while not index.indexer.stopping():
        try:
            count = await asyncio.to_thread(vectors.embed_batch)
            if not count and busy:
                await asyncio.to_thread(vectors.prune)
        except Exception:
            log.warning("embedding failed; retrying in %.0f s", retry_s, exc_info=True)
            await asyncio.sleep(retry_s)
            continue
        busy = bool(count)
        if not count:
            await asyncio.sleep(idle_s)


@register_step("index_update_loop")
async def index_update_loop(
    ctx: JobContext,
    settle_s: float = 0.5,
    catch_up_s: float = 1.0,
    embed_idle_s: float = 0.5,
    embed_retry_s: float = 30.0,
) -> None:
    """Reconcile, then watch; a second reconcile once the watcher runs closes the start-up gap.

    Every `catch_up_s` it also finishes index writes another process left interrupted. With
    vectors on, a third task embeds new and changed chunks in the background.
    """
    index = _index(ctx)
    await asyncio.to_thread(index.ensure_ready)
    if not index.settings.watch:
        embedded = await asyncio.to_thread(index.embed_pending)
        ctx.response.answer = "index is up to date; watching is off (components.index.watch)"
        if index.vectors is not None:
            ctx.response.answer += f"; {embedded} chunk(s) embedded"
        return

    def on_changes(paths: list[str]) -> None:
        try:
            index.indexer.sync_paths(paths)
        except Exception:
            log.exception("index update of %d path(s) failed; reconciling", len(paths))
            try:
                index.indexer.reconcile()
            except Exception:  # shown by health_check; the loop keeps watching instead of crash-looping
                log.exception("reconcile failed too; the next change or restart tries again")

    async def settle() -> None:
        await asyncio.sleep(settle_s)
        await asyncio.to_thread(index.indexer.reconcile)
        while True:
            await asyncio.sleep(catch_up_s)
            await _caught_up(index)

    background = asyncio.create_task(settle())
    embedding = asyncio.create_task(_embed_in_background(index, embed_idle_s, embed_retry_s))
    try:
        await watch_paths(
            index.root,
            index.scope.watched_folders(),
            on_changes,
            debounce_ms=index.settings.debounce_ms,
            ignore=index.scope.ignores,
        )
    finally:
        background.cancel()
        embedding.cancel()

"""Job steps of the index area: search, node_search, traverse, reindex, index_update_loop.

Each step validates what JSON Schema cannot (dates, paths), then calls the index component.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from datetime import date

from reme.app.components.index import index_service
from reme.app.components.workspace import workspace_of
from reme.app.jobs import JobContext, JobError
from reme.app.progress import reporter
from reme.app.registry import register_step
from reme.index import as_of as as_of_marks
from reme.index.date_query import with_iso_dates
from reme.index.search import SearchFilters, render_hits, render_nodes
from reme.index.service import IndexService
from reme.index.upkeep import UpkeepTiming
from reme.jsontypes import JSONObject
from reme.workspace import frontmatter
from reme.workspace.dates import check_date
from reme.workspace.paths import UnsafePathError, check_relative

DROPPED_WORDS_SHOWN = 10  # words of a query without searchable words quoted back (each cut to 30 characters)
MAX_NODE_BYTES = 1_000_000  # a node read for its statements (`as_of`); bigger ones are shown as they are
READY_WAIT_S = 2.0  # how long a search waits for a running catch-up before answering with a note


def _index(ctx: JobContext) -> IndexService:
    return index_service(ctx.app)


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
    readiness = await index.ready_for_reading(wait_s)
    ctx.response.metadata["index_ready"] = readiness.ready
    if not readiness.ready:
        ctx.response.metadata["index_progress"] = readiness.progress.to_dict()
    return index


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
    hits = await index.search(
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
    answer += _unsearchable(index, query) if not marked else ""
    ctx.response.answer = index.readiness().annotate(answer)
    ctx.response.metadata["results"] = [m.to_dict() for m in marked]
    if as_of:
        ctx.response.metadata["as_of"] = as_of.isoformat()
    _flag_pending(ctx, index)


def _unsearchable(index: IndexService, query: str) -> str:
    """Why a search found nothing when the query has no word the index knows (stop words,
    punctuation, emoji), naming the words dropped, so the user or agent rephrases; else ""."""
    if index.searchable(with_iso_dates(query)):
        return ""
    words = query.split()
    shown = ", ".join(repr(word[:30]) for word in words[:DROPPED_WORDS_SHOWN])
    more = f" and {len(words) - DROPPED_WORDS_SHOWN} more" if len(words) > DROPPED_WORDS_SHOWN else ""
    return (
        f"\n\nThe query has no searchable words (dropped: {shown}{more}): stop words, punctuation and "
        "symbols are left out of the index. Rephrase it with words the note would contain."
    )


def _flag_pending(ctx: JobContext, index: IndexService) -> None:
    """Say so when index writes are still in flight (a reindex batch, a writer elsewhere): the
    results may miss or show the previous version of those files for a moment. With vectors on,
    also how many chunks still wait for their embedding (they are found by keywords meanwhile)."""
    fresh = index.freshness()
    if fresh.pending_writes:
        ctx.response.metadata["index_pending_writes"] = fresh.pending_writes
        ctx.response.answer += (
            f"\n\n(note: {fresh.pending_writes} index write(s) in flight; results may be a moment behind)"
        )
    if not fresh.vectors_on:
        return
    if fresh.vector_error is not None:
        ctx.response.metadata["vector_error"] = fresh.vector_error
        ctx.response.answer += (
            f"\n\n(note: semantic search is unavailable, keyword results only: {fresh.vector_error_reason})"
        )
        return
    waiting = fresh.vectors_pending
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
    nodes = await index.node_search(
        with_iso_dates(query), ctx.params["limit"], folder, keyword_only=ctx.params["keyword_only"]
    )
    as_of = _date(ctx, "as_of")
    nodes = await asyncio.to_thread(_node_validity, ctx, nodes, as_of)
    held = as_of_marks.render_node_validity(nodes)
    answer = render_nodes(query, nodes) + (f"\n\nstatements {_when(as_of)}:\n{held}" if held else "")
    answer += _unsearchable(index, query) if not nodes else ""
    ctx.response.answer = index.readiness().annotate(answer)
    if as_of:
        ctx.response.metadata["as_of"] = as_of.isoformat()
    ctx.response.metadata["results"] = nodes
    _flag_pending(ctx, index)


def _when(as_of: date | None) -> str:
    return f"valid on {as_of.isoformat()}" if as_of else "now (superseded ones marked)"


def _node_validity(ctx: JobContext, nodes: list[JSONObject], as_of: date | None) -> list[JSONObject]:
    """Each node's statements on the day (docs/spec.md §17.3), read from its file; unchanged without validity."""
    ws = workspace_of(ctx.app)
    day = as_of or ctx.app.today()
    out = []
    for node in nodes:
        try:
            file = ws.absolute(str(node["path"]))
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
    if len(seeds) > max_nodes:
        raise JobError(f"path lists {len(seeds)} files; start from at most {max_nodes}")
    written = [_path(seed, "path") for seed in seeds]
    index = await _ready_index(ctx, ready_wait_s)
    seeds = await asyncio.to_thread(lambda: [index.resolve_link(seed) or seed for seed in written])
    nodes, edges = await index.traverse(seeds, ctx.params["depth"], ctx.params["direction"], max_nodes)
    ctx.response.metadata.update({"nodes": [asdict(n) for n in nodes], "edges": [asdict(e) for e in edges]})
    lines = [f"{len(nodes)} node(s), {len(edges)} edge(s):"]
    if len(nodes) >= max_nodes:  # the walk stops taking nodes there: say so, never a silent cut
        lines[0] = (
            f"{len(nodes)} node(s), {len(edges)} edge(s) (stopped at the limit of {max_nodes} nodes; "
            "there may be more: lower depth or start from fewer paths):"
        )
    lines += [
        f"(path {seed} resolved to {named}, as links resolve)"
        for seed, named in zip(written, seeds, strict=True)
        if seed != named
    ]
    for node in nodes:
        about = ": ".join(part for part in (node.name, node.description) if part)
        missing = "" if node.exists else " (missing)"
        lines.append(f"- {node.path}{missing}" + (f" {about}" if about else ""))
    for edge in edges:
        predicate = f" [{edge.predicate}]" if edge.predicate else ""
        anchor = f"#{edge.anchor}" if edge.anchor else ""
        named = f" ({edge.resolved})" if edge.resolved and edge.resolved != edge.target else ""
        lines.append(f"  {edge.source} -> {edge.target}{anchor}{named}{predicate}")
    ctx.response.answer = index.readiness().annotate("\n".join(lines))


@register_step("reindex")
def reindex(ctx: JobContext) -> None:
    report = _index(ctx).rebuild(reporter().counting)  # drawn by the service when it watches
    ctx.response.metadata.update(
        {**report.sync.to_dict(), "files": report.files, "chunks": report.chunks, "links": report.links}
    )
    ctx.response.answer = (
        f"Reindexed {len(report.sync.indexed)} file(s): {report.chunks} chunks, {report.links} links."
    )
    vectors = report.vectors
    if vectors is not None:
        ctx.response.metadata.update(
            {"embedded": vectors.embedded, "vectors": vectors.total, "vectors_pruned": vectors.pruned}
        )
        ctx.response.answer += (
            f" Vectors: {vectors.total} ({vectors.embedded} embedded now, the rest were cached"
            f"{', ' + str(vectors.pending) + ' still pending' if vectors.pending else ''})."
        )
    if report.sync.stopped:
        ctx.response.answer = (
            f"Reindex stopped by shutdown after {len(report.sync.indexed)} file(s); the index is consistent "
            "(each file old or new). Run reindex again to finish."
        )


@register_step("index_update_loop")
async def index_update_loop(
    ctx: JobContext,
    settle_s: float = 0.5,
    catch_up_s: float = 1.0,
    embed_idle_s: float = 0.5,
    embed_retry_s: float = 30.0,
) -> None:
    """The index's upkeep (`IndexService.keep_up`): runs until the service stops, unless watching is off."""
    index = _index(ctx)
    report = await index.keep_up(UpkeepTiming(settle_s, catch_up_s, embed_idle_s, embed_retry_s))
    if not report.watched:
        ctx.response.answer = "index is up to date; watching is off (components.index.watch)"
        if index.vectors_on:
            ctx.response.answer += f"; {report.embedded} chunk(s) embedded"

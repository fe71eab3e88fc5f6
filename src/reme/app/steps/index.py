"""Job steps of the index area: search, node_search, traverse, reindex, index_update_loop.

Each step validates what JSON Schema cannot (dates, paths), then calls the index component.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from datetime import date
from typing import Any

from reme.app.jobs import JobContext, JobError
from reme.app.registry import register_step
from reme.index.search import SearchFilters, render_hits, render_nodes
from reme.index.watch import watch_paths
from reme.workspace.daily import check_date
from reme.workspace.paths import UnsafePathError, check_relative

log = logging.getLogger(__name__)


def _index(ctx: JobContext, name: str = "index") -> Any:
    try:
        return ctx.app.component(name)
    except KeyError:
        raise JobError(f"no {name!r} component is configured; add components.{name} to the config") from None


def _date(ctx: JobContext, key: str) -> date | None:
    raw = ctx.params.get(key)
    if raw in (None, ""):
        return None
    try:
        return date.fromisoformat(check_date(raw, ctx.app.today()))
    except ValueError as exc:
        raise JobError(f"{key}: {exc}, e.g. 2026-06-01") from None


def _path(raw: str, what: str) -> str:
    try:
        return check_relative(raw)
    except UnsafePathError as exc:
        raise JobError(f"{what}: {exc}") from None


@register_step("search")
async def search(ctx: JobContext) -> None:
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
    index = _index(ctx)
    if not index.ready:
        await asyncio.to_thread(index.ensure_ready, wait=False)
    hits = await index.searcher.search(
        query,
        limit=params["limit"],
        min_score=params["min_score"],
        filters=SearchFilters(prefix, start, end, params["strict_date_filter"]),
        expand_links=params["expand_links"],
        max_links_per_direction=params["max_links_per_direction"],
    )
    ctx.response.answer = render_hits(query, hits)
    ctx.response.metadata["results"] = [hit.to_dict() for hit in hits]


@register_step("node_search")
async def node_search(ctx: JobContext, folder: str | None = None) -> None:
    query = ctx.params["query"].strip()
    if not query:
        raise JobError("query is empty; give some words to search for")
    index = _index(ctx)
    if not index.ready:
        await asyncio.to_thread(index.ensure_ready, wait=False)
    folder = folder or index.dirs["digest"]
    nodes = await asyncio.to_thread(index.searcher.node_search, query, ctx.params["limit"], folder)
    ctx.response.answer = render_nodes(query, nodes)
    ctx.response.metadata["results"] = nodes


@register_step("traverse")
async def traverse(ctx: JobContext, max_nodes: int = 1000) -> None:
    raw = ctx.params["path"]
    seeds = [raw] if isinstance(raw, str) else list(raw)
    if not seeds:
        raise JobError("path is empty; give one path or a list of paths to start from")
    seeds = [_path(seed, "path") for seed in seeds]
    index = _index(ctx)
    if not index.ready:
        await asyncio.to_thread(index.ensure_ready)
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
    ctx.response.answer = "\n".join(lines)


@register_step("reindex")
def reindex(ctx: JobContext) -> None:
    index = _index(ctx)
    if sys.stderr.isatty():
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task("reindexing", total=None)
            report = index.reindex(lambda done, total: bar.update(task, completed=done, total=total))
    else:
        report = index.reindex()
    stats = index.stats()
    ctx.response.metadata.update({**report.to_dict(), **{k: stats[k] for k in ("files", "chunks", "links")}})
    ctx.response.answer = (
        f"Reindexed {len(report.indexed)} file(s): {stats['chunks']} chunks, {stats['links']} links."
    )


@register_step("index_update_loop")
async def index_update_loop(ctx: JobContext, settle_s: float = 0.5) -> None:
    """Reconcile, then watch; a second reconcile once the watcher runs closes the start-up gap."""
    index = _index(ctx)
    await asyncio.to_thread(index.ensure_ready)
    if not index.settings["watch"]:
        ctx.response.answer = "index is up to date; watching is off (components.index.watch)"
        return

    def on_changes(paths: list[str]) -> None:
        try:
            index.indexer.sync_paths(paths)
        except Exception:
            log.exception("index update of %d path(s) failed; reconciling", len(paths))
            index.indexer.reconcile()

    async def settle() -> None:
        await asyncio.sleep(settle_s)
        await asyncio.to_thread(index.indexer.reconcile)

    catch_up = asyncio.create_task(settle())
    try:
        await watch_paths(
            index.root,
            index.scope.watched_folders(),
            on_changes,
            debounce_ms=index.settings["debounce_ms"],
            ignore=index.scope.ignores,
        )
    finally:
        catch_up.cancel()

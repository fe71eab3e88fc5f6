"""Steps of digest upkeep (docs/spec.md §12.5): thin adapters over `reme.pipelines.digest` and `reme.pipelines.journal`."""

from __future__ import annotations

from reme.app.jobs import JobContext
from reme.app.port import AppPort
from reme.app.registry import register_step
from reme.pipelines.digest.audit import AuditSettings, digest_audit
from reme.pipelines.digest.maintain import MaintainSettings, digest_maintain
from reme.pipelines.digest.nodes import Overload
from reme.pipelines.journal.changelog import changelog, run_detail
from reme.pipelines.journal.revert import dream_revert


@register_step("digest_maintain")
async def digest_maintain_step(
    ctx: JobContext,
    max_node_chars: int = 6000,
    max_sections: int = 8,
    max_children: int = 8,
    max_nodes: int = 10_000,
    max_parent_chars: int = 60_000,
) -> None:
    settings = MaintainSettings(
        Overload(max_node_chars, max_sections),
        max_children,
        max_nodes,
        max_parent_chars,
    )
    outcome = await digest_maintain(
        AppPort(ctx.app),
        settings,
        path=ctx.params.get("path"),
        max_splits=ctx.params["max_splits"],
        add_usage=ctx.add_usage,
    )
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)


@register_step("dream_revert")
async def dream_revert_step(ctx: JobContext) -> None:
    p = ctx.params
    outcome = await dream_revert(
        AppPort(ctx.app), run_id=p["run_id"], force=p["force"], confirmed=p.get("confirmed")
    )
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)


@register_step("digest_audit")
async def digest_audit_step(
    ctx: JobContext,
    max_node_chars: int = 6000,
    max_sections: int = 8,
    near_duplicate: float = 0.8,
    neighbours: int = 5,
    max_query_chars: int = 2000,
    max_nodes: int = 10_000,
    max_runs: int = 500,
) -> None:
    settings = AuditSettings(
        Overload(max_node_chars, max_sections),
        near_duplicate,
        neighbours,
        max_query_chars,
        max_nodes,
        max_runs,
    )
    outcome = await digest_audit(AppPort(ctx.app), settings)
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)


@register_step("journal")
async def journal_step(ctx: JobContext, max_diff_lines: int = 400) -> None:
    port, params = AppPort(ctx.app), ctx.params
    if params.get("run_id"):
        outcome = await run_detail(port, run_id=params["run_id"], max_diff_lines=int(max_diff_lines))
    else:
        outcome = await changelog(port, limit=params["limit"], kind=params.get("kind"))
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)

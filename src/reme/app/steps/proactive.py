"""Steps of the proactive jobs (docs/spec.md §13): thin adapters over `reme.pipelines.proactive`.

The refresh chain's five steps share one `Refresh` in `ctx.state`; whatever a stage raises becomes
success=false with the run's metadata so far (`llm_calls`, `usage`), and nothing is written.
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import date

from reme.app.jobs import JobContext
from reme.app.port import AppPort
from reme.app.registry import register_step, settings_of
from reme.errors import ReMeError
from reme.pipelines.proactive import refresh as chain
from reme.pipelines.proactive.merge import TopicRules
from reme.pipelines.proactive.read import read_proactive
from reme.pipelines.proactive.state import rebuild, resolve
from reme.workspace.dates import check_date

STATE = "proactive"


def _day(ctx: JobContext) -> date:
    return date.fromisoformat(check_date(ctx.params.get("date"), ctx.app.today()))


async def _stage(ctx: JobContext, stage: Awaitable[None]) -> None:
    """Run one stage; on failure release the run and report it so far (calls made, usage) with the error."""
    run: chain.Refresh = ctx.state[STATE]
    try:
        await stage
    except BaseException as exc:
        await chain.release(run)
        if not isinstance(exc, ReMeError):
            raise
        metadata = {**run.metadata(), "path": None, **exc.metadata, "usage": dict(ctx.usage)}
        raise ReMeError(exc.message, metadata) from None


@register_step("proactive_extract_step", settings=chain.ExtractSettings)
async def proactive_extract_step(
    ctx: JobContext, file_catalog: str = "proactive", **settings: object
) -> None:
    day = _day(ctx)
    options = settings_of(chain.ExtractSettings, "proactive_extract_step", settings)
    try:
        ctx.state[STATE] = await chain.prepare(AppPort(ctx.app), day, options, ctx.add_usage, file_catalog)
    except ReMeError as exc:
        raise ReMeError(exc.message, {"date": day.isoformat(), "llm_calls": 0, **exc.metadata}) from None
    await _stage(ctx, chain.extract(ctx.state[STATE]))


@register_step("proactive_topics_step")
async def proactive_topics_step(
    ctx: JobContext,
    lexical_threshold: float = 0.8,
    min_push_confidence: float = 0.5,
    max_topics: int = 10,
    known_threshold: float = 0.85,  # embedding cosine, when vectors are on and the model is this one
    known_threshold_calibrated_for: str = "",
) -> None:
    rules = TopicRules(
        lexical_threshold=float(lexical_threshold),
        known_threshold=float(known_threshold),
        known_threshold_calibrated_for=str(known_threshold_calibrated_for),
        min_push_confidence=float(min_push_confidence),
        max_topics=int(max_topics),
    )

    async def stage() -> None:
        await chain.topics(ctx.state[STATE], rules)

    await _stage(ctx, stage())


@register_step("proactive_plan_step")
async def proactive_plan_step(ctx: JobContext) -> None:
    await _stage(ctx, chain.plan(ctx.state[STATE]))


@register_step("proactive_agenda_step")
async def proactive_agenda_step(ctx: JobContext) -> None:
    await _stage(ctx, chain.agenda(ctx.state[STATE]))


@register_step("proactive_finish_step")
async def proactive_finish_step(ctx: JobContext, file_catalog: str = "proactive") -> None:
    run: chain.Refresh = ctx.state[STATE]
    await _stage(ctx, chain.finish(run, file_catalog))
    await chain.release(run)
    ctx.response.metadata.update({**run.metadata(), "usage": dict(ctx.usage)})
    ctx.response.answer = chain.summary(run)


@register_step("proactive_step")
async def proactive_step(ctx: JobContext) -> None:
    params = ctx.params
    outcome = await read_proactive(
        AppPort(ctx.app),
        day=_day(ctx),
        include_content=params["include_content"],
        horizon_days=params["horizon_days"],
        min_confidence=float(params["min_confidence"]),
    )
    if not outcome.success:
        raise ReMeError(str(outcome.answer), outcome.metadata)
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)


@register_step("proactive_resolve")
async def proactive_resolve_step(ctx: JobContext) -> None:
    outcome = await resolve(AppPort(ctx.app), ctx.params["topic_id"], ctx.params["reason"])
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)


@register_step("proactive_rebuild")
async def proactive_rebuild_step(ctx: JobContext) -> None:
    outcome = await rebuild(AppPort(ctx.app))
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)

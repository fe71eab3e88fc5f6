"""Daily job steps (docs/spec.md §8): thin adapters over `reme.workspace.daily`; dates default to `app.today()`."""

from __future__ import annotations

from reme.app.components.index import link_source
from reme.app.components.workspace import workspace_of
from reme.app.jobs import JobContext
from reme.app.registry import register_step
from reme.workspace import daily
from reme.workspace.dates import check_date


def _date(ctx: JobContext) -> str:
    return check_date(ctx.params.get("date"), ctx.app.today())


@register_step("daily_create")
def daily_create(ctx: JobContext) -> None:
    p = ctx.params
    day = _date(ctx)
    result = daily.create(
        workspace_of(ctx.app),
        link_source(ctx.app),
        day,
        p.get("name"),
        p.get("session_id"),
        p.get("description"),
    )
    ctx.response.answer = f"{'Created' if result['created'] else 'Exists'}: {result['path']}"
    ctx.response.metadata.update(result)


@register_step("daily_list")
def daily_list(ctx: JobContext) -> None:
    day = _date(ctx)
    notes = daily.list_notes(workspace_of(ctx.app), day)
    ctx.response.answer = "\n".join(
        f"{n['path']}: {n['name']} — {n['description']}".rstrip(" —") for n in notes
    )
    ctx.response.metadata.update({"date": day, "notes": notes})


@register_step("daily_reindex")
def daily_reindex(ctx: JobContext) -> None:
    day = _date(ctx)
    result = daily.reindex(workspace_of(ctx.app), link_source(ctx.app), day)
    ctx.response.answer = (
        f"{'Rewrote' if result['changed'] else 'Unchanged'}: {result['path']} ({result['count']} note(s))"
    )
    ctx.response.metadata.update({"date": day, **result})

"""Steps of the time area (docs/spec.md §17): a thin adapter over `reme.pipelines.annotate_dates`."""

from __future__ import annotations

from datetime import date

from reme.app.jobs import JobContext, JobError
from reme.app.port import AppPort
from reme.app.registry import register_step
from reme.pipelines.annotate_dates import annotate_dates
from reme.workspace.dates import parse_date


@register_step("annotate_dates")
async def annotate_dates_step(ctx: JobContext, max_files: int = 5000) -> None:
    if not ctx.params["path"].strip():  # the pipeline strips it: " " would mean the whole workspace
        raise JobError("path is blank; name a Markdown file or folder, or '.' for the whole workspace")
    raw = ctx.params.get("date")
    day: date | None = None
    if raw:
        try:
            day = parse_date(raw)
        except ValueError as exc:
            raise JobError(f"{exc}, e.g. 2026-06-01") from None
    outcome = await annotate_dates(
        AppPort(ctx.app), path=ctx.params["path"], day=day, dry_run=ctx.params["dry_run"], max_files=max_files
    )
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)

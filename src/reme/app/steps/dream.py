"""Steps of `auto_dream` and `dream_cron`: thin adapters over `reme.pipelines.dream.run`.

Each unit's progress goes to `reme.app.progress.reporter()`: a one-shot `reme start job=auto_dream`
on a terminal prints it as it happens; the service and pipes stay quiet.
"""

from __future__ import annotations

from reme.app.components.digest import buckets_of
from reme.app.jobs import JobContext
from reme.app.port import AppPort
from reme.app.progress import reporter
from reme.app.registry import register_step
from reme.pipelines.dream.integrate import Recall
from reme.pipelines.dream.material import Bounds
from reme.pipelines.dream.run import DreamSettings, auto_dream
from reme.workspace.buckets import buckets_page


async def _progress(line: str) -> None:
    """Each unit's progress to the reporter the service installed (drawn on a terminal, else dropped)."""
    reporter().say("dream", line)


@register_step("auto_dream")
async def auto_dream_step(
    ctx: JobContext,
    max_chars_per_file: int = 60_000,
    max_total_chars: int = 300_000,
    recall_limit: int = 20,
    traverse_depth: int = 2,
    max_recall_nodes: int = 30,
) -> None:
    port = AppPort(ctx.app)
    buckets = buckets_of(ctx.app)
    settings = DreamSettings(
        buckets=[bucket.name for bucket in buckets],
        buckets_page=buckets_page(buckets, port.folder("digest")),
        bounds=Bounds(int(max_chars_per_file), int(max_total_chars)),
        recall=Recall(int(recall_limit), int(traverse_depth), int(max_recall_nodes)),
    )
    params = ctx.params
    outcome = await auto_dream(
        port,
        settings,
        date_text=params.get("date"),
        scan_days=params["scan_days"],
        max_units=params["max_units"],
        hint=params["hint"],
        add_usage=ctx.add_usage,
        kind=ctx.job.name,
        progress=_progress,
    )
    ctx.response.answer = outcome.answer
    ctx.response.metadata.update(outcome.metadata)

"""Running background and cron jobs for the lifetime of the service.

A background job is supervised: when its steps fail (a crash), it is restarted after a delay that
doubles up to a cap. A cron job runs its steps at each time its expression gives, in the
application timezone; a failed run is logged and the schedule goes on.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Protocol

from reme.app.jobs import JobHost, JobSpec, Response, execute


class Scheduler(JobHost, Protocol):
    """A job host that keeps the outcomes of the jobs it runs on its own (`Application`)."""

    @property
    def job_runs(self) -> list[tuple[str, Response]]: ...


log = logging.getLogger(__name__)


async def supervise(app: Scheduler, job: JobSpec) -> None:
    """Run a background job; restart it with exponential back-off after each crash."""
    delay = job.restart_delay
    while True:
        response = await execute(app, job, {}, scheduled=True)
        app.job_runs.append((job.name, response))
        if response.success:
            log.info("background job %s finished", job.name)
            return
        log.warning("background job %s crashed: %s; restarting in %.1fs", job.name, response.answer, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, job.max_restart_delay)


async def run_on_schedule(app: Scheduler, job: JobSpec) -> None:
    """Fire a cron job at every time its expression yields, in the application timezone."""
    from croniter import croniter

    schedule = croniter(job.cron, datetime.now(app.tz))
    while True:
        fire_at: datetime = schedule.get_next(datetime)
        # asyncio may wake a little early (monotonic vs wall clock); never fire before the time.
        while (wait := (fire_at - datetime.now(app.tz)).total_seconds()) > 0:
            await asyncio.sleep(wait)
        response = await execute(app, job, {}, scheduled=True)
        app.job_runs.append((job.name, response))
        if not response.success:
            log.warning("cron job %s failed: %s", job.name, response.answer)

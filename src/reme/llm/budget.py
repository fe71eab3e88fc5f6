"""A wall-clock budget for the model requests of one job run.

A job run opens a scope (`job_run`, around the job's steps); the first agent run inside it claims
the budget (`components.llm.run_budget` seconds, counted from the start of the job run), and every
agent run of that job run, retries included, must end by then. A job run nested in another (a job
an agent or a loop runs) has its own budget, but never outlives one its caller has claimed; a
background loop that asks no model itself claims nothing, so the jobs it starts each get theirs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class _Scope:
    started: float
    parent: _Scope | None
    claimed: float | None = None  # the budget in seconds, once an agent run here asked for one

    def deadline(self) -> float | None:
        own = None if self.claimed is None else self.started + self.claimed
        above = self.parent.deadline() if self.parent is not None else None
        candidates = [d for d in (own, above) if d is not None]
        return min(candidates) if candidates else None


_scope: ContextVar[_Scope | None] = ContextVar("reme_llm_budget", default=None)


@contextmanager
def job_run() -> Iterator[None]:
    """The scope of one job run: its model requests share one budget."""
    token = _scope.set(_Scope(time.monotonic(), _scope.get()))
    try:
        yield
    finally:
        _scope.reset(token)


def remaining(seconds: float) -> float:
    """Seconds left for model requests in this job run, claiming a budget of `seconds` on first use.

    Outside any job run (a pipeline called directly) each agent run has the whole budget.
    """
    scope = _scope.get()
    if scope is None:
        return seconds
    if scope.claimed is None:
        scope.claimed = seconds
    deadline = scope.deadline()
    assert deadline is not None  # this scope has just claimed one
    return deadline - time.monotonic()

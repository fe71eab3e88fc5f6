"""The last job failures of an application, kept in a bounded ring for its status view.

A background or cron job that fails (a dream run whose model is down, a sync that cannot reach
its remote) answers nobody: its failure is only in the log. Every failed run is noted here (time,
job, the answer's first characters), so `recent_errors` — Studio's status view, HTTP, MCP, CLI —
shows what went wrong lately. A caller's own mistake (a bad path, an unknown session id) is kept
too, in a ring of its own: an agent that repeats one can never push the failures nobody was told
of out of the list. In memory only: a restart starts empty rings.
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections import deque
from dataclasses import asdict, dataclass, field

MAX_ERRORS = 50
MAX_MESSAGE = 500  # characters of an answer kept per failure


@dataclass(frozen=True)
class JobFailure:
    at: str  # local time, ISO 8601 with its offset
    job: str
    message: str
    order: int = field(default=0, compare=False)  # when it was noted, among both rings

    def to_dict(self) -> dict[str, str]:
        return {key: value for key, value in asdict(self).items() if key != "order"}


class RecentErrors:
    """The newest `size` failures of each kind (a caller's mistake, any other), oldest dropped
    first; safe from worker threads."""

    def __init__(self, size: int = MAX_ERRORS) -> None:
        self._others: deque[JobFailure] = deque(maxlen=size)
        self._mistakes: deque[JobFailure] = deque(maxlen=size)
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def add(self, job: str, message: str, *, caller_mistake: bool = False) -> None:
        """Note a failed run; `caller_mistake`: a user error answered to the caller who made it."""
        with self._lock:
            failure = JobFailure(
                time.strftime("%Y-%m-%dT%H:%M:%S%z"), job, message[:MAX_MESSAGE], next(self._counter)
            )
            (self._mistakes if caller_mistake else self._others).append(failure)

    def newest(self, limit: int = MAX_ERRORS) -> list[JobFailure]:
        """Up to `limit` failures, newest first; the limit keeps the other failures before the
        callers' mistakes, so a burst of mistakes cannot hide a failure nobody was told of."""
        with self._lock:
            others = list(reversed(self._others))[:limit]
            mistakes = list(reversed(self._mistakes))[: limit - len(others)]
        return sorted([*others, *mistakes], key=lambda failure: -failure.order)


_RINGS: weakref.WeakKeyDictionary[object, RecentErrors] = weakref.WeakKeyDictionary()


def recent_errors(app: object) -> RecentErrors:
    """The ring of one application (made on first use; it goes with the application)."""
    ring = _RINGS.get(app)
    if ring is None:
        ring = _RINGS.setdefault(app, RecentErrors())
    return ring

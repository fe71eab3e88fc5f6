"""The last job failures of an application, kept in a bounded ring for its status view.

A background or cron job that fails (a dream run whose model is down, a sync that cannot reach
its remote) answers nobody: its failure is only in the log. Every failed run is noted here (time,
job, the answer's first characters), so `recent_errors` — Studio's status view, HTTP, MCP, CLI —
shows what went wrong lately. In memory only: a restart starts an empty ring.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from dataclasses import asdict, dataclass

MAX_ERRORS = 50
MAX_MESSAGE = 500  # characters of an answer kept per failure


@dataclass(frozen=True)
class JobFailure:
    at: str  # local time, ISO 8601 with its offset
    job: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


class RecentErrors:
    """The newest MAX_ERRORS failures, oldest dropped first; safe from worker threads."""

    def __init__(self, size: int = MAX_ERRORS) -> None:
        self._ring: deque[JobFailure] = deque(maxlen=size)
        self._lock = threading.Lock()

    def add(self, job: str, message: str) -> None:
        failure = JobFailure(time.strftime("%Y-%m-%dT%H:%M:%S%z"), job, message[:MAX_MESSAGE])
        with self._lock:
            self._ring.append(failure)

    def newest(self, limit: int = MAX_ERRORS) -> list[JobFailure]:
        """Up to `limit` failures, newest first."""
        with self._lock:
            return list(reversed(self._ring))[:limit]


_RINGS: weakref.WeakKeyDictionary[object, RecentErrors] = weakref.WeakKeyDictionary()


def recent_errors(app: object) -> RecentErrors:
    """The ring of one application (made on first use; it goes with the application)."""
    ring = _RINGS.get(app)
    if ring is None:
        ring = _RINGS.setdefault(app, RecentErrors())
    return ring

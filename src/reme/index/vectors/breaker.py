"""The circuit breaker in front of query embedding (docs/spec.md §5.2).

A query needs the embedder (a local model or an endpoint). When that fails or hangs, every search
would wait on it again; after one failure the breaker stays open for `cooldown_s`, and the vector
branch fails at once without a request, so searches answer from keywords alone meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from reme.index.search import VectorsUnavailable

QUERY_COOLDOWN_S = 30.0  # after a failed query, searches answer from keywords alone this long


class CircuitBreaker:
    """Open for `cooldown_s` after a failure; closed again by the next success."""

    def __init__(self, cooldown_s: float = QUERY_COOLDOWN_S) -> None:
        self.cooldown_s = cooldown_s
        self._failure: tuple[float, str] | None = None  # (monotonic time, error) of the last failure

    def open_reason(self) -> str | None:
        """The last failure while it is under `cooldown_s` old, else None (calls go through)."""
        failure = self._failure
        if failure is None or time.monotonic() - failure[0] >= self.cooldown_s:
            return None
        return failure[1]

    @contextmanager
    def guarding(self) -> Iterator[None]:
        """Run the body unless open (`VectorsUnavailable` then); a failure in it opens the breaker."""
        reason = self.open_reason()
        if reason is not None:
            raise VectorsUnavailable(f"semantic search is paused after a failure: {reason}")
        try:
            yield
        except Exception as exc:
            self._failure = (time.monotonic(), f"{type(exc).__name__}: {exc}"[:300])
            raise
        self._failure = None

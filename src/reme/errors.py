"""The one error type of reme: a message meant for the user plus structured metadata.

Steps, pipelines and the agent runner raise it (or a subclass); the job runner turns it into
`success=false` with `message` as the answer and `metadata` merged into the response. It lives at the
bottom of the package so every layer can use it without importing one above.
"""

from __future__ import annotations

from typing import Any


class ReMeError(Exception):
    """A failure with a readable `message` and `metadata` that still describes what was done."""

    def __init__(self, message: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.metadata: dict[str, Any] = dict(metadata or {})


class LLMUnavailable(ReMeError):
    """No usable model for a role; the message names the setting to fill in or fix."""


class Conflict(ReMeError):
    """A compare-and-set write found the file changed since it was read."""

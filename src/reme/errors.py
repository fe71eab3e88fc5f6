"""The error tree of reme: a user error, something unavailable, or a bug (docs/architecture.md, "Errors").

- `UserError`: the request, its input or the configuration is wrong; the message says what to change.
  Shown as it is, no traceback logged.
- `Unavailable`: something the job needs is not there or does not answer now (no model configured, a
  service not running, a lock held by another writer); the message says what to start, configure or
  wait for. Shown as it is, no traceback logged.
- A bug: any other exception. Its traceback is logged and the answer says it is a bug.

`ReMeError` is the root of the first two: a message meant for the user plus structured `metadata`
that still describes what was done. Code that predates the split raises `ReMeError` itself, which
counts as a user error. `kind_of` sorts any exception into the tree, for the job runner and the
service. The module lives at the bottom of the package so every layer can use it.
"""

from __future__ import annotations

import linecache
from typing import Any, Literal

ErrorKind = Literal["user", "unavailable", "bug"]


class ReMeError(Exception):
    """A failure with a readable `message` and `metadata` that still describes what was done."""

    def __init__(self, message: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.metadata: dict[str, Any] = dict(metadata or {})  # merged into the response's metadata


class UserError(ReMeError):
    """The request, its input or the configuration is wrong; the message says what to change."""


class Unavailable(ReMeError):
    """Something needed is not there or does not answer now; the message says what to start or configure."""


class LLMUnavailable(Unavailable):
    """No usable model for a role; the message names the setting to fill in or fix."""


class Conflict(UserError):
    """A compare-and-set write found the file changed since it was read."""


# Errors about the user's files and paths: their message names the path, meant for the user.
_FILE_ERRORS = (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError, NotADirectoryError)
# Something that did not answer in time or at all.
_UNAVAILABLE = (TimeoutError, ConnectionError)


def kind_of(exc: BaseException) -> ErrorKind:
    """Where `exc` sits in the tree.

    A `ValueError` is a user error only when reme raised it on purpose, with a message (the innermost
    frame of its traceback is a `raise` statement in reme's own code): modules written before the
    tree say "bad input" that way. A `ValueError` from a library or from a failed conversion in reme
    (`int("x")`) is a bug.
    """
    if isinstance(exc, Unavailable):
        return "unavailable"
    if isinstance(exc, ReMeError):
        return "user"
    if isinstance(exc, _UNAVAILABLE):
        return "unavailable"
    if isinstance(exc, _FILE_ERRORS):
        return "user"
    if isinstance(exc, ValueError) and _raised_by_reme(exc):
        return "user"
    return "bug"


def bug_message(exc: BaseException) -> str:
    """The answer for a bug: what failed, and that it is reme's fault, not the request's."""
    return f"internal error (a bug in reme; its traceback is in the log): {type(exc).__name__}: {exc}"


def _raised_by_reme(exc: BaseException) -> bool:
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    module = str(frame.f_globals.get("__name__", ""))
    if module != "reme" and not module.startswith("reme."):
        return False
    line = linecache.getline(frame.f_code.co_filename, tb.tb_lineno, frame.f_globals)
    return line.lstrip().startswith("raise ")

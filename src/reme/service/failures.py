"""How HTTP and MCP answer a failure, by its place in the error tree (`reme.errors`, docs/architecture.md).

A job that ran answers as it always did — HTTP 200 with `success=false`, an MCP result with
`is_error` — and names the kind of its failure beside the answer (the `X-ReMe-Error` header, the
`reme/error` key of the tool result's `_meta`): `user` (fix the request), `unavailable` (start,
configure or wait for something), `bug` (reme's fault: its traceback is in the service log). What
escapes the job runner is sorted here the same way; a bug's traceback is logged once, here.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from reme.errors import ErrorKind, ReMeError, bug_message, kind_of

log = logging.getLogger(__name__)
ERROR_HEADER = "x-reme-error"  # HTTP: the kind of a failure (absent on success)
ERROR_META = "reme/error"  # MCP: the same in the tool result's `_meta`
# What a failure that escaped the job runner answers over HTTP.
STATUS: dict[ErrorKind, int] = {
    "user": HTTPStatus.BAD_REQUEST,
    "unavailable": HTTPStatus.SERVICE_UNAVAILABLE,
    "bug": HTTPStatus.INTERNAL_SERVER_ERROR,
}


def escaped(exc: BaseException, where: str) -> tuple[ErrorKind, str]:
    """The kind of a failure that escaped the job runner and the answer a client gets; a bug's
    traceback goes to the log (`where` names what failed: a route, a stream, a tool)."""
    kind = kind_of(exc)
    if kind == "bug":
        log.error("%s failed (a bug)", where, exc_info=exc)
        return kind, bug_message(exc)
    message = exc.message if isinstance(exc, ReMeError) else str(exc)
    return kind, message or type(exc).__name__

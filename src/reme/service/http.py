"""HTTP interface: `POST /<job>` → Response JSON, stream jobs as Server-Sent Events.

Routes and the OpenAPI document are generated from the job table, so each job's request body is
documented by its own parameter schema. Status codes: 200 when the job ran (its `success` says how
it went), 400 for a body that is not a JSON object, 422 for parameters the schema refuses, 404 for
jobs that are unknown or not served, 401 without the access token. Every answer, errors included, has the Response shape
`{success, answer, metadata}` so clients never need a second parser. A failed run names the kind of
its failure in the `X-ReMe-Error` header (`user`, `unavailable`, `bug`: `service/failures.py`); what
escapes a route answers 400, 503 or 500 by the same kinds, a bug with its traceback in the log.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from reme import __version__
from reme.app.application import Application
from reme.app.jobs import MAX_PARAM_DEPTH, JobSpec, ParameterError, run_steps, validate_params
from reme.app.local_jobs import is_local, local_command
from reme.app.spelling import did_you_mean
from reme.jsontypes import JSONObject, JSONValue, json_depth
from reme.service.failures import ERROR_HEADER, STATUS, escaped
from reme.service.identity import WorkspaceIdentity
from reme.service.service_info import MAX_BODY_BYTES

if TYPE_CHECKING:
    from reme.service.studio.gate import StudioGate

RESPONSE_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "success": {"type": "boolean"},
        "answer": {"description": "text, or a JSON value for structured answers"},
        "metadata": {"type": "object"},
    },
    "required": ["success", "answer", "metadata"],
}
# No parameter needs more; deeper JSON would exhaust the recursion of the parser, the schema
# validator or the encoder of the answer.
MAX_JSON_DEPTH = MAX_PARAM_DEPTH  # every interface refuses deeper values (`validate_params`)
STREAM_DESCRIPTION = (
    "text/event-stream: one `data:` line of JSON per chunk; failures arrive as "
    '`{"type": "error", "message": ...}`; always ends with `{"type": "done", "success": ...}`.'
)


def json_response(
    data: Mapping[str, object], status_code: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """JSON that never fails to encode: values without a JSON form (paths, dates) become strings."""
    body = json.dumps(data, ensure_ascii=False, default=str)
    return Response(body, status_code=status_code, media_type="application/json", headers=headers)


def failure(message: str, status_code: int, **headers: str) -> JSONResponse:
    return JSONResponse(
        {"success": False, "answer": message, "metadata": {}},
        status_code=status_code,
        headers=headers or None,
    )


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes | None:
    """The request body, or None once it grows past `limit` bytes (never buffered beyond that)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            return None
    return bytes(body)


async def _params_of(request: Request) -> JSONObject:
    """The parameters a refused request sent, for the command that would run it; {} when unreadable."""
    try:
        params = await read_params(request)
    except Exception:  # a message is being built: whatever the body holds, never fail it
        return {}
    return params if isinstance(params, dict) else {}


async def read_params(request: Request) -> JSONObject | JSONResponse:
    """The JSON object in the body (empty body = no parameters), or a 400/413 saying what is wrong."""
    body = await read_body(request)
    if body is None:
        return failure(f"the body is larger than {MAX_BODY_BYTES} bytes", 413)
    if not body.strip():
        return {}
    too_deep = f"the JSON body is nested more than {MAX_JSON_DEPTH} levels deep; flatten it"
    try:
        params: JSONValue = json.loads(body, object_pairs_hook=_unique_keys)
    except RecursionError:
        return failure(too_deep, 400)
    except DuplicateKey as exc:
        return failure(f"the JSON body names {exc.args[0]!r} twice; send each parameter once", 400)
    except (ValueError, UnicodeDecodeError) as exc:
        return failure(f"invalid JSON body: {exc}; send the parameters as a JSON object", 400)
    if json_depth(params, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        return failure(too_deep, 400)
    if not isinstance(params, dict):
        return failure(f"the body must be a JSON object of parameters, got {_json_type(params)}", 400)
    return params


class DuplicateKey(ValueError):
    """A JSON object names one key twice."""


def _unique_keys(pairs: list[tuple[str, JSONValue]]) -> JSONObject:
    """A JSON object whose keys are all different: `{"path": "a", "path": "b"}` silently meant "b"
    to the parser, but may mean "a" to whatever checked or logged the request on its way."""
    params: JSONObject = {}
    for key, value in pairs:
        if key in params:
            raise DuplicateKey(key)
        params[key] = value
    return params


def _json_type(value: JSONValue) -> str:
    """The JSON name of a value's type (`null`, not Python's `NoneType`), for messages."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def sse_line(chunk: object) -> bytes:
    return b"data: " + json.dumps(chunk, ensure_ascii=False, default=str).encode() + b"\n\n"


async def sse_events(app: Application, job: str, params: JSONObject) -> AsyncIterator[bytes]:
    """Chunks of a stream job as SSE; a crash mid-stream still ends with an error and a done chunk."""
    done_sent = False
    try:
        async for chunk in app.stream(job, **params):
            done_sent = isinstance(chunk, dict) and chunk.get("type") == "done"
            yield sse_line(chunk)
    except Exception as exc:  # app.stream answers a job's own failure in chunks: this is its machinery's
        _kind, message = escaped(exc, f"stream {job}")
        if not done_sent:
            yield sse_line({"type": "error", "message": message})
    if not done_sent:
        yield sse_line({"type": "done", "success": False})


def _endpoint(app: Application, job: JobSpec) -> Callable[[Request], Awaitable[Response]]:
    async def run_job(request: Request) -> Response:
        params = await read_params(request)
        if isinstance(params, JSONResponse):
            return params
        if job.kind == "stream":
            return StreamingResponse(
                sse_events(app, job.name, params),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        try:
            checked = validate_params(job, params)  # refused before any step runs: a client error, so 422
        except ParameterError as exc:
            return failure(str(exc), 422)
        response = await run_steps(app, job, checked)
        if not job.read_only:  # an answer that may have changed files names the workspace it changed
            response.metadata.setdefault("workspace", str(app.workspace_dir))
        kind = {ERROR_HEADER: response.error} if response.error and not response.success else None
        return json_response(response.to_dict(), headers=kind)

    run_job.__name__ = f"job_{job.name}"
    return run_job


def _openapi_extra(job: JobSpec) -> JSONObject:
    return {"requestBody": {"required": False, "content": {"application/json": {"schema": job.parameters}}}}


def _responses(job: JobSpec) -> dict[int | str, JSONObject]:
    refusal: JSONObject = {"content": {"application/json": {"schema": RESPONSE_SCHEMA}}}
    bad_body: dict[int | str, JSONObject] = {400: {"description": "the body is not a JSON object", **refusal}}
    if job.kind == "stream":
        return {200: {"description": STREAM_DESCRIPTION, "content": {"text/event-stream": {}}}, **bad_body}
    return {
        200: {"description": "the job ran; `success` says how it went", **refusal},
        **bad_body,
        422: {"description": "the parameters do not match the schema (no step ran)", **refusal},
    }


def build_http_app(
    app: Application, token: str | None = None, closing: threading.Event | None = None
) -> StudioGate:
    """The ASGI app serving every servable job of a started application, and Studio at /studio.

    Token-gated when a token is given (a Studio login turns it into a session cookie); `closing`,
    once set, ends Studio's open event streams so that shutdown need not wait for them.
    """
    api = FastAPI(title="reme", version=__version__, description="Jobs of a reme workspace.")
    for job in sorted(app.served_jobs(), key=lambda j: j.name):
        api.add_api_route(
            f"/{job.name}",
            _endpoint(app, job),
            methods=["POST"],
            name=job.name,
            operation_id=job.name,
            summary=job.description.splitlines()[0] if job.description else job.name,
            description=job.description,
            tags=[job.kind],
            openapi_extra=_openapi_extra(job),
            responses=_responses(job),
        )
    served = {job.name for job in app.served_jobs()}

    @api.exception_handler(Exception)
    async def server_error(request: Request, exc: Exception) -> JSONResponse:
        """Whatever escapes a route still answers with the Response shape, by its kind (a bug is logged)."""
        kind, message = escaped(exc, f"HTTP {request.url.path}")
        return failure(message, STATUS[kind], **{ERROR_HEADER: kind})

    @api.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        name = request.url.path.strip("/")
        if exc.status_code == 404 and not name:
            return failure("POST /<job> with the parameters as a JSON object; POST /help lists the jobs", 404)
        if exc.status_code == 404 and name in app.jobs and is_local(app.jobs[name]):
            command = local_command(app.jobs[name], app.workspace_dir, await _params_of(request))
            return failure(
                f"job {name!r} is not served over HTTP (a local job); run it here with `{command}`", 404
            )
        if exc.status_code == 404:
            why = "is not served over HTTP" if name in app.jobs else f"is unknown{did_you_mean(name, served)}"
            return failure(f"job {name!r} {why}; POST /help (or `reme help`) lists the jobs", 404)
        if exc.status_code == 405 and name in served:
            return failure(f"use POST /{name} with the parameters as a JSON object", 405, Allow="POST")
        return failure(str(exc.detail), exc.status_code)

    from reme.service.studio.gate import StudioGate
    from reme.service.studio.routes import mount_studio
    from reme.service.studio.sessions import Sessions

    sessions = Sessions()
    mount_studio(api, app.workspace_dir, token, sessions, closing or threading.Event())
    return StudioGate(WorkspaceIdentity(api, app.workspace_dir), token, sessions)

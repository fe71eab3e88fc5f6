"""MCP interface: every servable non-stream job is a tool whose input schema is the job's parameters.

Each tool carries the hints of its job's declaration (`readOnlyHint`, `destructiveHint`,
`idempotentHint`; see `JobSpec.read_only`), and `service.mcp_profile: read_only` serves only the
read-only tools, for a client that must not change the memory.

Built on the SDK's low-level `Server` because reme's tools are declared as JSON Schemas in config,
not as Python signatures. A tool result carries the answer as text and the whole Response as
structured content, and `is_error` mirrors `success=false`; the result's `_meta` names the workspace
that served it and, for a failure, its kind (`reme/error`: user, unavailable or bug; `service/failures.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.sse import SseServerTransport
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from reme import __version__
from reme.app.application import Application
from reme.app.jobs import JobSpec, Response
from reme.app.local_jobs import is_local, local_command
from reme.service.failures import ERROR_META, escaped
from reme.service.identity import WorkspaceIdentity
from reme.service.security import BearerTokenGate, send_json
from reme.service.service_info import MAX_BODY_BYTES

SSE_MESSAGE_PATH = "/messages/"
WORKSPACE_META = "reme/workspace"  # `_meta` key of every tool result: the workspace that served it
# Open sessions per network transport. A session holds ~38 KB, streams and a task; a local memory
# service serves a few agents (one session each, a few more with sub-agents or reconnects), so 256
# leaves ample room while whoever opens sessions can hold ~10 MB at most (the SDK's default, 10 000
# for streamable HTTP, let them hold ~380 MB; SSE had no limit). Past it a new session gets 503.
MAX_MCP_SESSIONS = 256


def mcp_profile(app: Application) -> str:
    service = app.config.get("service")
    return str((service.get("mcp_profile") if isinstance(service, dict) else None) or "full")


def tool_jobs(app: Application) -> dict[str, JobSpec]:
    """The jobs served as tools under the configured profile."""
    read_only = mcp_profile(app) == "read_only"
    return {
        job.name: job
        for job in app.served_jobs()
        if job.kind != "stream" and (job.read_only or not read_only)
    }


def tool_annotations(job: JobSpec) -> types.ToolAnnotations:
    """MCP behaviour hints from the job's declaration; a job that writes is destructive unless it says not."""
    declared = job.annotations
    if job.read_only:
        return types.ToolAnnotations(read_only_hint=True, open_world_hint=declared.get("open_world", False))
    return types.ToolAnnotations(
        read_only_hint=False,
        destructive_hint=declared.get("destructive", True),
        idempotent_hint=declared.get("idempotent", False),
        open_world_hint=declared.get("open_world", False),
    )


def tool_result(response: Response) -> types.CallToolResult:
    """A Response as an MCP tool result: the answer as content, the whole Response as structured content.

    An image answer (base64 with an `image/*` mime type in metadata, as `read_image` gives) becomes an
    image block, and the structured copy leaves the base64 out so the model does not read it twice.
    """
    data = response.to_dict()
    mime = response.metadata.get("mime_type")
    content: types.ContentBlock
    if (
        response.success
        and isinstance(mime, str)
        and mime.startswith("image/")
        and isinstance(response.answer, str)
    ):
        content = types.ImageContent(data=response.answer, mime_type=mime)
        data["answer"] = f"(image {mime}, in the content block)"
    elif isinstance(response.answer, str):
        content = types.TextContent(text=response.answer)
    else:
        content = types.TextContent(
            text=json.dumps(response.answer, ensure_ascii=False, indent=2, default=str)
        )
    return types.CallToolResult(
        content=[content],
        structured_content=json.loads(json.dumps(data, default=str)),
        is_error=not response.success,
    )


def build_mcp_server(app: Application) -> Server[object]:
    """An MCP server exposing the started application's jobs as tools."""

    async def list_tools(
        ctx: ServerRequestContext[object], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=job.name,
                    description=job.description or job.name,
                    input_schema=job.parameters,
                    annotations=tool_annotations(job),
                )
                for job in sorted(tool_jobs(app).values(), key=lambda j: j.name)
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[object], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tools = tool_jobs(app)
        if params.name not in tools:
            message = f"unknown tool {params.name!r}; available: {', '.join(sorted(tools))}"
            served = {job.name: job for job in app.served_jobs()}
            if params.name in served and served[params.name].kind == "stream":
                message = f"{params.name!r} is a stream job, not an MCP tool; call it over HTTP (POST /{params.name})"
            elif params.name in served:
                message = f"tool {params.name!r} changes the memory and this server's profile is read_only"
            elif params.name in app.jobs and is_local(app.jobs[params.name]):
                command = local_command(app.jobs[params.name], app.workspace_dir)
                message = (
                    f"unknown tool {params.name!r}: a local job, not served; run it here with `{command}`"
                )
            return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)
        try:
            response = await app.run(params.name, **(params.arguments or {}))
        except Exception as exc:  # the job runner answers a job's own failures: this is its machinery's
            kind, message = escaped(exc, f"MCP tool {params.name}")
            response = Response(False, message, {}, kind)
        if not tools[params.name].read_only:  # as over HTTP: a change names its workspace
            response.metadata.setdefault("workspace", str(app.workspace_dir))
        result = tool_result(response)
        result.meta = {WORKSPACE_META: str(app.workspace_dir)}  # names the workspace on stdio too
        if response.error and not response.success:
            result.meta[ERROR_META] = response.error
        return result

    def input_schema(name: str) -> Mapping[str, object] | None:
        job = tool_jobs(app).get(name)
        return job.parameters if job else None

    return Server(
        "reme",
        version=__version__,
        instructions="Tools over a reme memory workspace of Markdown files; paths are workspace-relative.",
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _sse_app(server: Server[object], path: str) -> Starlette:
    sse = SseServerTransport(SSE_MESSAGE_PATH, max_request_body_size=MAX_BODY_BYTES)

    class SseEndpoint:
        """ASGI endpoint (a class, so Starlette passes the raw scope rather than a Request).

        A session lives as long as its GET stream, so the streams open are counted: one past
        MAX_MCP_SESSIONS is refused, and a stream that ends (however it ends) frees its slot.
        """

        def __init__(self) -> None:
            self.open = 0

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            if self.open >= MAX_MCP_SESSIONS:
                message = (
                    f"{MAX_MCP_SESSIONS} MCP sessions are open, the most this service takes: "
                    "close one (end a client that is connected) and connect again"
                )
                await send_json(send, 503, message)
                return
            self.open += 1
            try:
                async with sse.connect_sse(scope, receive, send) as (read_stream, write_stream):
                    await server.run(read_stream, write_stream, server.create_initialization_options())
            finally:
                self.open -= 1

    return Starlette(
        routes=[
            Route(path, endpoint=SseEndpoint(), methods=["GET"]),
            Mount(SSE_MESSAGE_PATH, app=sse.handle_post_message),
        ]
    )


class McpPathsOnly:
    """Answers a plain HTTP request (`POST /search`, the CLI told `port=`) with where MCP is served,
    instead of a bare 404: the caller is talking to an MCP service, not to the HTTP job API."""

    def __init__(self, app: ASGIApp, paths: tuple[str, ...], transport: str) -> None:
        self.app = app
        self.paths = paths
        self.transport = transport

    def _serves(self, path: str) -> bool:
        return any(path == p.rstrip("/") or path.startswith(p.rstrip("/") + "/") for p in self.paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._serves(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        message = (
            f"this is a reme MCP service ({self.transport} at {self.paths[0]}), not the HTTP job API: "
            f"connect an MCP client to {self.paths[0]}, or start an HTTP service "
            "(`reme start service.backend=http`) to POST /<job>"
        )
        await send_json(send, 404, message)


def build_mcp_asgi_app(app: Application, transport: str, path: str, token: str | None) -> ASGIApp:
    """The ASGI app for the network transports (`sse`, `streamable-http`) at `path`.

    Browser-forged requests to a loopback service are refused by `LoopbackGuard` around it (the
    runner adds it for both backends), so the SDK's own Host check stays off: on 127.0.0.1 it would
    refuse a token-holding proxy's Host too. Bodies are capped as over HTTP (`MAX_BODY_BYTES`), not
    at the SDK's 4 MiB, so that a file job takes the same text over both. Both transports take at
    most MAX_MCP_SESSIONS sessions at once; a streamable-HTTP session ends with the client's DELETE or
    after the SDK's 30 idle minutes.
    """
    server = build_mcp_server(app)
    if transport == "sse":
        asgi: ASGIApp = McpPathsOnly(_sse_app(server, path), (path, SSE_MESSAGE_PATH), transport)
    else:
        asgi = McpPathsOnly(
            server.streamable_http_app(
                streamable_http_path=path,
                max_request_body_size=MAX_BODY_BYTES,
                max_sessions=MAX_MCP_SESSIONS,
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            ),
            (path,),
            transport,
        )
    asgi = WorkspaceIdentity(asgi, app.workspace_dir)
    return BearerTokenGate(asgi, token) if token else asgi


async def serve_stdio(app: Application) -> None:
    """Start the application and serve MCP over stdin/stdout until the client closes stdin.

    The application starts inside `stdio_server`, which points fd 1 at stderr meanwhile, so nothing
    a component prints while starting can corrupt the protocol stream.
    """
    from mcp.server.stdio import stdio_server

    server = build_mcp_server(app)
    async with stdio_server() as (read_stream, write_stream):
        await app.start(background=True)
        await server.run(read_stream, write_stream, server.create_initialization_options())

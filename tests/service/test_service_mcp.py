"""MCP through the official SDK client: stdio, streamable HTTP and SSE sessions with `reme start`."""

from __future__ import annotations

import json
import os

import httpx
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from reme import __version__
from reme.app.application import Application
from reme.app.config import load_config
from reme.app.jobs import JobContext
from reme.app.registry import STEPS
from reme.service.failures import ERROR_META
from reme.service.mcp import WORKSPACE_META, build_mcp_server

SERVED_TOOLS = {"app_config", "health_check", "help", "list", "status", "version"}
TOKEN = "mcp-token"


async def check_session(client: Client) -> None:
    """The assertions every transport must pass."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == SERVED_TOOLS  # no hidden, cron or stream jobs
    assert tools["list"].input_schema["required"] == ["path"]
    assert tools["list"].input_schema["properties"]["path"] == {"type": "string"}
    result = await client.call_tool("version", {})
    assert result.is_error is False
    assert result.content[0].text == __version__
    assert os.path.isabs(result.meta[WORKSPACE_META])  # every answer names the workspace that served it
    assert result.structured_content == {
        "success": True,
        "answer": __version__,
        "metadata": {"version": __version__},
    }
    refused = await client.call_tool("help", {"job": 7})
    assert refused.is_error is True
    assert "must be of type string" in refused.content[0].text
    assert refused.meta[ERROR_META] == "user" and ERROR_META not in result.meta  # the kind of a failure
    unknown = await client.call_tool("private_version", {})
    assert unknown.is_error is True and "unknown tool 'private_version'" in unknown.content[0].text


async def test_stdio_session(tmp_path, reme_command, service_config):
    args = ["start", f"config={service_config}", f"workspace_dir={tmp_path / 'ws'}"]
    params = StdioServerParameters(
        command=reme_command,
        args=[*args, "service.backend=mcp", "service.transport=stdio"],
        cwd=str(tmp_path),
    )
    async with Client(params) as client:
        await check_session(client)
    assert not (tmp_path / "ws" / "metadata" / "service.json").exists()  # stdio has no address to announce


@pytest.fixture(scope="module")
def mcp_services(module_services, tmp_path_factory, service_config):
    """One streamable-HTTP (token-protected) and one SSE service."""
    base = tmp_path_factory.mktemp("mcp")
    common = (f"config={service_config}", "service.backend=mcp", "service.port=0")
    return {
        "streamable-http": module_services(
            base / "http", *common, "service.transport=streamable-http", f"service.auth_token={TOKEN}"
        ),
        "sse": module_services(base / "sse", *common, "service.transport=sse"),
    }


@pytest.mark.slow
async def test_streamable_http_session_with_token(mcp_services):
    service = mcp_services["streamable-http"]
    assert {k: service.info[k] for k in ("backend", "transport", "path")} == {
        "backend": "mcp",
        "transport": "streamable-http",
        "path": "/mcp",
    }
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        Client(streamable_http_client(f"{service.url}/mcp", http_client=http)) as client,
    ):
        await check_session(client)


@pytest.mark.slow
async def test_streamable_http_without_token_is_refused(mcp_services):
    service = mcp_services["streamable-http"]
    async with httpx.AsyncClient() as http:
        reply = await http.post(f"{service.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert reply.status_code == 401
    with pytest.raises(ExceptionGroup) as refused:  # the SDK reports the 401 from its task group
        async with Client(f"{service.url}/mcp") as client:
            await client.list_tools()
    assert refused.group_contains(MCPError, depth=None)


@pytest.mark.slow
async def test_sse_session(mcp_services):
    service = mcp_services["sse"]
    assert service.info["transport"] == "sse"
    async with httpx.AsyncClient() as http:
        forged = await http.get(f"{service.url}/sse", headers={"Origin": "http://evil.example"})
    assert forged.status_code == 403  # a web page cannot open the session
    async with Client(sse_client(f"{service.url}{service.info['path']}")) as client:
        await check_session(client)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_cli_calls_jobs_on_an_mcp_service(mcp_services, run_reme_async, reme_env, transport):
    service = mcp_services[transport]
    env = reme_env(REME_API_TOKEN=TOKEN)
    failed = await run_reme_async("list", f"workspace_dir={service.workspace}", "--json", env=env)
    assert failed.returncode == 1
    assert "missing required parameter 'path'" in json.loads(failed.stdout)["answer"]


async def chunks(ctx: JobContext) -> None:
    await ctx.emit({"type": "text", "text": "chunk"})


@pytest.fixture(autouse=True, scope="module")
def _test_step():
    """The test double is a step only while this module's tests run."""
    with STEPS.registered({"svc_test_mcp_chunks": chunks}):
        yield


async def test_stream_jobs_are_not_tools(tmp_path):
    config_path = tmp_path / "config.yaml"
    config_path.write_text(
        "imports: [jobs/system.yaml]\njobs:\n  talk: {kind: stream, steps: [{backend: svc_test_mcp_chunks}]}\n"
    )
    config = load_config(config_path, {"workspace_dir": str(tmp_path / "ws")}, load_env_file=False)
    async with Application(config) as app, Client(build_mcp_server(app)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "talk" in app.jobs and "talk" not in names
        assert "version" in names


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_plain_http_client_is_told_it_reached_an_mcp_service(
    mcp_services, run_reme_async, reme_env, transport
):
    service = mcp_services[transport]
    env = reme_env(REME_API_TOKEN=TOKEN)
    result = await run_reme_async("version", f"port={service.info['port']}", env=env)
    assert result.returncode == 1
    assert f"this is a reme MCP service ({transport} at {service.info['path']})" in result.stderr
    assert "service.backend=http" in result.stderr


@pytest.mark.slow
async def test_an_mcp_service_of_another_workspace_refuses(mcp_services, run_reme_async, tmp_path):
    service = mcp_services["sse"]
    copy = tmp_path / "copy"
    (copy / "metadata").mkdir(parents=True)
    (copy / "metadata" / "service.json").write_text(
        (service.workspace / "metadata" / "service.json").read_text()
    )
    result = await run_reme_async("version", f"workspace_dir={copy}")
    assert result.returncode == 1
    assert f"serves another workspace than {copy.resolve()}; nothing was done" in result.stderr

"""The packaged default config behind the interfaces: file jobs end to end through CLI, HTTP and MCP."""

from __future__ import annotations

import base64
import json

import httpx
import pytest
from mcp import Client

from reme.service.mcp import build_mcp_server


@pytest.fixture(scope="module")
def default_service(module_services, tmp_path_factory):
    workspace = tmp_path_factory.mktemp("default") / "ws"
    return module_services(workspace, "service.port=0")


@pytest.mark.slow
def test_cli_round_trip_over_file_jobs(default_service, run_reme, tmp_path):
    where = f"workspace_dir={default_service.workspace}"
    wrote = run_reme("write", "path=notes/007.md", "content=# Agent 007\nlicensed", where, cwd=tmp_path)
    assert wrote.returncode == 0, wrote.stderr
    assert "# Agent 007\nlicensed" in (default_service.workspace / "notes" / "007.md").read_text()
    listed = run_reme("list", "path=notes", 'extensions=["md"]', where, "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    entries = json.loads(listed.stdout)["metadata"]["entries"]
    assert [entry["path"] for entry in entries] == ["notes/007.md"]
    read = run_reme("read", "path=notes/007.md", where, cwd=tmp_path)
    assert read.returncode == 0 and "licensed" in read.stdout
    missing = run_reme("read", "path=notes/absent.md", where, cwd=tmp_path)
    assert missing.returncode == 1 and missing.stderr.startswith("error:")


@pytest.mark.slow
def test_openapi_lists_every_served_job_with_its_schema(default_service):
    spec = httpx.get(f"{default_service.url}/openapi.json").json()
    jobs = httpx.post(f"{default_service.url}/help", json={}).json()["metadata"]["jobs"]
    served = {job["name"]: job for job in jobs if job["served"]}
    assert {path.lstrip("/") for path in spec["paths"]} == set(served)
    for name, job in served.items():
        body = spec["paths"][f"/{name}"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert body == without_nulls(job["parameters"]), name


def without_nulls(value):
    """FastAPI leaves null-valued keys out of the OpenAPI document."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


async def test_mcp_tools_are_the_served_non_stream_jobs(app):
    async with Client(build_mcp_server(app)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        expected = {job.name for job in app.served_jobs() if job.kind != "stream"}
        assert set(tools) == expected
        assert {"read", "write", "list", "search", "version"} <= expected
        wrote = await client.call_tool("write", {"path": "a.md", "content": "hello"})
        assert wrote.is_error is False and wrote.structured_content["metadata"]["path"] == "a.md"
        read = await client.call_tool("read", {"path": "a.md"})
        assert "hello" in read.content[0].text


async def test_mcp_image_answers_are_image_blocks(app):
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    (app.workspace_dir / "pixel.png").write_bytes(png)
    async with Client(build_mcp_server(app)) as client:
        result = await client.call_tool("read_image", {"path": "pixel.png"})
    assert result.is_error is False
    block = result.content[0]
    assert (block.type, block.mime_type, base64.b64decode(block.data)) == ("image", "image/png", png)
    assert result.structured_content["metadata"]["mime_type"] == "image/png"
    assert "image/png" in result.structured_content["answer"]

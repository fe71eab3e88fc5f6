"""The digest jobs over HTTP, the CLI and MCP, plus the command-line config switches they rely on
(`scheduler.cron=false`, list-valued `digest.buckets='[...]'`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client
from tests.support import ServiceProcess, run_reme_process, start_service_process

from reme import ReMe
from reme.service.mcp import build_mcp_server

SOURCE = "daily/2026-06-20/session.md"
BODY = f"Ship weekly.\n\n## Sources\n- derived_from:: [[{SOURCE}]] — chosen after the outage.\n"
BUCKETS = (
    '[{"name": "wiki", "description": "concepts and precedents"}, {"name": "ops", "description": "runbooks"}]'
)
SERVICE_CONFIG = Path(__file__).parents[1] / "service" / "service_test_config.yaml"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """One HTTP service on the default config with buckets set on the command line as JSON."""
    workspace = tmp_path_factory.mktemp("digest-service") / "ws"
    (workspace / "daily/2026-06-20").mkdir(parents=True)
    (workspace / SOURCE).write_text("We chose weekly releases.\n")
    started = start_service_process(
        workspace, "service.port=0", "timezone=UTC", "scheduler.cron=false", f"digest.buckets={BUCKETS}"
    )
    yield started
    started.stop()


def post(service: ServiceProcess, job: str, status: int = 200, **params) -> dict:
    reply = httpx.post(f"{service.url}/{job}", json=params, timeout=30)
    assert reply.status_code == status, reply.text
    return reply.json()


@pytest.mark.slow
def test_http_digest_jobs(service):
    root = service.workspace
    buckets = post(service, "digest_buckets")
    assert [bucket["name"] for bucket in buckets["metadata"]["buckets"]] == ["wiki", "ops", "unknown"]
    assert "- `ops`: runbooks\n" in (root / "digest/_buckets.md").read_text()
    written = post(service, "digest_write", path="digest/ops/release.md", content=BODY, description="Cadence")
    assert written == {
        "success": True,
        "answer": "Created digest/ops/release.md",
        "metadata": {"path": "digest/ops/release.md", "created": True, "workspace": str(root.resolve())},
    }
    refused = post(service, "digest_write", path="digest/personal/x.md", content=BODY, description="d")
    assert refused["success"] is False and "'personal' is not configured" in refused["answer"]
    before = (root / "digest/ops/release.md").read_bytes()
    dropped = post(
        service, "digest_edit", path="digest/ops/release.md", old=f"derived_from:: [[{SOURCE}]]", new=""
    )
    assert dropped["success"] is False
    assert dropped["metadata"]["missing_edges"] == [{"target": SOURCE, "predicate": "derived_from"}]
    schema = post(
        service, "digest_edit", 422, path="digest/ops/release.md", old="a", new="b", expected_sha256="x"
    )
    assert schema["success"] is False and "expected_sha256" in schema["answer"]
    assert (root / "digest/ops/release.md").read_bytes() == before
    edited = post(
        service, "digest_edit", path="digest/ops/release.md", old="Ship weekly.", new="Ship on Mondays."
    )
    assert edited["metadata"] == {
        "path": "digest/ops/release.md",
        "count": 1,
        "workspace": str(root.resolve()),
    }


@pytest.mark.slow
def test_cli_digest_jobs_against_the_service(service):
    root = service.workspace
    created = service.cli(
        "digest_write", "path=digest/wiki/cadence.md", f"content={BODY}", "description=Release cadence"
    )
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "Created digest/wiki/cadence.md"
    assert (root / "digest/wiki/cadence.md").read_text().startswith("---\nname: cadence\n")
    before = (root / "digest/wiki/cadence.md").read_bytes()
    refused = service.cli(
        "--json", "digest_edit", "path=digest/wiki/cadence.md", f"old=[[{SOURCE}]]", "new=it"
    )
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["metadata"]["missing_edges"] == [
        {"target": SOURCE, "predicate": "derived_from"}
    ]
    assert (root / "digest/wiki/cadence.md").read_bytes() == before
    listed = service.cli("--json", "digest_buckets")
    assert listed.returncode == 0
    assert [b["name"] for b in json.loads(listed.stdout)["metadata"]["buckets"]] == ["wiki", "ops", "unknown"]


@pytest.mark.slow
def test_one_shot_run_types_list_overrides_as_json(tmp_path):
    workspace = tmp_path / "ws"
    shown = run_reme_process(
        "start",
        "job=digest_buckets",
        f"workspace_dir={workspace}",
        f"digest.buckets={BUCKETS}",
        "--json",
        cwd=tmp_path,
    )
    assert shown.returncode == 0, shown.stderr
    assert [b["name"] for b in json.loads(shown.stdout)["metadata"]["buckets"]] == ["wiki", "ops", "unknown"]
    assert "- `ops`: runbooks\n" in (workspace / "digest/_buckets.md").read_text()
    bad = run_reme_process(
        "start",
        "job=digest_buckets",
        f"workspace_dir={workspace}",
        'digest.buckets=[{"name": "Ops"}]',
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and "'digest.buckets[0].name'" in bad.stderr
    switched = run_reme_process(
        "start",
        "job=app_config",
        f"workspace_dir={workspace}",
        "scheduler.cron=false",
        "--json",
        cwd=tmp_path,
    )
    assert switched.returncode == 0, switched.stderr
    assert json.loads(switched.stdout)["metadata"]["config"]["scheduler"] == {"cron": False}


async def test_mcp_tools_include_the_digest_jobs(app):
    (app.workspace_dir / "daily/2026-06-20").mkdir(parents=True)
    (app.workspace_dir / SOURCE).write_text("weekly\n")
    async with Client(build_mcp_server(app)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"digest_write", "digest_edit", "digest_buckets"} <= set(tools)
        assert tools["digest_edit"].input_schema["required"] == ["path", "old", "new"]
        wrote = await client.call_tool(
            "digest_write", {"path": "digest/wiki/cadence.md", "content": BODY, "description": "Cadence"}
        )
        assert wrote.is_error is False
        assert wrote.structured_content["metadata"] == {
            "path": "digest/wiki/cadence.md",
            "created": True,
            "workspace": str(app.workspace_dir),  # a change names the workspace it changed
        }
        before = (app.workspace_dir / "digest/wiki/cadence.md").read_bytes()
        dropped = await client.call_tool(
            "digest_edit", {"path": "digest/wiki/cadence.md", "old": f"[[{SOURCE}]]", "new": "the chat"}
        )
        assert dropped.is_error is True and "E-1" in dropped.content[0].text
        assert (app.workspace_dir / "digest/wiki/cadence.md").read_bytes() == before
        buckets = await client.call_tool("digest_buckets", {})
        assert [b["name"] for b in buckets.structured_content["metadata"]["buckets"]][-1] == "unknown"


def _cron_tasks() -> list[str]:
    return sorted(task.get_name() for task in asyncio.all_tasks() if task.get_name().startswith("cron:"))


@pytest.mark.parametrize(("switch", "expected"), [({}, ["cron:nightly"]), ({"scheduler.cron": False}, [])])
async def test_scheduler_cron_false_starts_no_cron_job(workspace_dir, switch, expected):
    async with ReMe(workspace_dir=workspace_dir, config=SERVICE_CONFIG, **switch) as app:
        app.start_background()
        assert _cron_tasks() == expected

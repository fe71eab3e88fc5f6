"""Digest upkeep through the interfaces: HTTP and the CLI on a service, and MCP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from tests.pipelines.maintain_support import CHILDREN, PARENT, setup_digest, split_run, split_turns
from tests.support import scripted_overrides

from reme import ReMe, ReMeSync
from reme.service.mcp import build_mcp_server

SCRIPT = [split_run(split_turns())]
SCRIPTED = scripted_overrides(SCRIPT, cron=False)


@pytest.mark.slow
def test_http_split_then_cli_journal_audit_and_revert(reme_service: Any, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    parent = setup_digest(workspace)
    before = parent.read_bytes()
    service = reme_service(workspace, "service.port=0", *SCRIPTED)
    reply = httpx.post(f"{service.url}/digest_maintain", json={}, timeout=60).json()
    assert reply["success"], reply["answer"]
    run_id = reply["metadata"]["run_id"]
    assert reply["metadata"]["splits"][0]["parent"] == PARENT and all(
        (workspace / c).is_file() for c in CHILDREN
    )

    journal = service.cli("journal")
    assert journal.returncode == 0, journal.stderr
    assert f"maintain {run_id}" in journal.stdout and f"SPLIT {PARENT}" in journal.stdout

    audit = service.cli("digest_audit")  # findings (the rule notes are dead links) still exit 0
    assert audit.returncode == 0, audit.stderr
    assert (
        "dead_link: digest/wiki/release-cadence.md — [[digest/wiki/rule-1-notes.md]] names no file"
        in audit.stdout
    )
    counts = json.loads(service.cli("digest_audit", "--json").stdout)["metadata"]["counts"]
    assert counts["dead_link"] == 9 and counts["overloaded"] == 0

    revert = service.cli("dream_revert", f"run_id={run_id}")
    assert revert.returncode == 0, revert.stderr
    assert f"RESTORED {PARENT}" in revert.stdout and parent.read_bytes() == before
    assert not any((workspace / child).exists() for child in CHILDREN)
    unknown = service.cli("dream_revert", "run_id=20260101T000000-000000-abcdef")
    assert unknown.returncode == 1 and "no run" in unknown.stdout + unknown.stderr


async def test_mcp_lists_and_runs_the_upkeep_jobs(tmp_path: Path) -> None:
    parent = setup_digest(tmp_path / "ws")
    before = parent.read_bytes()
    overrides = {"components.llm.backend": "scripted", "components.llm.script": SCRIPT}
    async with (
        ReMe(workspace_dir=tmp_path / "ws", **overrides) as app,
        Client(build_mcp_server(app)) as client,
    ):
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"digest_maintain", "dream_revert", "digest_audit", "journal"} <= tools
        assert "digest_maintain_cron" not in tools
        split = await client.call_tool("digest_maintain", {"max_splits": 1})
        assert split.is_error is False, split.content
        run_id = split.structured_content["metadata"]["run_id"]
        audit = await client.call_tool("digest_audit", {})
        assert audit.structured_content["metadata"]["nodes"] == 5
        revert = await client.call_tool("dream_revert", {"run_id": run_id})
        assert revert.structured_content["metadata"]["restored"] == [PARENT]
        listing = await client.call_tool("journal", {"kind": "revert"})
        assert listing.structured_content["metadata"]["runs"][0]["reverts"] == run_id
    assert parent.read_bytes() == before


def test_the_blocking_python_api_splits_audits_and_reverts(tmp_path: Path) -> None:
    parent = setup_digest(tmp_path / "ws")
    before = parent.read_bytes()
    overrides = {
        "components.llm.backend": "scripted",
        "components.llm.script": SCRIPT,
        "scheduler.cron": False,
    }
    with ReMeSync(workspace_dir=tmp_path / "ws", **overrides) as app:
        split = app.run("digest_maintain")
        assert split.success, split.answer
        assert app.run("digest_audit").metadata["counts"]["overloaded"] == 0
        assert app.run("journal").metadata["runs"][0]["run_id"] == split.metadata["run_id"]
        revert = app.run("dream_revert", run_id=split.metadata["run_id"])
        assert revert.success and revert.metadata["restored"] == [PARENT]
    assert parent.read_bytes() == before

"""auto_dream through the interfaces: HTTP and the CLI on a service, MCP, and two one-shot processes at once."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    DAY,
    NODE,
    create_turns,
    extract_run,
    integrate_run,
    put,
    unit,
)
from tests.support import REME, reme_env, run_reme_process, scripted_overrides

from reme import ReMe
from reme.llm.testing.fake_openai import FakeOpenAI
from reme.service.mcp import build_mcp_server

SCRIPT = [extract_run(unit()), integrate_run(create_turns())]
SCRIPTED = scripted_overrides(SCRIPT, cron=False)


@pytest.mark.slow
def test_http_and_cli_run_auto_dream_on_the_service(reme_service: Any, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    put(workspace, CARD, CARD_TEXT)
    service = reme_service(workspace, "service.port=0", *SCRIPTED)
    reply = httpx.post(f"{service.url}/auto_dream", json={"date": DAY}, timeout=60).json()
    assert reply["success"], reply["answer"]
    assert reply["metadata"]["actions"][0]["target_path"] == NODE and (workspace / NODE).is_file()
    again = service.cli("auto_dream", f"date={DAY}", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["metadata"]["changed"] == []
    refused = service.cli("auto_dream", "date=yesterday")
    assert refused.returncode == 1


async def test_mcp_lists_and_runs_the_dream_jobs(tmp_path: Path) -> None:
    put(tmp_path / "ws", CARD, CARD_TEXT)
    overrides = {"components.llm.backend": "scripted", "components.llm.script": SCRIPT}
    async with (
        ReMe(workspace_dir=tmp_path / "ws", **overrides) as app,
        Client(build_mcp_server(app)) as client,
    ):
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"auto_dream", "digest_write", "digest_edit", "digest_buckets"} <= tools
        assert "dream_cron" not in tools
        result = await client.call_tool("auto_dream", {"date": DAY})
    assert result.is_error is False, result.content
    assert (
        result.structured_content["metadata"]["checkpointed"] == [CARD] and (tmp_path / "ws" / NODE).is_file()
    )


@pytest.mark.slow
def test_two_concurrent_one_shot_runs_one_dreams_the_other_says_so(tmp_path: Path) -> None:
    slow_extract = {"fault": "slow", "seconds": 3.0, "then": {"output": {"units": [unit()]}}}
    server = FakeOpenAI([slow_extract, *create_turns()])
    workspace = tmp_path / "ws"
    put(workspace, CARD, CARD_TEXT)
    llm = (
        f"components.llm.base_url={server.base_url}",
        "components.llm.model=fake",
        "components.llm.api_key=k",
    )
    args = [REME, "start", "job=auto_dream", f"workspace_dir={workspace}", f"date={DAY}", *llm, "--json"]
    try:
        first = subprocess.Popen(
            args, env=reme_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 30
        while not list((workspace / "metadata").rglob("dream.holder.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        second = run_reme_process(*args[1:], env=reme_env())
        out, err = first.communicate(timeout=60)
    finally:
        server.close()
    refused = json.loads(second.stdout)
    assert second.returncode == 1 and "a dream run is in progress since" in refused["answer"]
    assert f"(process {first.pid})" in refused["answer"]
    assert first.returncode == 0, out + err
    assert len(server.requests) == 3  # only the first run asked the model
    digest = sorted(p.name for p in (workspace / "digest/wiki").iterdir())
    assert digest == ["weekly-releases.md"] and len(list((workspace / "journal/dream/runs").iterdir())) == 1

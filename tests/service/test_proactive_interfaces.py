"""Proactive memory through the real interfaces: one-shot refresh, CLI, HTTP and MCP (docs/spec.md §13)."""

from __future__ import annotations

import json

import httpx
import pytest
from mcp import Client
from tests.pipelines.proactive_helpers import found, load_yaml, reply, write_note
from tests.service.test_service_cli import run_in_terminal
from tests.support import scripted_overrides

from reme import ReMe
from reme.pipelines.proactive.topics import topic_id
from reme.service.mcp import build_mcp_server

DAY = "2026-06-20"
NOTE = f"daily/{DAY}/work.md"
TITLES = ["Kyoto trip", "Tax return"]
SCRIPT = [{"output": reply([found(t, NOTE) for t in TITLES], order=[topic_id(TITLES[1])])}]
LLM = scripted_overrides(SCRIPT)


@pytest.fixture(scope="module")
def refreshed(tmp_path_factory):
    """A workspace after `reme start job=proactive_refresh` with the scripted model."""
    from tests.support import run_reme_process

    workspace = tmp_path_factory.mktemp("proactive") / "ws"
    write_note(workspace, NOTE, "Kyoto booking; the tax return is due.\n")
    result = run_reme_process(
        "start", "job=proactive_refresh", f"date={DAY}", f"workspace_dir={workspace}", "timezone=UTC", *LLM
    )
    assert result.returncode == 0, result.stderr
    assert f"Wrote daily/{DAY}/interests.yaml: 2 topic(s) pushed" in result.stdout
    return workspace


@pytest.fixture(scope="module")
def service(refreshed, module_services):
    return module_services(refreshed, "service.port=0", "timezone=UTC")


@pytest.mark.slow
def test_the_one_shot_refresh_wrote_the_day(refreshed):
    interests = load_yaml(refreshed / f"daily/{DAY}/interests.yaml")
    assert [a["topic_id"] for a in interests["agenda"]] == [topic_id(TITLES[1]), topic_id(TITLES[0])]
    assert (refreshed / "daily/_proactive.yaml").is_file()
    # docs/spec.md §8: the block lists cards only, never interests.yaml
    day_page = refreshed / f"daily/{DAY}.md"
    assert not day_page.exists() or "interests.yaml" not in day_page.read_text()


@pytest.mark.slow
def test_http_reads_and_resolves_but_never_refreshes(service):
    read = httpx.post(
        f"{service.url}/proactive_read", json={"date": DAY, "include_content": False}, timeout=30
    )
    body = read.json()
    assert body["success"] is True
    assert [t["title"] for t in body["answer"]["topics"]] == TITLES[::-1]  # agenda order
    assert body["metadata"]["path"] == f"daily/{DAY}/interests.yaml"
    hidden = httpx.post(f"{service.url}/proactive_refresh", json={"date": DAY}, timeout=30)
    assert hidden.status_code == 404 or hidden.json()["success"] is False
    unknown = httpx.post(f"{service.url}/proactive_resolve", json={"topic_id": "0" * 12}, timeout=30).json()
    assert unknown["success"] is False and unknown["metadata"]["resolved"] is False


@pytest.mark.slow
def test_cli_prints_a_readable_agenda_piped_or_on_a_terminal_and_the_object_with_json(
    service, run_reme, reme_env
):
    where = f"workspace_dir={service.workspace}"
    piped = run_reme("proactive_read", f"date={DAY}", "include_content=false", where)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.startswith("Read 2 proactive topic(s)") and "Agenda:" in piped.stdout  # issue 23.4
    as_json = run_reme("proactive_read", f"date={DAY}", "include_content=false", where, "--json")
    assert json.loads(as_json.stdout)["answer"]["summary"].startswith("Read 2 proactive topic(s)")
    env = reme_env(TERM="xterm-256color", COLUMNS="120")
    from tests.support import REME

    status, shown = run_in_terminal([REME, "proactive_read", f"date={DAY}", where], env)
    assert status == 0, shown
    assert "Agenda:" in shown and "1. Tax return" in shown and "2. Kyoto trip" in shown
    assert "say: Shall we pick up Tax return?" in shown and '"topics"' not in shown


async def test_mcp_tools_read_and_resolve(tmp_path):
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC") as app:
        write_note(app.workspace_dir, f"daily/{DAY}/interests.yaml", "topics:\n  - {title: Kyoto trip}\n")
        write_note(
            app.workspace_dir,
            "daily/_proactive.yaml",
            f"topics:\n  - {{title: Kyoto trip, last_evidence_at: {DAY}, paths: [{NOTE}]}}\n",
        )
        async with Client(build_mcp_server(app)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"proactive_read", "proactive_resolve", "proactive_rebuild"} <= names
            assert "proactive_refresh" not in names and "proactive_refresh_cron" not in names
            read = await client.call_tool("proactive_read", {"date": DAY})
            assert read.is_error is False
            assert read.structured_content["answer"]["topics"][0]["id"] == topic_id("Kyoto trip")
            done = await client.call_tool(
                "proactive_resolve", {"topic_id": topic_id("Kyoto trip"), "reason": "booked"}
            )
            assert done.structured_content["metadata"] == {
                "topic_id": topic_id("Kyoto trip"),
                "resolved": True,
                "workspace": str(app.workspace_dir),  # a change names the workspace it changed
            }
            again = await client.call_tool("proactive_read", {"date": DAY})
            assert again.structured_content["answer"]["topics"] == []


@pytest.mark.slow
def test_cli_resolves_a_topic_and_the_next_read_leaves_it_out(service, run_reme):
    where = f"workspace_dir={service.workspace}"
    done = run_reme(
        "proactive_resolve", f"topic_id={topic_id('Tax return')}", "reason=filed", where, "--json"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["metadata"] == {
        "topic_id": topic_id("Tax return"),
        "resolved": True,
        "workspace": str(service.workspace.resolve()),
    }
    read = run_reme("proactive_read", f"date={DAY}", "include_content=false", where, "--json")
    answer = json.loads(read.stdout)["answer"]
    assert [t["title"] for t in answer["topics"]] == ["Kyoto trip"]
    assert [a["title"] for a in answer["agenda"]] == ["Kyoto trip"]
    unknown = run_reme("proactive_resolve", "topic_id=0123456789ab", where)
    assert unknown.returncode == 1 and "unknown topic id" in unknown.stderr


@pytest.mark.slow
def test_the_one_shot_refresh_over_an_openai_compatible_server(tmp_path, fake_server, run_reme):
    workspace = tmp_path / "ws"
    write_note(workspace, NOTE, "Kyoto booking.\n")
    fake_server.set_script([{"output": reply([found("Kyoto trip", NOTE)])}])
    llm = (
        f"components.llm.base_url={fake_server.base_url}",
        "components.llm.model=fake-model",
        "components.llm.api_key=k",
    )
    result = run_reme(
        "start", "job=proactive_refresh", f"date={DAY}", f"workspace_dir={workspace}", *llm, "--json"
    )
    assert result.returncode == 0, result.stderr
    meta = json.loads(result.stdout)["metadata"]
    assert meta["llm_calls"] == 2 == len(fake_server.requests) and meta["pushed"] == [topic_id("Kyoto trip")]
    assert load_yaml(workspace / f"daily/{DAY}/interests.yaml")["topics"][0]["title"] == "Kyoto trip"

"""`as_of` (docs/spec.md §17.3) through Python, HTTP, MCP and the CLI: the state of that date, stale facts marked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from tests.pipelines.dream_support import put

from reme import ReMe
from reme.service.mcp import build_mcp_server

SOURCES = "\n## Sources\n- derived_from:: [[daily/2026-06-10/home.md]] — what the user said.\n"
HOME = "digest/personal/home-city.md"
HOME_TEXT = (
    "---\nname: home-city\ndescription: Where the user lives.\n---\n# Home city\n\n"
    "- The user lives in Berlin [valid_from:: 2021-03] [valid_to:: 2026-06-19]\n"
    "- The user lives in Paris [valid_from:: 2026-06-19]\n" + SOURCES
)
VIM = "digest/personal/editor-vim.md"
HELIX = "digest/personal/editor-helix.md"
NOTES = {
    "daily/2026-06-10/home.md": "# Home\n\nBerlin; vim; helix later.\n",
    HOME: HOME_TEXT,
    VIM: "---\nname: editor-vim\ndescription: Editor.\n---\n# Editor\n\n"
    "- The user prefers the vim editor for code [valid_from:: 2019] [valid_to:: 2024-02]\n" + SOURCES,
    HELIX: "---\nname: editor-helix\ndescription: Editor.\n---\n# Editor now\n\n"
    "- The user prefers the helix editor for code [valid_from:: 2024-02]\n" + SOURCES,
}


def plant(ws: Path) -> None:
    for path, text in NOTES.items():
        put(ws, path, text)


def check_search(results: list[dict[str, Any]], *, as_of: bool) -> None:
    """Past (2023): vim holds, helix not yet; now: helix holds, vim superseded — the stale one last."""
    first = next(r for r in results if "valid" in r)  # the first passage with statements
    last = results[-1]
    if as_of:
        assert (first["path"], last["path"]) == (VIM, HELIX)
        assert last["valid"] is False and last["valid_range"] == "2024-02/" and first["valid"] is True
    else:
        assert (first["path"], last["path"]) == (HELIX, VIM)
        assert last["valid"] is False and last["valid_range"] == "2019/2024-02"
        assert last["reason"] == "superseded"


def check_nodes(results: list[dict[str, Any]], *, as_of: bool) -> None:
    [home] = [n for n in results if n["path"] == HOME]
    if as_of:
        assert [s["statement"] for s in home["statements"]] == ["The user lives in Berlin"]
        assert home["left_out"] == 1 and "superseded" not in home
    else:
        assert [s["statement"] for s in home["statements"]] == ["The user lives in Paris"]
        assert [s["statement"] for s in home["superseded"]] == ["The user lives in Berlin"]


def check_recall(answer: str, *, as_of: bool) -> None:
    if as_of:
        assert "holds: The user lives in Berlin" in answer and "Paris" not in answer
    else:
        assert "holds: The user lives in Paris" in answer
        assert "superseded, no longer true: The user lives in Berlin (valid 2021-03/2026-06-19)" in answer


EDITOR = {"query": "user prefers editor for code", "path_prefix": "digest/personal/", "limit": 10}
LIVES = {"query": "where the user lives city"}


async def test_python(tmp_path: Path) -> None:
    plant(tmp_path / "ws")
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC") as app:
        for as_of in (True, False):
            extra = {"as_of": "2023-05-01"} if as_of else {}
            home = {"as_of": "2025-01-01"} if as_of else {}
            found = await app.run("search", **EDITOR, **extra)
            assert found.success, found.answer
            check_search(found.metadata["results"], as_of=as_of)
            assert ("not valid on 2023-05-01" if as_of else "not valid now (superseded") in found.answer
            nodes = await app.run("node_search", **LIVES, **home)
            check_nodes(nodes.metadata["results"], as_of=as_of)
            recall = await app.run("agent_memory_recall", **LIVES, **home)
            check_recall(recall.answer, as_of=as_of)
        bad = await app.run("search", **EDITOR, as_of="2023-02-30")
        assert not bad.success and "as_of" in bad.answer
        bad_recall = await app.run("agent_memory_recall", **LIVES, as_of="yesterday")
        assert not bad_recall.success and "as_of" in bad_recall.answer


async def test_mcp(tmp_path: Path) -> None:
    plant(tmp_path / "ws")
    async with (
        ReMe(workspace_dir=tmp_path / "ws", timezone="UTC") as app,
        Client(build_mcp_server(app)) as client,
    ):
        found = await client.call_tool("search", {**EDITOR, "as_of": "2023-05-01"})
        assert found.is_error is False
        check_search(found.structured_content["metadata"]["results"], as_of=True)
        nodes = await client.call_tool("node_search", {**LIVES, "as_of": "2025-01-01"})
        check_nodes(nodes.structured_content["metadata"]["results"], as_of=True)
        recall = await client.call_tool("agent_memory_recall", {**LIVES, "as_of": "2025-01-01"})
        check_recall(recall.structured_content["answer"], as_of=True)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, module_services: Any) -> Any:
    workspace = tmp_path_factory.mktemp("time") / "ws"
    plant(workspace)
    return module_services(workspace, "service.port=0", "timezone=UTC")


@pytest.mark.slow
def test_http(service: Any) -> None:
    for as_of in (True, False):
        extra = {"as_of": "2023-05-01"} if as_of else {}
        body = httpx.post(f"{service.url}/search", json={**EDITOR, **extra}, timeout=60).json()
        assert body["success"] is True, body
        check_search(body["metadata"]["results"], as_of=as_of)
    nodes = httpx.post(f"{service.url}/node_search", json={**LIVES, "as_of": "2025-01-01"}, timeout=60).json()
    check_nodes(nodes["metadata"]["results"], as_of=True)
    recall = httpx.post(
        f"{service.url}/agent_memory_recall", json={**LIVES, "as_of": "2025-01-01"}, timeout=60
    )
    check_recall(recall.json()["answer"], as_of=True)


@pytest.mark.slow
def test_cli(service: Any, run_reme: Any) -> None:
    where = f"workspace_dir={service.workspace}"
    found = run_reme(
        "search",
        f"query={EDITOR['query']}",
        "path_prefix=digest/personal/",
        "limit=10",
        "as_of=2023-05-01",
        where,
        "--json",
    )
    assert found.returncode == 0, found.stderr
    check_search(json.loads(found.stdout)["metadata"]["results"], as_of=True)
    nodes = run_reme("node_search", f"query={LIVES['query']}", where, "--json")
    check_nodes(json.loads(nodes.stdout)["metadata"]["results"], as_of=False)
    recall = run_reme("agent_memory_recall", f"query={LIVES['query']}", "as_of=2025-01-01", where, "--json")
    check_recall(json.loads(recall.stdout)["answer"], as_of=True)


async def test_a_resolved_date_is_found_by_the_day_in_words(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    put(ws, "daily/2023-05-08/group.md", "# Group\n\nI went to the support group yesterday.\n")
    put(ws, "daily/2023-05-08/other.md", "# Other\n\nThe support group meets on Sundays in 2023.\n")
    async with ReMe(workspace_dir=ws, timezone="UTC") as app:
        done = await app.run("annotate_dates", path="daily")
        assert done.success and done.metadata["annotations"] == 1
        found = await app.run("search", query="support group May 7, 2023")
        assert [r["path"] for r in found.metadata["results"]][0] == "daily/2023-05-08/group.md"
        assert "yesterday (2023-05-07)" in found.metadata["results"][0]["text"]
        chinese = await app.run("search", query="2023年5月7日 support group")
        assert chinese.metadata["results"][0]["path"] == "daily/2023-05-08/group.md"

"""Obsidian-style links (docs/spec.md §2.2): `[[solar]]`, `[[wiki/solar]]`, `[[solar.md]]` name digest/wiki/solar.md."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reme import ReMe
from reme.workspace.resolving import resolve, short_form, spellings

SHORT = "Forms: [[solar]], [[wiki/solar#Costs|costs]] and ![[solar.md]], also [[digest/wiki/solar]].\n"


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text, encoding="utf-8")


@pytest.fixture(params=["index", "scan"])
async def linked_app(request, workspace_dir: Path) -> AsyncIterator[ReMe]:
    """With the index's graph, and without an index (links found by a scan): the same answers."""
    overrides = {} if request.param == "index" else {"components.index.enabled": False}
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **overrides) as started:
        yield started


def test_resolution_rules() -> None:
    files = {"digest/wiki/solar.md", "daily/2026-06-01/solar.md", "top.md", "digest/a/x.txt"}

    def named(target: str) -> str | None:
        return resolve(target, files.__contains__, lambda s: [f for f in files if f.endswith("/" + s)])

    assert named("top") == "top.md"  # <target>.md first
    assert named("wiki/solar") == "digest/wiki/solar.md"
    assert named("wiki/solar.md") == "digest/wiki/solar.md"
    assert named("solar") is None  # two files end with /solar.md: ambiguous, pending
    assert named("x.txt") == "digest/a/x.txt"
    assert named("x") is None and named("iki/solar") is None  # whole segments only
    assert "solar" in spellings("digest/wiki/solar.md") and "wiki/solar.md" in spellings(
        "digest/wiki/solar.md"
    )
    assert short_form("wiki/solar", "digest/wiki/solar.md", "digest/energy/sun.md") == "energy/sun"
    assert short_form("solar.md", "digest/wiki/solar.md", "digest/energy/sun.md") == "sun.md"


async def test_short_links_resolve_in_graph_traverse_search_and_stat(app) -> None:
    root = app.workspace_dir
    write(
        root,
        {
            "digest/wiki/solar.md": "---\nname: Solar\n---\nphotovoltaic panels\n",
            "daily/2026-06-01.md": SHORT,
        },
    )
    index = app.component("index").service
    index.ensure_ready()
    assert index.graph.pending_edges() == []

    forward = await app.run("traverse", path="daily/2026-06-01.md", direction="forward")
    assert {n["path"] for n in forward.metadata["nodes"]} == {"daily/2026-06-01.md", "digest/wiki/solar.md"}
    edges = {(e["target"], e["resolved"], e["anchor"]) for e in forward.metadata["edges"]}
    assert edges == {
        ("solar", "digest/wiki/solar.md", None),
        ("wiki/solar", "digest/wiki/solar.md", "Costs"),
        ("solar.md", "digest/wiki/solar.md", None),
        ("digest/wiki/solar", "digest/wiki/solar.md", None),
    }
    assert "-> solar (digest/wiki/solar.md)" in forward.answer

    backward = await app.run("traverse", path="digest/wiki/solar.md", direction="backward")
    assert {e["target"] for e in backward.metadata["edges"]} == {
        "solar",
        "wiki/solar",
        "solar.md",
        "digest/wiki/solar",
    }
    assert {n["path"] for n in backward.metadata["nodes"]} == {"daily/2026-06-01.md", "digest/wiki/solar.md"}

    hits = (await app.run("search", query="forms")).metadata["results"]
    assert hits[0]["outlinks"] == [{"path": "digest/wiki/solar.md", "name": "Solar", "description": None}]
    hits = (await app.run("search", query="photovoltaic")).metadata["results"]
    assert [link["path"] for link in hits[0]["inlinks"]] == ["daily/2026-06-01.md"]

    stat = await app.run("stat", path="digest/wiki/solar.md")
    assert stat.metadata["inlink_count"] == 4  # four differently written links from one note


async def test_pending_short_link_becomes_real_then_ambiguous(app) -> None:
    root = app.workspace_dir
    write(root, {"daily/2026-06-01.md": "a [[mango]] note\n"})
    index = app.component("index").service
    index.ensure_ready()
    assert [(e.target, e.resolved) for e in index.graph.pending_edges()] == [("mango", None)]

    assert (await app.run("write", path="digest/fruit/mango.md", content="ripe")).success
    assert index.graph.pending_edges() == []
    [edge] = (await app.run("traverse", path="daily/2026-06-01.md", direction="forward")).metadata["edges"]
    assert edge["resolved"] == "digest/fruit/mango.md"

    assert (await app.run("write", path="projects/mango.md", content="a project")).success  # now two
    assert [e.target for e in index.graph.pending_edges()] == ["mango"]
    [edge] = (await app.run("traverse", path="daily/2026-06-01.md", direction="forward")).metadata["edges"]
    assert edge["resolved"] is None
    assert (await app.run("stat", path="digest/fruit/mango.md")).metadata["inlink_count"] == 0

    assert (await app.run("write", path="mango.md", content="top wins")).success  # `<target>.md` first
    [edge] = (await app.run("traverse", path="daily/2026-06-01.md", direction="forward")).metadata["edges"]
    assert edge["resolved"] == "mango.md"


async def test_move_keeps_short_links_short_while_unambiguous(linked_app) -> None:
    app = linked_app
    root = app.workspace_dir
    write(root, {"digest/wiki/solar.md": "sun\n", "daily/2026-06-01.md": SHORT})

    moved = await app.run("move", src="digest/wiki/solar.md", dst="digest/energy/solar.md")
    assert moved.success, moved.answer
    assert (root / "daily/2026-06-01.md").read_text() == (
        "Forms: [[solar]], [[energy/solar#Costs|costs]] and ![[solar.md]], also [[digest/energy/solar]].\n"
    )
    assert moved.metadata["retargeted_links"] == 2

    renamed = await app.run("move", src="digest/energy/solar.md", dst="digest/energy/sun")
    assert renamed.success, renamed.answer
    assert (root / "daily/2026-06-01.md").read_text() == (
        "Forms: [[sun]], [[energy/sun#Costs|costs]] and ![[sun.md]], also [[digest/energy/sun]].\n"
    )

    write(root, {"projects/star.md": "another star\n"})
    if "index" in app.components:
        app.component("index").service.sync_paths(["projects/star.md"])
    clash = await app.run("move", src="digest/energy/sun.md", dst="digest/energy/star.md")
    assert clash.success, clash.answer
    # `[[star]]` would now name two files, so the short forms that would clash become full paths
    assert (root / "daily/2026-06-01.md").read_text() == (
        "Forms: [[digest/energy/star.md]], [[energy/star#Costs|costs]] and ![[digest/energy/star.md]], "
        "also [[digest/energy/star]].\n"
    )


async def test_folder_move_and_delete_see_short_links(linked_app) -> None:
    app = linked_app
    root = app.workspace_dir
    write(root, {"digest/wiki/solar.md": "sun\n", "daily/2026-06-01.md": "[[wiki/solar]] and [[solar]]\n"})
    moved = await app.run("move", src="digest/wiki", dst="digest/energy")
    assert moved.success, moved.answer
    assert (root / "daily/2026-06-01.md").read_text() == "[[energy/solar]] and [[solar]]\n"

    deleted = await app.run("delete", path="digest/energy/solar.md")
    assert {(e["target_path"], e["resolved_path"]) for e in deleted.metadata["inbound"]} == {
        ("energy/solar", "digest/energy/solar.md"),
        ("solar", "digest/energy/solar.md"),
    }
    assert (root / "daily/2026-06-01.md").read_text() == "[[energy/solar]] and [[solar]]\n"

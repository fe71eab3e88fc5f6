"""Adversarial digest_audit (docs/dream.md): each finding kind on hand-made workspaces, and the near
misses that must give none, with no file changed; and searches of an app without the update loop
that never answer from a file changed or deleted behind the index (docs/search.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.pipelines.dream_support import put
from tests.support import snapshot

from reme import ReMe
from reme.app.components.index import index_service
from reme.app.config import ConfigError
from reme.app.jobs import Response
from reme.errors import ReMeError
from reme.index.sync import Indexer
from reme.pipelines.digest.audit import AuditSettings
from reme.pipelines.digest.nodes import Overload

METADATA = ("metadata",)  # derived state
CARD = "daily/2026-06-20/notes.md"
HUB = "digest/wiki/solar-panels.md"
PEER = "digest/wiki/battery-storage.md"
TWIN_TEXT = "Composting kitchen scraps with dry leaves yields humus for vegetable beds within months"
RUN = "20260620T230000-000000-abcdef"


def node(path: str, text: str, *, sources: str | None = CARD, head: str | None = None) -> str:
    """A node's text: front matter (or `head`), a title, `text`, and a `## Sources` line unless None."""
    name = path.rsplit("/", 1)[1].removesuffix(".md")
    tail = f"\n## Sources\n- derived_from:: [[{sources}]] — where it comes from.\n" if sources else "\n"
    head = head if head is not None else f"---\nname: {name}\ndescription: A node.\n---\n"
    return f"{head}# {name}\n\n{text}\n{tail}"


def plant(ws: Path, files: Mapping[str, str | bytes]) -> None:
    put(ws, CARD, "# Notes\n\nSolar, batteries and the garden.\n")
    put(ws, HUB, node(HUB, f"Rooftop photovoltaic modules convert sunlight; pairs with [[{PEER}]]."))
    put(ws, PEER, node(PEER, f"Lithium cells buffer evening demand, charged by [[{HUB}]]."))
    for path, text in files.items():
        if isinstance(text, bytes):
            (ws / path).parent.mkdir(parents=True, exist_ok=True)
            (ws / path).write_bytes(text)
        else:
            put(ws, path, text)


async def audited(
    ws: Path, files: Mapping[str, str | bytes], **overrides: Any
) -> tuple[Response, set[tuple[str, str]]]:
    """digest_audit on a fresh app over `ws` holding `files`: the response and its (kind, path) set;
    asserts that the audit changed no file."""
    plant(ws, files)
    async with ReMe(workspace_dir=ws, timezone="UTC", **overrides) as app:
        before = snapshot(ws, skip=METADATA, folders=False)
        response = await app.run("digest_audit")
        assert snapshot(ws, skip=METADATA, folders=False) == before
    found = {(f["kind"], f["path"]) for f in response.metadata.get("findings", [])}
    return response, found


# every kind: planted in awkward shapes, found exactly there ----------------------------------------

POSITIVES: dict[str, str | bytes] = {
    "digest/wiki/empty.md": "",
    "digest/wiki/fenced-sources.md": node(
        "digest/wiki/fenced-sources.md",
        f"See [[{HUB}]].\n\n## Sources\n```\n- derived_from:: [[{CARD}]]\n```",
        sources=None,
    ),
    "digest/wiki/h3-sources.md": node(
        "digest/wiki/h3-sources.md",
        f"See [[{HUB}]].\n\n### Sources\n- derived_from:: [[{CARD}]] — x",
        sources=None,
    ),
    "digest/wiki/front-matter-source.md": node(
        "digest/wiki/front-matter-source.md",
        f"See [[{HUB}]].",
        sources=None,
        head=f"---\nname: front-matter-source\nderived_from: '[[{CARD}]]'\n---\n",
    ),
    "digest/wiki/renamed-source.md": node(
        "digest/wiki/renamed-source.md", f"See [[{HUB}]].", sources="daily/2026-06-19/renamed.md"
    ),
    "digest/wiki/folder-source.md": node(
        "digest/wiki/folder-source.md", f"See [[{HUB}]].", sources="daily/2026-06-20"
    ),
    "digest/wiki/short-dead.md": node("digest/wiki/short-dead.md", f"See [[{HUB}]] and [[nowhere]]."),
    "digest/wiki/inline-dead-source.md": node(
        "digest/wiki/inline-dead-source.md", f"See [[{HUB}]], as [derived_from:: [[daily/gone.md]]] says."
    ),
    "digest/wiki/self-only.md": node("digest/wiki/self-only.md", "Itself: [[digest/wiki/self-only.md]]."),
    "digest/wiki/daily-only.md": node("digest/wiki/daily-only.md", f"Only the card: [[{CARD}]]."),
    "digest/wiki/sprawl.md": node(
        "digest/wiki/sprawl.md", f"[[{HUB}]]\n\n" + "\n".join(f"## Part {c}\n\n{c}.\n" for c in "abcdefghi")
    ),
    "digest/personal/home.md": node(
        "digest/personal/home.md",
        f"- Lives in Berlin [valid_from:: 2024-05] [valid_to:: 2023-01], [[{HUB}]].",
    ),
    "digest/personal/office.md": node(
        "digest/personal/office.md",
        "- Works in Leeds [valid_from:: 2022] [valid_to:: 2024-06]\n"
        f"- Works in York [valid_from:: 2024-01], see [[{HUB}]].",
    ),
    "digest/wiki/review.md": node(
        "digest/wiki/review.md", f"The review moved to next Friday, see [[{HUB}]]."
    ),
    "digest/wiki/compost-a.md": node("digest/wiki/compost-a.md", f"{TWIN_TEXT}, says [[{HUB}]]."),
    "digest/wiki/compost-b.md": node("digest/wiki/compost-b.md", f"{TWIN_TEXT} too, says [[{HUB}]]."),
    f"journal/dream/runs/{RUN}.json": json.dumps(
        {
            "run_id": RUN,
            "kind": "auto_dream",
            "violations": [{"path": HUB, "missing_edges": [{"target": PEER}]}],
        }
    ),
}
EXPECTED = {
    ("no_source", "digest/wiki/empty.md"),
    ("orphan", "digest/wiki/empty.md"),
    ("no_source", "digest/wiki/fenced-sources.md"),
    ("no_source", "digest/wiki/h3-sources.md"),
    ("no_source", "digest/wiki/front-matter-source.md"),
    ("missing_source", "digest/wiki/renamed-source.md"),
    ("missing_source", "digest/wiki/folder-source.md"),
    ("dead_link", "digest/wiki/short-dead.md"),
    ("dead_link", "digest/wiki/inline-dead-source.md"),
    ("orphan", "digest/wiki/self-only.md"),
    ("orphan", "digest/wiki/daily-only.md"),
    ("overloaded", "digest/wiki/sprawl.md"),
    ("contradictory_validity", "digest/personal/home.md"),
    ("overlapping_validity", "digest/personal/office.md"),
    ("unresolved_date", "digest/wiki/review.md"),
    ("near_duplicate", "digest/wiki/compost-a.md"),
    ("conservation_violation", HUB),
}


async def test_every_kind_is_found_on_awkward_nodes_and_nowhere_else(tmp_path: Path) -> None:
    response, found = await audited(tmp_path / "ws", POSITIVES)
    assert response.success, response.answer
    assert found == EXPECTED, response.answer
    assert "derived_from:: [[daily/gone.md]] names no file" in response.answer
    assert response.metadata["nodes"] == 2 + len(POSITIVES) - 1  # the journal record is no node


# near misses: close to each kind, none of them a finding -------------------------------------------

NEAR_MISSES: dict[str, str | bytes] = {
    # sourced: inline field in Sources; `.md` left out, an anchor, an alias
    "digest/wiki/inline-source.md": node(
        "digest/wiki/inline-source.md",
        f"See [[{HUB}]].\n\n## Sources\n[derived_from:: [[{CARD}]]]",
        sources=None,
    ),
    "digest/wiki/no-extension.md": node("digest/wiki/no-extension.md", f"[[{HUB}]]", sources=CARD[:-3]),
    "digest/wiki/anchored.md": node("digest/wiki/anchored.md", f"[[{HUB}]]", sources=f"{CARD}#part"),
    "digest/wiki/aliased.md": node("digest/wiki/aliased.md", f"[[{HUB}]]", sources=f"{CARD}|the notes"),
    # not dead: a link in code, a link to an existing page that is no node
    "digest/wiki/code-link.md": node(
        "digest/wiki/code-link.md", f"[[{HUB}]] and `[[digest/wiki/nowhere.md]]`."
    ),
    "digest/wiki/to-page.md": node("digest/wiki/to-page.md", f"[[{HUB}]], [[digest/_buckets.md]]."),
    # not orphans: linked only from another node
    "digest/wiki/leaf.md": node("digest/wiki/leaf.md", "A leaf that links nothing."),
    "digest/wiki/branch.md": node("digest/wiki/branch.md", f"[[{HUB}]] and [[digest/wiki/leaf.md]]."),
    # the same slug in two buckets, a name unlike the slug: neither is a kind
    "digest/personal/branch.md": node("digest/personal/branch.md", f"[[{HUB}]]."),
    "digest/wiki/renamed.md": node("digest/wiki/renamed.md", f"[[{HUB}]]", head="---\nname: other\n---\n"),
    # at the bounds: 8 sections (## Sources not counted)
    "digest/wiki/eight.md": node(
        "digest/wiki/eight.md", f"[[{HUB}]]\n\n" + "\n".join(f"## Part {c}\n\n{c}.\n" for c in "abcdefgh")
    ),
    # validity that holds, a replacement starting when the old ends, a resolved date
    "digest/personal/moved.md": node(
        "digest/personal/moved.md",
        f"- Works in Leeds [valid_from:: 2022] [valid_to:: 2023-12]\n- Works in York [valid_from:: 2024-01], [[{HUB}]].",
    ),
    "digest/wiki/resolved.md": node(
        "digest/wiki/resolved.md", f"It moved to next Friday (2026-06-26), [[{HUB}]]."
    ),
    # a node's twins that are no nodes: a generated `_` page and a file below a bucket
    "digest/wiki/compost.md": node("digest/wiki/compost.md", f"{TWIN_TEXT}, says [[{HUB}]]."),
    "digest/wiki/_compost.md": node("digest/wiki/_compost.md", f"{TWIN_TEXT}, says [[{HUB}]]."),
    "digest/wiki/archive/compost.md": node("digest/wiki/archive/compost.md", f"{TWIN_TEXT}, says [[{HUB}]]."),
    # files in odd places are no nodes: unsourced and unlinked, yet not reported
    "digest/loose.md": node("digest/loose.md", "Loose.", sources=None),
    "digest/wiki/deep/er.md": node("digest/wiki/deep/er.md", "Deep.", sources=None),
    # a record without violations
    f"journal/dream/runs/{RUN}.json": json.dumps({"run_id": RUN, "kind": "auto_dream", "violations": []}),
}


async def test_near_misses_of_every_kind_give_no_finding(tmp_path: Path) -> None:
    response, found = await audited(tmp_path / "ws", NEAR_MISSES)
    assert response.success, response.answer
    assert found == set(), response.answer
    assert "the digest is clean" in response.answer


async def test_a_node_edited_or_deleted_behind_a_running_app_is_audited_as_it_is_now(tmp_path: Path) -> None:
    """No update loop: the audit's link graph and near-duplicate searches must follow the files."""
    ws = tmp_path / "ws"
    twins = {
        "digest/wiki/compost-a.md": node("digest/wiki/compost-a.md", f"{TWIN_TEXT}, says [[{HUB}]]."),
        "digest/wiki/compost-b.md": node("digest/wiki/compost-b.md", f"{TWIN_TEXT} too, says [[{HUB}]]."),
        "digest/wiki/spoke.md": node("digest/wiki/spoke.md", f"Links [[{HUB}]]."),
    }
    plant(ws, twins)
    async with ReMe(workspace_dir=ws, timezone="UTC") as app:
        first = await app.run("digest_audit")
        assert {(f["kind"], f["path"]) for f in first.metadata["findings"]} == {
            ("near_duplicate", "digest/wiki/compost-a.md")
        }
        (ws / PEER).unlink()  # HUB's link dies
        (ws / "digest/wiki/compost-b.md").unlink()  # the twin is gone
        put(ws, "digest/wiki/spoke.md", node("digest/wiki/spoke.md", "Links nothing any more."))
        before = snapshot(ws, skip=METADATA, folders=False)
        again = await app.run("digest_audit")
        assert snapshot(ws, skip=METADATA, folders=False) == before
    assert again.success, again.answer
    assert {(f["kind"], f["path"]) for f in again.metadata["findings"]} == {
        ("dead_link", HUB),
        ("orphan", "digest/wiki/spoke.md"),
    }, again.answer


async def test_only_the_newest_max_runs_records_are_read(tmp_path: Path) -> None:
    older, newer = "20260101T000000-000000-aaaaaa", "20260620T230000-000000-bbbbbb"
    violation = [{"path": HUB, "missing_edges": [{"target": PEER}]}]
    files: dict[str, str | bytes] = {
        f"journal/dream/runs/{older}.json": json.dumps(
            {"run_id": older, "kind": "auto_dream", "violations": violation}
        ),
        f"journal/dream/runs/{newer}.json": json.dumps(
            {"run_id": newer, "kind": "auto_dream", "violations": []}
        ),
    }
    steps = [{"backend": "digest_audit", "max_runs": 1}]
    response, found = await audited(tmp_path / "ws", files, **{"jobs.digest_audit.steps": steps})
    assert response.success and found == set(), response.answer


async def test_a_node_that_is_not_utf8_is_skipped_by_name_with_nothing_written(tmp_path: Path) -> None:
    bad = {"digest/wiki/latin1.md": "---\nname: latin1\n---\nCaf\xe9 cr\xe8me\n".encode("latin-1")}
    response, _ = await audited(tmp_path / "ws", bad)
    assert response.success and response.metadata["nodes"] == 2  # the others are audited
    assert [s["path"] for s in response.metadata["skipped"]] == ["digest/wiki/latin1.md"]
    assert "digest/wiki/latin1.md" in response.answer and "not UTF-8" in response.answer


# bad settings: success=false saying what to set ---------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ({"max_runs": 0}, "max_runs must be a whole number of at least 1, not 0"),
        ({"near_duplicate": float("nan")}, "near_duplicate must be a score ratio above 0 and at most 1"),
        ({"neighbours": 500}, "neighbours must be a whole number from 1 to 199, not 500"),
        ({"max_node_chars": -5}, "max_node_chars must be a whole number of at least 1, not -5"),
    ],
)
async def test_a_bad_step_setting_fails_the_job_saying_what_to_set(
    tmp_path: Path, setting: dict[str, object], words: str
) -> None:
    steps = [{"backend": "digest_audit", **setting}]
    response, _ = await audited(tmp_path / "ws", {}, **{"jobs.digest_audit.steps": steps})
    assert not response.success and words in response.answer, response.answer


@pytest.mark.parametrize(
    "fields",
    [
        {"near_duplicate": 0.0},
        {"near_duplicate": 1.5},
        {"neighbours": 0},
        {"max_query_chars": 0},
        {"max_query_chars": 10_000},
        {"max_nodes": 0},
        {"max_runs": -1},
        {"max_nodes": True},
        {"max_runs": 2.5},
    ],
)
def test_audit_settings_refuse_values_that_would_audit_wrongly(fields: dict[str, object]) -> None:
    with pytest.raises(ReMeError, match=f"digest_audit: {next(iter(fields))} must be"):
        AuditSettings(**fields)  # type: ignore[arg-type]


def test_overload_bounds_under_one_are_refused() -> None:
    with pytest.raises(ReMeError, match="max_sections must be a whole number of at least 1, not 0"):
        Overload(6000, 0)


async def test_an_unknown_parameter_is_refused(app: ReMe) -> None:
    response = await app.run("digest_audit", max_nodes=5)
    assert not response.success and "unknown parameter 'max_nodes'" in response.answer


# searches never answer from a file changed behind the index -----------------------------------------


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


async def test_search_drops_a_deleted_file_and_reads_a_truncated_one_again(app: ReMe) -> None:
    ws = app.workspace_dir
    put(ws, "notes/long.md", "# Long\n\n" + "\n".join(f"line {i} about zebras" for i in range(40)) + "\n")
    put(ws, "notes/gone.md", "# Gone\n\nzebras graze quietly\n")
    first = await app.run("search", query="zebras")
    assert {hit["path"] for hit in first.metadata["results"]} == {"notes/long.md", "notes/gone.md"}
    assert max(hit["end_line"] for hit in first.metadata["results"]) > 3
    (ws / "notes/gone.md").unlink()
    put(ws, "notes/long.md", "# Long\n\nshort now, zebras\n")
    again = await app.run("search", query="zebras")
    assert again.success, again.answer
    [hit] = again.metadata["results"]
    assert hit["path"] == "notes/long.md"
    text = lines(ws / "notes/long.md")
    assert hit["end_line"] <= len(text)
    assert hit["text"] == "\n".join(text[hit["start_line"] - 1 : hit["end_line"]])
    assert "notes/gone.md" not in again.answer


async def test_node_search_and_traverse_follow_a_node_deleted_behind_the_index(app: ReMe) -> None:
    ws = app.workspace_dir
    plant(ws, {})
    found = await app.run("node_search", query="lithium cells")
    assert PEER in [hit["path"] for hit in found.metadata["results"]]
    graph = await app.run("traverse", path=HUB)
    assert {e["target"]: e["resolved"] for e in graph.metadata["edges"] if e["source"] == HUB}[PEER] == PEER
    (ws / PEER).unlink()
    found = await app.run("node_search", query="lithium cells")
    assert PEER not in [hit["path"] for hit in found.metadata["results"]]
    graph = await app.run("traverse", path=HUB)
    assert {e["target"]: e["resolved"] for e in graph.metadata["edges"] if e["source"] == HUB}[PEER] is None


async def test_the_guard_stats_only_the_returned_hits(app: ReMe, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = app.workspace_dir
    for i in range(30):
        put(ws, f"notes/n{i}.md", f"# N{i}\n\nzebras {i}\n")
    await app.run("search", query="zebras")
    asked: list[list[str]] = []
    changed = Indexer.changed

    def spy(self: Indexer, paths: list[str]) -> list[str]:
        asked.append(list(paths))
        return changed(self, paths)

    monkeypatch.setattr(Indexer, "changed", spy)
    response = await app.run("search", query="zebras", limit=3)
    assert [len(paths) for paths in asked] == [3]  # nothing stale: one look, no second search
    assert sorted(asked[0]) == sorted(hit["path"] for hit in response.metadata["results"])


async def test_a_file_that_stays_stale_is_left_out(app: ReMe, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sync that cannot happen now (another writer holds the index, a failure) must not let the old
    text through."""
    ws = app.workspace_dir
    put(ws, "notes/a.md", "# A\n\nzebras here\n")
    put(ws, "notes/b.md", "# B\n\nzebras there\n")
    await app.run("search", query="zebras")
    put(ws, "notes/b.md", "# B\n\nzebras moved elsewhere\n")
    monkeypatch.setattr("reme.index.service.sync_changes", lambda indexer, paths: None)
    response = await app.run("search", query="zebras")
    assert [hit["path"] for hit in response.metadata["results"]] == ["notes/a.md"]
    assert index_service(app).indexer.changed(["notes/a.md", "notes/b.md"]) == ["notes/b.md"]


@pytest.mark.parametrize(
    ("backend", "setting", "words"),
    [
        ("digest_audit", {"max_runs": "abc"}, "setting 'max_runs' must be an integer, got 'abc'"),
        ("digest_audit", {"max_runs": True}, "setting 'max_runs' must be an integer, got True"),
        ("digest_audit", {"near_duplicate": "0.5"}, "setting 'near_duplicate' must be a number"),
        ("digest_maintain", {"max_children": 2.7}, "setting 'max_children' must be an integer, got 2.7"),
        ("digest_maintain", {"max_children": "x"}, "setting 'max_children' must be an integer"),
    ],
)
async def test_a_step_setting_of_the_wrong_type_is_refused_when_the_config_loads(
    tmp_path: Path, backend: str, setting: dict[str, object], words: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(words)):
        async with ReMe(
            workspace_dir=tmp_path / "ws", **{f"jobs.{backend}.steps": [{"backend": backend, **setting}]}
        ):
            pass


@pytest.mark.parametrize("setting", ["max_nodes", "max_parent_chars"])
async def test_maintain_bounds_under_one_are_refused(tmp_path: Path, setting: str) -> None:
    steps = [{"backend": "digest_maintain", setting: 0}]
    async with ReMe(
        workspace_dir=tmp_path / "ws", timezone="UTC", **{"jobs.digest_maintain.steps": steps}
    ) as app:
        response = await app.run("digest_maintain")
    assert (
        not response.success and f"digest_maintain's {setting} is 0: set it to 1 or more" in response.answer
    )

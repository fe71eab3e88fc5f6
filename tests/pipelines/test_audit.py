"""digest_audit (docs/spec.md §12.5): each planted defect found, nothing on a clean digest, no writes, no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.pipelines.conftest import MakeApp, MakePipes
from tests.pipelines.dream_support import put

CARD = "daily/2026-06-20/notes.md"
HUB = "digest/wiki/solar-panels.md"
PEER = "digest/wiki/battery-storage.md"


def node(
    path: str, text: str, *, sources: str | None = CARD, description: str = "A node."
) -> tuple[str, str]:
    name = path.rsplit("/", 1)[1][: -len(".md")]
    tail = f"\n## Sources\n- derived_from:: [[{sources}]] — where it comes from.\n" if sources else "\n"
    return path, f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\n{text}\n{tail}"


CLEAN = [
    node(HUB, f"Rooftop photovoltaic modules convert sunlight; pairs with [[{PEER}]]."),
    node(PEER, f"Lithium cells buffer evening demand, charged by [[{HUB}]]."),
]
TWIN_TEXT = "Composting kitchen scraps with dry leaves yields humus for vegetable beds within months"
PLANTED = {
    ("no_source", "digest/wiki/unsourced.md"): node(
        "digest/wiki/unsourced.md", f"Gravel driveways drain rainwater, near [[{HUB}]].", sources=None
    ),
    ("missing_source", "digest/wiki/lost-source.md"): node(
        "digest/wiki/lost-source.md",
        f"Cedar fences weather grey, see [[{HUB}]].",
        sources="daily/2026-01-01/gone.md",
    ),
    ("dead_link", "digest/wiki/dead-end.md"): node(
        "digest/wiki/dead-end.md", f"Heat pumps move warmth, see [[{HUB}]] and [[digest/wiki/nowhere.md]]."
    ),
    ("orphan", "digest/wiki/alone.md"): node(
        "digest/wiki/alone.md", "Sourdough starters need daily feeding."
    ),
    ("near_duplicate", "digest/wiki/compost-a.md"): node(
        "digest/wiki/compost-a.md", f"{TWIN_TEXT}, says [[{HUB}]]."
    ),
    ("overloaded", "digest/wiki/everything.md"): node(
        "digest/wiki/everything.md",
        f"Links [[{HUB}]].\n\n" + "\n".join(f"## Part {word}\n\nAbout {word}.\n" for word in "abcdefghi"),
    ),
    ("contradictory_validity", "digest/personal/home.md"): node(
        "digest/personal/home.md",
        f"- Lives in Berlin [valid_from:: 2024-05] [valid_to:: 2023-01], see [[{HUB}]].",
    ),
    ("overlapping_validity", "digest/personal/office.md"): node(
        "digest/personal/office.md",
        "- Works from the Leeds office [valid_from:: 2022] [valid_to:: 2024-06]\n"
        f"- Works from the York office [valid_from:: 2024-01], see [[{HUB}]].",
    ),
    ("unresolved_date", "digest/wiki/review.md"): node(
        "digest/wiki/review.md", f"The design review moved to next Friday, see [[{HUB}]]."
    ),
}
TWIN = node("digest/wiki/compost-b.md", f"{TWIN_TEXT} too, says [[{HUB}]].")
VIOLATION_RUN = "20260620T230000-000000-abcdef"


def plant(ws: Path, nodes: list[tuple[str, str]]) -> None:
    put(ws, CARD, "# Notes\n\nSolar, batteries and the garden.\n")
    for path, text in nodes:
        put(ws, path, text)


def files(ws: Path) -> dict[str, bytes]:
    return {
        p.relative_to(ws).as_posix(): p.read_bytes()
        for p in sorted(ws.rglob("*"))
        if p.is_file() and not p.relative_to(ws).as_posix().startswith("metadata/")
    }


async def test_a_clean_digest_has_no_finding(make_pipes: MakePipes) -> None:
    app = make_pipes()
    plant(app.workspace_dir, CLEAN)
    response = await app.audit()
    assert response.success, response.answer
    assert response.metadata["nodes"] == 2 and response.metadata["findings"] == []
    assert set(response.metadata["counts"].values()) == {0} and "the digest is clean" in response.answer


async def test_each_planted_defect_is_found_once_and_nothing_is_written(make_pipes: MakePipes) -> None:
    app = make_pipes()
    ws = app.workspace_dir
    plant(ws, [*CLEAN, *PLANTED.values(), TWIN])
    record = {
        "run_id": VIOLATION_RUN,
        "kind": "auto_dream",
        "violations": [{"path": HUB, "missing_edges": [{"target": PEER, "predicate": None}]}],
    }
    put(ws, f"journal/dream/runs/{VIOLATION_RUN}.json", json.dumps(record))
    before = files(ws)
    response = await app.audit()
    assert response.success, response.answer
    found = {(f["kind"], f["path"]) for f in response.metadata["findings"]}
    assert found == {*PLANTED, ("conservation_violation", HUB)}
    counts = response.metadata["counts"]
    assert counts == {kind: 1 for kind in counts} and len(counts) == 10
    [twin] = [f for f in response.metadata["findings"] if f["kind"] == "near_duplicate"]
    assert "near-duplicate of digest/wiki/compost-b.md" in twin["detail"]
    assert "[[digest/wiki/nowhere.md]] names no file" in response.answer
    assert f"auto_dream run {VIOLATION_RUN}" in response.answer
    assert response.metadata["nodes"] == 2 + len(PLANTED) + 1
    assert files(ws) == before  # no writes


async def test_a_digest_over_the_node_bound_is_refused(tmp_path: Path, make_app: MakeApp) -> None:
    plant(tmp_path / "ws", CLEAN)
    app = await make_app(**{"jobs.digest_audit.steps": [{"backend": "digest_audit", "max_nodes": 1}]})
    response = await app.run("digest_audit")
    assert not response.success and "more than max_nodes 1" in response.answer


async def test_a_source_leading_outside_the_workspace_names_no_file(make_pipes: MakePipes) -> None:
    app = make_pipes()
    escape = "../" * 12 + "etc/hostname"
    plant(app.workspace_dir, [*CLEAN, node("digest/wiki/escape.md", f"Links [[{HUB}]].", sources=escape)])
    response = await app.audit()
    assert [(f["kind"], f["path"]) for f in response.metadata["findings"]] == [
        ("missing_source", "digest/wiki/escape.md")
    ]


async def test_the_answer_is_bounded_and_metadata_keeps_every_finding(
    make_pipes: MakePipes, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_pipes()
    monkeypatch.setattr("reme.pipelines.digest.audit.MAX_ANSWER_LINES", 2)
    plant(app.workspace_dir, [*CLEAN, *PLANTED.values(), TWIN])
    response = await app.audit()
    assert len(response.metadata["findings"]) == 9
    assert response.answer.splitlines()[-1] == "… 7 more finding(s) in metadata.findings"


async def test_a_node_that_is_only_a_link_is_no_near_duplicate_of_what_it_links(
    make_pipes: MakePipes,
) -> None:
    app = make_pipes()
    pointer = node("digest/wiki/pointer.md", f"See [[{HUB}]] for rooftop photovoltaic modules.")
    plant(app.workspace_dir, [*CLEAN, pointer])
    response = await app.audit()
    assert response.metadata["findings"] == [], response.answer


async def test_near_duplicates_are_lexical_with_vectors_on_too(tmp_path: Path, make_app: MakeApp) -> None:
    """With vectors on, node_search scores are fused (scaled per query, partly by meaning): the audit must
    still compare keyword scores, so the findings are exactly those of vectors off."""
    from tests.embedders import hashed_words_backend, vector_overrides

    ws = tmp_path / "ws"
    plant(ws, [*CLEAN, *PLANTED.values(), TWIN])
    app = await make_app()
    off = await app.run("digest_audit")
    await app.close()
    with hashed_words_backend():
        app = await make_app(**vector_overrides())
        assert (await app.run("reindex")).success
        on = await app.run("digest_audit")
    assert on.success, on.answer
    twins = [f for f in on.metadata["findings"] if f["kind"] == "near_duplicate"]
    assert twins == [f for f in off.metadata["findings"] if f["kind"] == "near_duplicate"]
    assert [f["path"] for f in twins] == ["digest/wiki/compost-a.md"]

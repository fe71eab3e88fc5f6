"""The search, node_search, traverse and reindex jobs on a real workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTES = {
    "daily/2026-06-01/solar.md": (
        "---\nname: Solar chat\ndescription: we talked about rooftop solar\n---\n"
        "# Rooftop\n\nSolar panels on the roof, see [[digest/energy/solar.md]].\n\n"
        "industry:: [[digest/energy/ev.md]]\n"
    ),
    "daily/2026-06-03.md": "# June 3\n\nA solar farm visit. Links: [[digest/energy/solar.md#costs|costs]]\n",
    "daily/2026-06-05/wind.md": "Wind turbines and a little solar.\n",
    "digest/energy/solar.md": (
        "---\nname: Solar energy\ndescription: photovoltaics overview\n---\n"
        "# Solar\n\nSolar panels convert light to electricity.\n\n## Costs\n\nSolar costs fell.\n"
    ),
    "digest/energy/wind.md": "---\nname: Wind\n---\nWind power and solar hybrids. [[digest/energy/solar.md]]\n",
    "session/dialog/s1.jsonl": '{"id": "1", "role": "user", "name": "ann", "content": "solar inverter broke", '
    '"created_at": "2026-06-02T10:00:00"}\n',
    "resource/2026-06-01/report.md": "solar solar solar (resources are not indexed)\n",
}


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text, encoding="utf-8")


@pytest.fixture
async def notes_app(app):
    write(app.workspace_dir, NOTES)
    return app


async def _paths(app, **params) -> list[str]:
    response = await app.run("search", **params)
    assert response.success, response.answer
    return [hit["path"] for hit in response.metadata["results"]]


async def test_search_returns_structured_hits_and_readable_answer(notes_app) -> None:
    response = await notes_app.run("search", query="solar panels roof", limit=3)
    assert response.success
    results = response.metadata["results"]
    assert 1 <= len(results) <= 3
    top = results[0]
    assert top["path"] == "daily/2026-06-01/solar.md"
    assert set(top) == {
        "path", "start_line", "end_line", "score", "text", "name", "description", "outlinks", "inlinks",
        "folded",
    }  # fmt: skip
    assert top["name"] == "Solar chat" and top["description"] == "we talked about rooftop solar"
    lines = (notes_app.workspace_dir / top["path"]).read_text().splitlines()
    assert "Solar panels on the roof" in "\n".join(lines[top["start_line"] - 1 : top["end_line"]])
    assert "Solar panels on the roof" in top["text"]
    assert [link["path"] for link in top["outlinks"]] == ["digest/energy/solar.md", "digest/energy/ev.md"]
    assert top["outlinks"][0]["name"] == "Solar energy" and "text" not in top["outlinks"][0]
    assert top["path"] in response.answer and "Solar chat" in response.answer
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)


async def test_resources_are_not_indexed_but_sessions_are(notes_app) -> None:
    paths = await _paths(notes_app, query="solar", limit=50)
    assert "resource/2026-06-01/report.md" not in paths
    assert "session/dialog/s1.jsonl" in await _paths(notes_app, query="inverter broke")


async def test_limit_and_min_score(notes_app) -> None:
    every = (await notes_app.run("search", query="solar", limit=50)).metadata["results"]
    assert len(every) >= 5
    assert len(await _paths(notes_app, query="solar", limit=2)) == 2
    cut = (every[1]["score"] + every[2]["score"]) / 2
    assert len(await _paths(notes_app, query="solar", limit=50, min_score=cut)) == 2
    assert await _paths(notes_app, query="solar", min_score=1000) == []


async def test_date_filters_are_inclusive_and_keep_undated(notes_app) -> None:
    dated = await _paths(notes_app, query="solar", limit=50, start_date="2026-06-03", strict_date_filter=True)
    assert set(dated) == {"daily/2026-06-03.md", "daily/2026-06-05/wind.md"}
    kept = await _paths(notes_app, query="solar", limit=50, start_date="2026-06-02", end_date="2026-06-03")
    assert "daily/2026-06-03.md" in kept and "digest/energy/solar.md" in kept
    assert "daily/2026-06-01/solar.md" not in kept and "daily/2026-06-05/wind.md" not in kept


async def test_path_prefix(notes_app) -> None:
    paths = await _paths(notes_app, query="solar", limit=50, path_prefix="digest/")
    assert paths and all(p.startswith("digest/") for p in paths)


async def test_links_expansion_can_be_limited_or_off(notes_app) -> None:
    params = {"query": "photovoltaics overview solar costs", "path_prefix": "digest/energy/solar"}
    hit = (await notes_app.run("search", **params)).metadata["results"][0]
    assert hit["path"] == "digest/energy/solar.md"
    assert {link["path"] for link in hit["inlinks"]} == {
        "daily/2026-06-01/solar.md",
        "daily/2026-06-03.md",
        "digest/energy/wind.md",
    }
    one = (await notes_app.run("search", max_links_per_direction=1, **params)).metadata["results"][0]
    assert len(one["inlinks"]) == 1
    off = (await notes_app.run("search", expand_links=False, **params)).metadata["results"][0]
    assert off["inlinks"] == [] and off["outlinks"] == []


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"query": "solar", "start_date": "2026-13-01"}, "start_date"),
        ({"query": "solar", "end_date": "June 1"}, "end_date"),
        ({"query": "solar", "start_date": "2026-W23-1"}, "YYYY-MM-DD"),  # ISO week date, same length
        ({"query": "solar", "start_date": "2026-06-05", "end_date": "2026-06-01"}, "after"),
        ({"query": "   "}, "empty"),
        ({"query": "solar", "path_prefix": "../etc"}, "path_prefix"),
        ({"query": "solar", "limit": 0}, ""),
        ({"query": "solar", "unknown": 1}, ""),
        ({}, ""),
    ],
)
async def test_bad_search_parameters_are_refused(notes_app, params, message) -> None:
    response = await notes_app.run("search", **params)
    assert not response.success
    assert message in response.answer


async def test_node_search_is_digest_only_one_row_per_path(notes_app) -> None:
    response = await notes_app.run("node_search", query="solar costs panels")
    assert response.success
    results = response.metadata["results"]
    paths = [r["path"] for r in results]
    assert paths[0] == "digest/energy/solar.md"  # two matching chunks, one row
    assert len(paths) == len(set(paths)) and all(p.startswith("digest/") for p in paths)
    assert set(results[0]) == {"path", "score", "name", "description"}
    assert results[0]["name"] == "Solar energy"
    limited = await notes_app.run("node_search", query="solar", limit=1)
    assert len(limited.metadata["results"]) == 1


async def test_traverse_directions_and_depth(notes_app) -> None:
    forward = await notes_app.run("traverse", path="daily/2026-06-01/solar.md", direction="forward")
    assert forward.success
    nodes = {n["path"]: n for n in forward.metadata["nodes"]}
    assert set(nodes) == {"daily/2026-06-01/solar.md", "digest/energy/solar.md", "digest/energy/ev.md"}
    assert nodes["digest/energy/ev.md"]["exists"] is False and nodes["digest/energy/solar.md"]["exists"]
    assert {"source": "daily/2026-06-01/solar.md", "target": "digest/energy/ev.md", "resolved": None,
            "predicate": "industry", "anchor": None} in forward.metadata["edges"]  # fmt: skip

    backward = await notes_app.run("traverse", path=["digest/energy/solar.md"], direction="backward")
    edges = backward.metadata["edges"]
    assert {e["source"] for e in edges} == {
        "daily/2026-06-01/solar.md",
        "daily/2026-06-03.md",
        "digest/energy/wind.md",
    }
    assert all(e["target"] == "digest/energy/solar.md" for e in edges)  # original direction kept
    assert {"source": "daily/2026-06-03.md", "target": "digest/energy/solar.md",
            "resolved": "digest/energy/solar.md", "predicate": None, "anchor": "costs"} in edges  # fmt: skip

    deep = await notes_app.run("traverse", path="digest/energy/wind.md", depth=2, direction="both")
    deep_nodes = {n["path"] for n in deep.metadata["nodes"]}
    assert "daily/2026-06-01/solar.md" in deep_nodes and "digest/energy/ev.md" not in deep_nodes
    deeper = await notes_app.run("traverse", path="digest/energy/wind.md", depth=3, direction="both")
    assert "digest/energy/ev.md" in {n["path"] for n in deeper.metadata["nodes"]}
    shallow = await notes_app.run("traverse", path="digest/energy/wind.md", depth=0)
    assert [n["path"] for n in shallow.metadata["nodes"]] == ["digest/energy/wind.md"]
    assert shallow.metadata["edges"] == []


async def test_traverse_refuses_unsafe_paths(notes_app) -> None:
    assert not (await notes_app.run("traverse", path="/etc/passwd")).success
    assert not (await notes_app.run("traverse", path=[])).success
    assert not (await notes_app.run("traverse", path="daily/x.md", direction="sideways")).success


async def test_reindex_rebuilds_the_same_index(notes_app) -> None:
    before = (await notes_app.run("search", query="solar", limit=50)).metadata["results"]
    response = await notes_app.run("reindex")
    assert response.success and response.metadata["indexed"] == 7  # 6 notes + digest/_buckets.md
    assert response.metadata["chunks"] >= 6
    after = (await notes_app.run("search", query="solar", limit=50)).metadata["results"]
    assert [(h["path"], h["start_line"]) for h in after] == [(h["path"], h["start_line"]) for h in before]
    assert [h["score"] for h in after] == pytest.approx([h["score"] for h in before])


async def test_status_and_health_show_index_figures(notes_app) -> None:
    await notes_app.run("search", query="solar")
    stats = notes_app.component("index").service.stats()
    assert stats["files"] == 7 and stats["keyword_docs"] >= 7 and stats["pending_links"] == 1  # + _buckets.md
    status = await notes_app.run("status")
    assert status.metadata["components"]["index"]["files"] == 7
    assert notes_app.component("index").service.health()["status"] == "ok"


async def test_chinese_notes_are_searchable_by_words(app) -> None:
    write(
        app.workspace_dir,
        {
            "digest/energy/battery-zh.md": "---\nname: 电池\n---\n宁德时代的储能电池在夜间为电网供电。\n",
            "digest/energy/solar-zh.md": "光伏组件把太阳光转换成电能。\n",
        },
    )
    response = await app.run("search", query="储能电池")
    hits = response.metadata["results"]
    assert hits[0]["path"] == "digest/energy/battery-zh.md"  # the whole word wins
    assert all(hits[0]["score"] > 2 * hit["score"] for hit in hits[1:])  # 电能 shares characters only
    assert "宁德时代" in response.answer
    nodes = await app.run("node_search", query="太阳光 电能")
    assert nodes.metadata["results"][0]["path"] == "digest/energy/solar-zh.md"


@pytest.mark.parametrize("job", ["search", "node_search"])
async def test_an_oversized_query_is_refused_before_any_search(notes_app, job: str) -> None:
    response = await notes_app.run(job, query="solar " * 2_000)
    assert not response.success and "8192" in response.answer
    assert (await notes_app.run(job, query="solar " * 1_000)).success  # 6000 characters still search


async def test_node_search_leaves_out_generated_pages(app) -> None:
    root = app.workspace_dir
    (root / "digest/wiki").mkdir(parents=True, exist_ok=True)
    (root / "digest/wiki/solar.md").write_text("---\nname: solar\n---\nSolar panels and buckets.\n")
    response = await app.run("node_search", query="buckets")
    paths = [row["path"] for row in response.metadata["results"]]
    assert paths == ["digest/wiki/solar.md"]  # digest/_buckets.md also says "buckets" but is no node


async def test_chinese_words_find_their_split_and_longer_forms(app) -> None:
    write(
        app.workspace_dir,
        {
            "daily/2026-06-01/a.md": "昨天下午喝了茶，聊了项目。\n",
            "daily/2026-06-02/b.md": "周末在杭州喝龙井茶。\n",
            "daily/2026-06-03/c.md": "今天写代码，没有别的事。\n",
        },
    )
    for query in ("喝茶", "喝 茶"):
        assert set(await _paths(app, query=query)) == {"daily/2026-06-01/a.md", "daily/2026-06-02/b.md"}
    assert await _paths(app, query="龙井") == ["daily/2026-06-02/b.md"]


async def test_an_index_of_the_previous_tokenizer_is_rebuilt_not_reused(workspace_dir: Path) -> None:
    from reme import ReMe

    write(workspace_dir, {"daily/2026-06-01/a.md": "昨天下午喝了茶。\n"})
    old = {"components.index.tokenizer": {"cjk_chars": False}}  # the analyser before characters were terms
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **old) as app:
        assert await _paths(app, query="喝茶") == []
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC") as app:
        assert await _paths(app, query="喝茶") == ["daily/2026-06-01/a.md"]
        folders = [p.name for p in (workspace_dir / "metadata/keyword").iterdir()]
        assert folders == [app.component("index").service.keyword.path.name]  # the stale engine is gone

"""digest_write, digest_edit and digest_buckets through `app.run`, asserting the files on disk byte for byte."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest
import yaml

from reme import ReMe
from reme.app.config import PACKAGED_DIR, ConfigError, load_config
from reme.workspace.buckets import DEFAULT_BUCKETS

SOURCE = "daily/2026-06-20/session.md"
BODY = (
    "# Weekly releases\n\nThe team ships weekly; see [[digest/wiki/rollback.md]].\n\n"
    f"## Sources\n- derived_from:: [[{SOURCE}]] — the team chose weekly releases after the outage.\n"
)
NODE = "digest/wiki/weekly-releases.md"


def snapshot(root: Path) -> dict[str, str]:
    """Every user file (metadata/ is derived state) with the sha256 of its bytes."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not str(path.relative_to(root)).startswith("metadata")
    }


@pytest.fixture
async def digest_app(app):
    (app.workspace_dir / "daily/2026-06-20").mkdir(parents=True)
    (app.workspace_dir / SOURCE).write_text("---\nname: session\n---\nWe chose weekly releases.\n")
    return app


async def write_node(app, path: str = NODE, content: str = BODY, **params):
    params.setdefault("description", "How often the team releases, and why.")
    return await app.run("digest_write", path=path, content=content, **params)


# digest_write ------------------------------------------------------------------------------------


async def test_write_creates_a_node_with_name_and_description(digest_app):
    response = await write_node(digest_app, metadata={"kind": "decision"})
    assert response.success, response.answer
    assert response.answer == f"Created {NODE}"
    assert response.metadata == {"path": NODE, "created": True}
    assert (digest_app.workspace_dir / NODE).read_text() == (
        "---\nname: weekly-releases\ndescription: How often the team releases, and why.\nkind: decision\n---\n"
        + BODY
    )
    found = await digest_app.run("node_search", query="weekly releases")
    assert [hit["path"] for hit in found.metadata["results"]][:1] == [NODE]


async def test_write_keeps_front_matter_given_in_content_and_takes_a_matching_name(digest_app):
    content = "---\ndescription: From the text\ntags: [ops]\n---\n" + BODY
    response = await digest_app.run("digest_write", path=NODE, content=content, name="weekly-releases")
    assert response.success, response.answer
    text = (digest_app.workspace_dir / NODE).read_text()
    assert text.startswith("---\ndescription: From the text\ntags: [ops]\nname: weekly-releases\n---\n")
    assert text.endswith(BODY)


async def test_write_accepts_a_slug_in_any_script(digest_app):
    response = await write_node(digest_app, path="digest/personal/发布节奏.md")
    assert response.success, response.answer
    assert "name: 发布节奏\n" in (digest_app.workspace_dir / "digest/personal/发布节奏.md").read_text()


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"path": "digest/ideas/weekly.md"}, "bucket 'ideas' is not configured"),
        ({"path": "digest/wiki/Weekly.md"}, "capital letter"),
        ({"path": "digest/wiki/weekly releases.md"}, "contains ' '"),
        ({"path": "digest/wiki/weekly"}, "ending in '.md'"),
        ({"path": "digest/weekly.md"}, "not a digest node path"),
        ({"path": "daily/wiki/weekly.md"}, "not a digest node path"),
        ({"path": "digest/wiki/_weekly.md"}, "not nodes"),
        ({"path": "../digest/wiki/weekly.md"}, "'..'"),
        ({"path": "metadata/wiki/weekly.md"}, "derived state"),
        ({"path": "digest/wiki/con.md"}, "reserved device name"),
        ({"name": "Weekly Releases"}, "differs from the file name"),
        ({"metadata": {"name": "other"}}, "differs from the file name"),
        ({"content": "---\nname: other\n---\n" + BODY}, "differs from the file name"),
        ({"content": "---\nname: [broken\n---\n" + BODY}, "cannot be read"),
        ({"description": None}, "needs a description"),
        ({"content": "Weekly.\n"}, "no '## Sources' section"),
        ({"content": f"Weekly.\n\n## Sources\n- [[{SOURCE}]]\n"}, "no `derived_from::` link"),
        ({"content": "## Sources\n- derived_from:: [[daily/2026-06-21/x.md]]\n"}, "existing file"),
        ({"content": "## Sources\n- derived_from:: [[digest/wiki/rollback.md]]\n"}, "existing file"),
        ({"content": "x" * 1_100_000}, "over the 1048576-byte cap"),
    ],
)
async def test_write_refusals_write_nothing(digest_app, params, reason):
    (digest_app.workspace_dir / "digest/wiki").mkdir()
    (digest_app.workspace_dir / "digest/wiki/rollback.md").write_text("## Sources\n")
    before = snapshot(digest_app.workspace_dir)
    call = {"path": NODE, "content": BODY, "description": "d", **params}
    call = {key: value for key, value in call.items() if value is not None}
    response = await digest_app.run("digest_write", **call)
    assert not response.success
    assert reason in response.answer
    assert snapshot(digest_app.workspace_dir) == before


async def test_write_refuses_an_existing_node_byte_identical(digest_app):
    assert (await write_node(digest_app)).success
    before = (digest_app.workspace_dir / NODE).read_bytes()
    response = await write_node(digest_app, content=BODY + "\nMore.\n")
    assert not response.success and "already exists; update it with digest_edit" in response.answer
    assert response.metadata == {"path": NODE}
    assert (digest_app.workspace_dir / NODE).read_bytes() == before


async def test_two_concurrent_writes_of_one_node_create_it_once(digest_app):
    first, second = await asyncio.gather(
        write_node(digest_app, content=BODY + "one\n"), write_node(digest_app, content=BODY + "two\n")
    )
    assert sorted([first.success, second.success]) == [False, True]
    winner = BODY + ("one\n" if first.success else "two\n")
    assert (digest_app.workspace_dir / NODE).read_text().endswith(winner)


# digest_edit -------------------------------------------------------------------------------------


@pytest.fixture
async def node_app(digest_app):
    assert (await write_node(digest_app)).success
    return digest_app


async def test_edit_changes_the_body_only(node_app):
    path = node_app.workspace_dir / NODE
    head = path.read_text().split("# Weekly")[0]
    response = await node_app.run("digest_edit", path=NODE, old="ships weekly", new="ships every Monday")
    assert response.success, response.answer
    assert response.metadata == {"path": NODE, "count": 1}
    assert response.answer == f"Replaced 1 occurrence(s) in {NODE}"
    assert path.read_text() == head + BODY.replace("ships weekly", "ships every Monday")


async def test_edit_may_add_links_and_sources(node_app):
    (node_app.workspace_dir / "resource/2026-06-21").mkdir(parents=True)
    (node_app.workspace_dir / "resource/2026-06-21/postmortem.md").write_text("raw\n")
    added = "- Confirmed in [derived_from:: [[resource/2026-06-21/postmortem.md]]].\n"
    response = await node_app.run("digest_edit", path=NODE, old="outage.\n", new="outage.\n" + added)
    assert response.success, response.answer
    assert (node_app.workspace_dir / NODE).read_text().endswith(added)


@pytest.mark.parametrize(
    ("old", "new", "missing"),
    [
        ("see [[digest/wiki/rollback.md]]", "see the rollback rule", [("digest/wiki/rollback.md", None)]),
        (f"- derived_from:: [[{SOURCE}]]", f"- [[{SOURCE}]]", [(SOURCE, "derived_from")]),
        ("[[digest/wiki/rollback.md]]", "`[[digest/wiki/rollback.md]]`", [("digest/wiki/rollback.md", None)]),
        ("[[digest/wiki/rollback.md]]", "[[digest/wiki/rollback]]", [("digest/wiki/rollback.md", None)]),
    ],
)
async def test_edit_that_drops_an_edge_is_refused_with_missing_edges(node_app, old, new, missing):
    before = snapshot(node_app.workspace_dir)
    response = await node_app.run("digest_edit", path=NODE, old=old, new=new)
    assert not response.success and "(E-1)" in response.answer
    assert response.metadata == {
        "path": NODE,
        "missing_edges": [{"target": target, "predicate": predicate} for target, predicate in missing],
    }
    assert snapshot(node_app.workspace_dir) == before


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"old": "## Sources", "new": "## References"}, "no '## Sources' section"),
        ({"old": "not in the node", "new": "x"}, "does not occur in the body"),
        ({"old": "name: weekly-releases", "new": "name: other"}, "does not occur in the body"),
        ({"old": "", "new": "x"}, "should be non-empty"),
        ({"path": "digest/wiki/absent.md"}, "no node 'digest/wiki/absent.md'"),
        ({"path": "digest/_buckets.md", "old": "Digest"}, "not a digest node path"),
        ({"path": "digest/wiki/_index.md", "old": "x"}, "not nodes"),
        ({"path": "daily/2026-06-20/session.md", "old": "weekly"}, "not a digest node path"),
        ({"expected_sha256": "0" * 64}, "changed since you read it"),
        ({"expected_sha256": "abc"}, "does not match"),
        ({"new": "x" * 1_100_000}, "over the 1048576-byte cap"),
    ],
)
async def test_edit_refusals_leave_every_file_byte_identical(node_app, params, reason):
    before = snapshot(node_app.workspace_dir)
    call = {"path": NODE, "old": "ships weekly", "new": "ships daily", **params}
    response = await node_app.run("digest_edit", **call)
    assert not response.success
    assert reason in response.answer
    assert snapshot(node_app.workspace_dir) == before


async def test_edit_compare_and_set_against_the_version_read(node_app):
    read = await node_app.run("load", path=NODE)
    sha = read.metadata["sha256"]
    assert (await node_app.run("edit", path=NODE, old="ships weekly", new="ships weekly (Mondays)")).success
    current = (node_app.workspace_dir / NODE).read_bytes()
    stale = await node_app.run("digest_edit", path=NODE, old="weekly", new="daily", expected_sha256=sha)
    assert not stale.success and "read it again" in stale.answer
    assert stale.metadata["conflict"] is True
    assert stale.metadata["sha256"] == hashlib.sha256(current).hexdigest()
    assert (node_app.workspace_dir / NODE).read_bytes() == current  # the other edit is not lost
    fresh = await node_app.run("load", path=NODE)
    response = await node_app.run(
        "digest_edit",
        path=NODE,
        old="(Mondays)",
        new="(Tuesdays)",
        expected_sha256=fresh.metadata["sha256"].upper(),
    )
    assert response.success, response.answer
    assert "ships weekly (Tuesdays)" in (node_app.workspace_dir / NODE).read_text()


async def test_edit_refuses_a_node_whose_front_matter_is_broken(node_app):
    path = node_app.workspace_dir / NODE
    path.write_text("---\nname: [broken\n---\n" + BODY)
    before = path.read_bytes()
    response = await node_app.run("digest_edit", path=NODE, old="name", new="x")
    assert not response.success and "fix it first" in response.answer
    assert path.read_bytes() == before


# buckets and config ------------------------------------------------------------------------------


async def test_digest_buckets_lists_the_configured_set(app):
    response = await app.run("digest_buckets")
    assert response.success
    assert response.metadata == {"buckets": [bucket.to_dict() for bucket in DEFAULT_BUCKETS]}
    assert response.answer == (app.workspace_dir / "digest/_buckets.md").read_text()


def test_packaged_default_buckets_are_the_spec_set():
    packaged = yaml.safe_load((PACKAGED_DIR / "default.yaml").read_text())["digest"]["buckets"]
    assert packaged == [bucket.to_dict() for bucket in DEFAULT_BUCKETS]


async def test_configured_buckets_decide_where_nodes_may_go_and_regenerate_the_page(workspace_dir):
    buckets = [{"name": "recipes", "description": "dishes we cook"}]
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC") as app:
        page = (app.workspace_dir / "digest/_buckets.md").read_text()
    assert "`wiki`" in page
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **{"digest.buckets": buckets}) as app:
        page = (app.workspace_dir / "digest/_buckets.md").read_text()
        assert "- `recipes`: dishes we cook\n" in page and "`unknown`" in page and "`wiki`" not in page
        listed = await app.run("digest_buckets")
        assert [bucket["name"] for bucket in listed.metadata["buckets"]] == ["recipes", "unknown"]
        shown = await app.run("app_config")
        assert [b["name"] for b in shown.metadata["config"]["digest"]["buckets"]] == ["recipes", "unknown"]
        (app.workspace_dir / "daily/2026-06-20").mkdir(parents=True)
        (app.workspace_dir / SOURCE).write_text("soup\n")
        refused = await write_node(app, path="digest/wiki/soup.md")
        assert not refused.success and "configured: recipes, unknown" in refused.answer
        assert not (app.workspace_dir / "digest/wiki").exists()
        assert (await write_node(app, path="digest/recipes/soup.md")).success
        assert (await write_node(app, path="digest/unknown/stew.md")).success


def test_bad_bucket_config_is_a_config_error_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"'digest.buckets\[1\].name'"):
        load_config(
            overrides={"digest.buckets": [{"name": "wiki", "description": "x"}, {"name": "Bad Name"}]},
            load_env_file=False,
        )
    with pytest.raises(ConfigError, match="'digest.colour'"):
        load_config(overrides={"digest.colour": "red"}, load_env_file=False)
    with pytest.raises(ConfigError, match="'scheduler.cron' must be true or false"):
        load_config(overrides={"scheduler.cron": "sometimes"}, load_env_file=False)
    with pytest.raises(ConfigError, match="'scheduler.every'"):
        load_config(overrides={"scheduler.every": 1}, load_env_file=False)
    assert not (tmp_path / "ws").exists()


async def test_edit_cannot_turn_body_text_into_front_matter(digest_app):
    path = digest_app.workspace_dir / "digest/wiki/bare.md"
    path.parent.mkdir(parents=True)
    path.write_text("opening line\n" + BODY)  # a hand-written node without front matter
    before = path.read_bytes()
    response = await digest_app.run(
        "digest_edit", path="digest/wiki/bare.md", old="opening line\n", new="---\nname: other\n---\n"
    )
    assert not response.success and "body only" in response.answer
    assert path.read_bytes() == before

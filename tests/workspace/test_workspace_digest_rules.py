"""The digest rules of docs/spec.md §12.1/12.3 as plain functions: slugs, node paths, buckets, the Sources rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme.workspace.buckets import DEFAULT_BUCKETS, buckets_page, parse_buckets, write_buckets_page
from reme.workspace.digest import (
    DigestRuleError,
    check_new_node_path,
    check_slug,
    check_sources,
    is_node,
    source_links,
)
from reme.workspace.layout import Workspace

BUCKETS = ("personal", "procedure", "wiki", "unknown")


@pytest.mark.parametrize(
    "slug", ["solar-power", "weekly_releases", "v2", "光伏发电", "кошка", "Москва", "हिन्दी", "café", "x" * 80]
)
def test_slugs_of_any_script_are_accepted(slug):
    assert check_slug(slug) == slug


@pytest.mark.parametrize(
    ("slug", "reason"),
    [
        ("Solar", "capital letter 'S'"),
        ("solar power", "contains ' '"),
        ("solar.power", "contains '.'"),
        ("a/b", "contains '/'"),
        ("x" * 81, "81 characters"),
        ("", "empty"),
        ("_draft", "starts with '_'"),
        ("cafe\u0301", "NFC"),
        ("emoji-🙂", "contains"),
    ],
)
def test_bad_slugs_are_refused_never_normalised(slug, reason):
    with pytest.raises(DigestRuleError, match=reason):
        check_slug(slug)


def test_a_new_node_path_needs_a_configured_bucket_and_a_slug():
    assert check_new_node_path("digest/wiki/solar.md", "digest", BUCKETS) == ("wiki", "solar")
    assert check_new_node_path("memory/wiki/solar.md", "memory", BUCKETS) == ("wiki", "solar")
    for path, reason in [
        ("digest/ideas/solar.md", "bucket 'ideas' is not configured"),
        ("digest/solar.md", "not a digest node path"),
        ("digest/wiki/deep/solar.md", "not a digest node path"),
        ("daily/wiki/solar.md", "not a digest node path"),
        ("digest/wiki/solar", "ending in '.md'"),
        ("digest/wiki/solar.markdown", "ending in '.md'"),
        ("digest/wiki/Solar.md", "capital letter"),
        ("digest/wiki/_buckets.md", "not nodes"),
    ]:
        with pytest.raises(DigestRuleError, match=reason):
            check_new_node_path(path, "digest", BUCKETS)


def test_files_starting_with_underscore_are_not_nodes():
    assert is_node("digest/wiki/solar.md")
    assert not is_node("digest/_buckets.md")
    assert not is_node("digest/wiki/_index.md")
    assert not is_node("digest/_drafts/solar.md")
    assert not is_node("daily/2026-06-01/solar.md")


# buckets ---------------------------------------------------------------------------------------


def test_default_buckets_and_the_mandatory_unknown():
    assert [b.name for b in parse_buckets(None)] == ["personal", "procedure", "wiki", "unknown"]
    only_wiki = parse_buckets([{"name": "wiki", "description": "concepts"}])
    assert [b.to_dict() for b in only_wiki] == [
        {"name": "wiki", "description": "concepts"},
        DEFAULT_BUCKETS[-1].to_dict(),
    ]
    kept_first = parse_buckets([{"name": "unknown"}, {"name": "wiki", "description": "concepts"}])
    assert [b.name for b in kept_first] == ["unknown", "wiki"]
    assert [b.name for b in parse_buckets([])] == ["unknown"]


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("wiki", "'digest.buckets' must be a list"),
        ([{"name": "Wiki", "description": "x"}], r"'digest.buckets\[0\].name'"),
        ([{"name": "a b", "description": "x"}], r"'digest.buckets\[0\].name'"),
        ([{"name": "_x", "description": "x"}], r"'digest.buckets\[0\].name'"),
        ([{"description": "x"}], r"'digest.buckets\[0\].name'"),
        ([{"name": "wiki"}], r"'digest.buckets\[0\].description'"),
        ([{"name": "wiki", "description": "x"}, {"name": "wiki", "description": "y"}], "listed twice"),
        ([{"name": "wiki", "description": "x", "colour": "red"}], r"'digest.buckets\[0\].colour'"),
        (["wiki"], r"'digest.buckets\[0\]' must be a mapping"),
        ([{"name": "con", "description": "x"}], "reserved device name"),
    ],
)
def test_bad_bucket_config_names_the_key(raw, key):
    with pytest.raises(ValueError, match=key):
        parse_buckets(raw)


def test_buckets_page_lists_every_bucket_and_is_rewritten_only_when_it_changes(tmp_path: Path):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_layout()
    page = ws.root / "digest/_buckets.md"
    assert write_buckets_page(ws, DEFAULT_BUCKETS) == "digest/_buckets.md"
    text = page.read_text()
    assert text == buckets_page(DEFAULT_BUCKETS)
    for bucket in DEFAULT_BUCKETS:
        assert f"- `{bucket.name}`: {bucket.description}" in text
    before = page.stat().st_mtime_ns
    assert write_buckets_page(ws, DEFAULT_BUCKETS) is None
    assert page.stat().st_mtime_ns == before
    fewer = parse_buckets([{"name": "wiki", "description": "concepts"}])
    assert write_buckets_page(ws, fewer) == "digest/_buckets.md"
    assert page.read_text() == buckets_page(fewer) and "personal" not in page.read_text()


def test_a_buckets_page_reme_did_not_write_is_left_alone(tmp_path: Path):
    ws = Workspace(tmp_path / "ws")
    ws.ensure_layout()
    page = ws.root / "digest/_buckets.md"
    page.write_bytes(b"# my own bucket notes\n")
    assert write_buckets_page(ws, DEFAULT_BUCKETS) is None
    assert page.read_bytes() == b"# my own bucket notes\n"


# the Sources rule ------------------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws", {"daily": "days", "resource": "raw"})
    workspace.ensure_layout()
    (workspace.root / "days/2026-06-20").mkdir()
    (workspace.root / "days/2026-06-20/session.md").write_text("card\n")
    (workspace.root / "raw/2026-06-21").mkdir()
    (workspace.root / "raw/2026-06-21/postmortem.pdf").write_text("pdf\n")
    return workspace


def test_both_dataview_forms_in_the_sources_section_count(ws):
    line = "Body.\n\n## Sources\n- derived_from:: [[days/2026-06-20/session.md]] — the team chose weekly.\n"
    assert check_sources(ws, "n", line).target == "days/2026-06-20/session.md"
    inline = "## Sources\n- Confirmed in [derived_from:: [[raw/2026-06-21/postmortem.pdf]]].\n"
    assert check_sources(ws, "n", inline).target == "raw/2026-06-21/postmortem.pdf"
    short = "## Sources\n- derived_from:: [[days/2026-06-20/session]] — without the extension\n"
    assert check_sources(ws, "n", short).target == "days/2026-06-20/session"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("Body with derived_from:: [[days/2026-06-20/session.md]]\n", "no '## Sources' section"),
        ("## Sources\n- [[days/2026-06-20/session.md]] plain link\n", "holds no `derived_from::` link"),
        ("## Sources\n- is_a:: [[days/2026-06-20/session.md]]\n", "holds no `derived_from::` link"),
        ("## Sources\n- `derived_from:: [[days/2026-06-20/session.md]]`\n", "holds no `derived_from::` link"),
        ("## Sources\n```\nderived_from:: [[days/2026-06-20/session.md]]\n```\n", "holds no"),
        ("## Sources\n- derived_from:: [[days/2026-06-20/gone.md]]\n", "names an existing file"),
        ("## Sources\n- derived_from:: [[daily/2026-06-20/session.md]]\n", "names an existing file"),
        ("## Sources\n- derived_from:: [[days/../days/2026-06-20/session.md]]\n", "names an existing file"),
        ("## Sources\n- derived_from:: [[days/2026-06-20]]\n", "names an existing file"),
        ("## Sources\n- derived_from:: [[digest/wiki/other.md]]\n", "names an existing file"),
        (
            "## Sources\n\n## Notes\n- derived_from:: [[days/2026-06-20/session.md]]\n",
            "holds no `derived_from::` link",
        ),
        ("# Sources\n- derived_from:: [[days/2026-06-20/session.md]]\n", "no '## Sources' section"),
    ],
)
def test_a_body_without_an_existing_source_is_refused(ws, body, reason):
    with pytest.raises(DigestRuleError, match=reason):
        check_sources(ws, "digest/wiki/n.md", body)


def test_sources_section_runs_to_the_next_heading_of_its_level():
    body = (
        "## Sources\n### From chats\n- derived_from:: [[a.md]]\n## Later\n- derived_from:: [[b.md]]\n"
        "## Sources\n- [derived_from:: [[c.md]]]\n"
    )
    assert [link.target for link in source_links(body)] == ["a.md", "c.md"]

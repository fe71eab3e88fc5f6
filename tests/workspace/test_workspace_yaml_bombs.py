"""Front matter that YAML aliases would blow up (issue 11 item 1): refused, body still readable/searchable."""

from __future__ import annotations

import pytest

from reme.workspace import frontmatter
from reme.workspace.wikilinks import parse_links


def alias_bomb(levels: int) -> str:
    """Each level lists the previous one nine times: 9**levels values from a few hundred bytes."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels + 1):
        ref = f"*a{level - 1}"
        lines.append(f"a{level}: &a{level} [{', '.join([ref] * 9)}]")
    return "---\n" + "\n".join(lines) + "\n---\nBody about [[digest/wiki/solar.md]] and bombs.\n"


@pytest.mark.parametrize(
    "text",
    [
        alias_bomb(7),
        "---\na: &a [*a]\n---\nBody about [[digest/wiki/solar.md]] and bombs.\n",
        "---\na: &a {b: *a}\n---\nBody about [[digest/wiki/solar.md]] and bombs.\n",
        "---\nd: " + "[" * 200 + "]" * 200 + "\n---\nBody about [[digest/wiki/solar.md]] and bombs.\n",
    ],
    ids=["nine-to-the-seven", "self-list", "self-map", "deep"],
)
def test_over_limit_or_recursive_front_matter_is_an_error_and_the_body_stays(text: str) -> None:
    document = frontmatter.parse(text)
    assert document.error and "refused" in document.error
    assert document.metadata == {}
    assert document.body == text  # body = whole text, as for invalid YAML
    assert [link.target for link in parse_links(text)] == ["digest/wiki/solar.md"]
    with pytest.raises(frontmatter.FrontMatterError):
        frontmatter.update(text, {"name": "x"})


def test_a_few_ordinary_aliases_still_load() -> None:
    text = "---\nbase: &b {lang: en}\nuse: *b\ntags: &t [a, b]\nmore: *t\n---\nbody\n"
    document = frontmatter.parse(text)
    assert document.error is None
    assert document.metadata["use"] == {"lang": "en"} and document.metadata["more"] == ["a", "b"]


async def test_a_bomb_note_on_disk_is_indexed_by_its_body_and_stat_reports_the_error(app) -> None:
    note = app.workspace_dir / "daily/2026-06-01/bomb.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(alias_bomb(8), encoding="utf-8")
    before = note.read_bytes()
    hits = await app.run("search", query="bombs")
    assert hits.success and [hit["path"] for hit in hits.metadata["results"]] == ["daily/2026-06-01/bomb.md"]
    stat = await app.run("stat", path="daily/2026-06-01/bomb.md")
    assert stat.success and stat.metadata["front_matter"] == {}
    assert "refused" in stat.metadata["front_matter_error"]
    refused = await app.run("frontmatter_update", path="daily/2026-06-01/bomb.md", metadata={"name": "x"})
    assert not refused.success and "refused" in refused.answer
    assert note.read_bytes() == before


def test_metadata_beyond_the_read_limits_is_refused_before_any_yaml_is_written() -> None:
    deep: object = "x"
    for _ in range(70):
        deep = {"a": deep}
    wide: object = "x"
    for _ in range(20):
        wide = [wide, wide]  # a million values from shared lists
    with pytest.raises(frontmatter.FrontMatterError, match="nested more than 64"):
        frontmatter.check_metadata({"deep": deep})
    with pytest.raises(frontmatter.FrontMatterError, match="more than 10000 values"):
        frontmatter.check_metadata({"wide": wide})
    assert frontmatter.check_metadata({"tags": ["a"] * 100, "nested": {"x": {"y": [1, 2]}}})

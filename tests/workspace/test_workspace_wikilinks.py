"""The wikilink grammar of docs/spec.md §2.2: parsing, rendering and retargeting, with property-based checks."""

from __future__ import annotations

import json
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from reme.workspace import frontmatter
from reme.workspace.wikilinks import (
    Link,
    parse_body_links,
    parse_links,
    render,
    retarget,
    retarget_links,
    tree_mapping,
)

DOCUMENT = """---
name: Solar
source_conversation: '[[session/dialog/s1.jsonl]]'
related:
  - '[[digest/wiki/ev.md]]'
# a comment [[not/a/link.md]]
---
# Solar
Plain [[digest/wiki/solar.md]], anchored [[digest/wiki/cobalt.md#uses]], aliased [[digest/wiki/catl.md|CATL]].
![[resource/2026-06-01/report.md]]
industry:: [[digest/wiki/ev.md]]
Rivals: [competitor:: [[digest/wiki/byd.md]]] and `[[code/span.md]]`.
```python
x = "[[fenced/code.md]]"
```
| company | link |
|---|---|
| CATL | [[digest/wiki/catl.md\\|CATL]] |
"""


def test_every_form_of_the_grammar_is_parsed_with_its_line():
    links = parse_links(DOCUMENT)
    assert [
        (link.target, link.anchor, link.alias, link.embed, link.predicate, link.line) for link in links
    ] == [
        ("session/dialog/s1.jsonl", None, None, False, "source_conversation", 3),
        ("digest/wiki/ev.md", None, None, False, "related", 5),
        ("digest/wiki/solar.md", None, None, False, None, 9),
        ("digest/wiki/cobalt.md", "uses", None, False, None, 9),
        ("digest/wiki/catl.md", None, "CATL", False, None, 9),
        ("resource/2026-06-01/report.md", None, None, True, None, 10),
        ("digest/wiki/ev.md", None, None, False, "industry", 11),
        ("digest/wiki/byd.md", None, None, False, "competitor", 12),
        ("digest/wiki/catl.md", None, "CATL", False, None, 18),
    ]
    assert [link.in_front_matter for link in links[:3]] == [True, True, False]


def test_link_spans_cover_exactly_the_target_text():
    for link in parse_links(DOCUMENT):
        assert DOCUMENT[link.start : link.end] == link.target


def test_edge_identity_is_target_and_predicate():
    typed = parse_body_links("is_a:: [[A.md]]")[0]
    plain = parse_body_links("[[A.md]]")[0]
    assert typed.key == ("A.md", "is_a") and plain.key == ("A.md", None) and typed.key != plain.key


def test_targets_are_literal():
    assert [link.target for link in parse_body_links("[[digest/wiki/solar]] [[ spaced.md ]]")] == [
        "digest/wiki/solar",
        "spaced.md",
    ]


def test_code_is_not_links():
    text = "~~~\n[[a.md]]\n~~~\n````\n```\n[[b.md]]\n````\n``[[c.md]]`` `[[d.md]]` [[e.md]]\n"
    assert [link.target for link in parse_body_links(text)] == ["e.md"]


def test_unclosed_fence_hides_the_rest_and_lone_backtick_does_not():
    assert parse_body_links("```\n[[a.md]]\n") == []
    assert [link.target for link in parse_body_links("a ` lone [[b.md]]")] == ["b.md"]


def test_list_items_and_tasks_carry_line_predicates():
    text = "- due:: [[x.md]]\n- [ ] owner:: [[y.md]]\n> quote:: [[z.md]]\n1. step:: [[w.md]]\n"
    assert [(link.target, link.predicate) for link in parse_body_links(text)] == [
        ("x.md", "due"),
        ("y.md", "owner"),
        ("z.md", "quote"),
        ("w.md", "step"),
    ]


def test_inline_field_wins_over_the_line_predicate_and_ends_at_its_bracket():
    text = "topic:: [[a.md]] [rival:: [[b.md]] and [[c.md]]] then [[d.md]]"
    assert [(link.target, link.predicate) for link in parse_body_links(text)] == [
        ("a.md", "topic"),
        ("b.md", "rival"),
        ("c.md", "rival"),
        ("d.md", "topic"),
    ]


def test_broken_front_matter_is_parsed_as_body():
    text = "---\nkey: [unclosed\nlink: '[[a.md]]'\n---\n[[b.md]]\n"
    links = parse_links(text)
    assert [(link.target, link.predicate, link.in_front_matter) for link in links] == [
        ("a.md", None, False),
        ("b.md", None, False),
    ]


def test_retarget_keeps_anchor_alias_embed_predicate_and_everything_else():
    new = retarget(DOCUMENT, "digest/wiki/catl.md", "digest/companies/catl.md")
    assert new == DOCUMENT.replace("[[digest/wiki/catl.md", "[[digest/companies/catl.md")
    new = retarget(DOCUMENT, "digest/wiki/ev.md", "digest/wiki/electric vehicles.md")
    expected = DOCUMENT.replace("'[[digest/wiki/ev.md]]'", "'[[digest/wiki/electric vehicles.md]]'").replace(
        "industry:: [[digest/wiki/ev.md]]", "industry:: [[digest/wiki/electric vehicles.md]]"
    )
    assert new == expected
    assert retarget(DOCUMENT, "fenced/code.md", "x.md") == DOCUMENT
    assert retarget(DOCUMENT, "session/dialog/s1.jsonl", "session/dialog/s2.jsonl") == DOCUMENT.replace(
        "s1.jsonl", "s2.jsonl"
    )


def test_tree_mapping_moves_a_folder_and_its_contents_only():
    mapped = tree_mapping("digest/wiki", "digest/kb")
    text = "[[digest/wiki]] [[digest/wiki/a.md#x]] [[digest/wikipedia.md]]"
    assert retarget_links(text, mapped) == ("[[digest/kb]] [[digest/kb/a.md#x]] [[digest/wikipedia.md]]", 2)


def test_render_forms():
    assert render("a.md") == "[[a.md]]"
    assert render("a.md", anchor="h", alias="A", embed=True) == "![[a.md#h|A]]"
    assert render("a.md", predicate="is_a") == "is_a:: [[a.md]]"


# property-based ------------------------------------------------------------------------------------

SAFE = string.ascii_letters + string.digits + "/._- 光伏éü"
targets = st.text(alphabet=SAFE, min_size=1, max_size=30).filter(lambda s: s.strip() == s and s != "")
anchors = st.none() | st.text(alphabet=SAFE, min_size=1, max_size=12).filter(
    lambda s: s.strip() == s and s != ""
)
aliases = st.none() | st.text(alphabet=SAFE + "#|", min_size=1, max_size=12)
predicates = st.none() | st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,10}", fullmatch=True)
links = st.builds(
    Link, target=targets, anchor=anchors, alias=aliases, embed=st.booleans(), predicate=predicates
)
filler = st.text(
    alphabet=string.ascii_letters + " ,.?()-" + "光", max_size=40
)  # no "!": it would make an embed


@settings(max_examples=200, deadline=None, derandomize=True)
@given(links)
def test_parse_of_render_round_trips(link: Link):
    text = render(link.target, link.anchor, link.alias, link.embed, link.predicate)
    assert parse_body_links(text) == [link]
    assert parse_links(text) == [link]


def _document(parts: list[tuple[str, Link, str]], fenced: str) -> tuple[str, list[Link]]:
    lines, expected = [], []
    for number, (before, link, after) in enumerate(parts, start=1):
        rendered = render(link.target, link.anchor, link.alias, link.embed)
        if link.predicate:
            lines.append(f"{link.predicate}:: {before}{rendered}{after}")
        else:
            lines.append(f"{before}{rendered}{after}")
        expected.append(Link(link.target, link.anchor, link.alias, link.embed, link.predicate, number))
    lines.append("```")
    lines.append(fenced)
    lines.append("```")
    return "\n".join(lines) + "\n", expected


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(filler, links, filler), max_size=8), filler)
def test_documents_parse_to_their_links(parts, fenced):
    text, expected = _document(parts, f"[[in/code.md]] {fenced}")
    assert parse_links(text) == expected


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(filler, links, filler), max_size=8),
    st.sampled_from(["a.md", "digest/x.md", "光伏.md"]),
    targets,
)
def test_retarget_changes_only_the_matching_targets(parts, old, new):
    parts = [
        (before, Link(old, *link_fields(link)) if i % 2 else link, after)
        for i, (before, link, after) in enumerate(parts)
    ]
    text, expected = _document(parts, f"[[{old}]] stays")
    changed = retarget(text, old, new)
    assert parse_links(changed) == [
        Link(new if link.target == old else link.target, *link_fields(link), line=link.line)
        for link in expected
    ]
    assert changed.endswith(f"```\n[[{old}]] stays\n```\n")
    if new not in {link.target for link in expected}:
        assert retarget(changed, new, old) == text


def link_fields(link: Link) -> tuple:
    return (link.anchor, link.alias, link.embed, link.predicate)


quoted_targets = st.text(alphabet=SAFE + "'\"\\", min_size=1, max_size=20).filter(
    lambda s: s.strip() == s and s != "" and not s.endswith("\\")
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(quoted_targets, quoted_targets)
def test_front_matter_links_keep_valid_yaml_through_quotes(old, new):
    double_quoted = json.dumps(f"[[{old}#a]]", ensure_ascii=False)
    head = frontmatter.update("", {"src": f"[[{old}]]", "list": [f"[[{old}|A]]"]})
    text = head.replace("\n---\n", f"\nboth: {double_quoted}\n---\n", 1) + f"body [[{old}]]\n"
    assert [(link.target, link.predicate) for link in parse_links(text)] == [
        (old, "src"),
        (old, "list"),
        (old, "both"),
        (old, None),
    ]
    changed = retarget(text, old, new)
    document = frontmatter.parse(changed)
    assert document.metadata == {"src": f"[[{new}]]", "list": [f"[[{new}|A]]"], "both": f"[[{new}#a]]"}
    assert document.body == f"body [[{new}]]\n"

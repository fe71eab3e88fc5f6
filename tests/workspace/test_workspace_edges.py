"""E-1 edge conservation (docs/spec.md §12.3): the checker over every wikilink form, with a property test."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reme.workspace.edges import ConservationViolation, check_conserved, edges, missing_edges


def test_edge_identity_is_target_and_predicate_as_written():
    old = "[[digest/wiki/a.md]]\nis_a:: [[digest/wiki/b.md]]\n"
    assert missing_edges(old, "is_a:: [[digest/wiki/a.md]]\n[[digest/wiki/b.md]]\n") == [
        {"target": "digest/wiki/a.md", "predicate": None},
        {"target": "digest/wiki/b.md", "predicate": "is_a"},
    ]
    assert missing_edges("[[digest/wiki/a]]", "[[digest/wiki/a.md]]") == [
        {"target": "digest/wiki/a", "predicate": None}
    ]


def test_anchor_alias_embed_and_position_are_not_identity():
    old = "- derived_from:: [[daily/d.md]] — why\n[[digest/wiki/a.md#uses|A]] ![[resource/r.md]]\n"
    new = "![[digest/wiki/a.md#other]] [[resource/r.md|R]]\n\n## Sources\n[derived_from:: [[daily/d.md]]]\n"
    assert missing_edges(old, new) == []


def test_a_link_moved_into_code_is_lost():
    old = "See [[digest/wiki/a.md]].\n"
    assert missing_edges(old, "See `[[digest/wiki/a.md]]`.\n") == [
        {"target": "digest/wiki/a.md", "predicate": None}
    ]
    assert missing_edges(old, "```\n[[digest/wiki/a.md]]\n```\n") == [
        {"target": "digest/wiki/a.md", "predicate": None}
    ]


def test_union_form_checks_against_all_new_bodies():
    old = "[[x.md]] [[y.md]]\np:: [[z.md]]\n"
    assert missing_edges(old, "[[x.md]]", "[[y.md]]\np:: [[z.md]]") == []
    assert missing_edges(old, "[[x.md]]", "[[z.md]]") == [
        {"target": "y.md", "predicate": None},
        {"target": "z.md", "predicate": "p"},
    ]
    assert missing_edges(old) == [
        {"target": "x.md", "predicate": None},
        {"target": "y.md", "predicate": None},
        {"target": "z.md", "predicate": "p"},
    ]


def test_check_conserved_names_the_missing_edges():
    with pytest.raises(ConservationViolation) as caught:
        check_conserved("digest/wiki/n.md", "derived_from:: [[daily/d.md]]\n[[a.md]]\n", "[[a.md]]\n")
    assert caught.value.metadata == {
        "path": "digest/wiki/n.md",
        "missing_edges": [{"target": "daily/d.md", "predicate": "derived_from"}],
    }
    assert "derived_from:: [[daily/d.md]]" in caught.value.message
    check_conserved("digest/wiki/n.md", "[[a.md]]", "[[a.md]] [[b.md]]")


# property-based ------------------------------------------------------------------------------------

TARGET_CHARS = string.ascii_lowercase + string.digits + "/._-光"
targets = st.text(alphabet=TARGET_CHARS, min_size=1, max_size=12).map(lambda s: f"digest/{s}.md")
predicates = st.none() | st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,8}", fullmatch=True)
edge_sets = st.lists(st.tuples(targets, predicates), max_size=8, unique=True)
FORMS = ("plain", "anchor", "alias", "embed", "line", "inline", "list_line")
filler = st.text(alphabet=string.ascii_letters + " ,.()" + "光", max_size=20)


def _render(target: str, predicate: str | None, form: str, words: str) -> str:
    """One line holding the edge in a random form (a predicate forces a typed form)."""
    link = {
        "anchor": f"[[{target}#part]]",
        "alias": f"[[{target}|shown]]",
        "embed": f"![[{target}]]",
    }.get(form, f"[[{target}]]")
    if predicate is None:
        return f"{words} {link}"
    if form == "inline":
        return f"{words} [{predicate}:: {link}] more"
    if form == "list_line":
        return f"- {predicate}:: {link} — {words}"
    return f"{predicate}:: {link} {words}"


@st.composite
def documents(draw, chosen: list[tuple[str, str | None]]) -> str:
    """A body holding exactly these edges, plus links hidden in code spans and fences (not edges)."""
    lines = []
    for target, predicate in chosen:
        lines.append(_render(target, predicate, draw(st.sampled_from(FORMS)), draw(filler)))
    decoys = draw(st.lists(st.tuples(targets, predicates), max_size=3))
    for target, predicate in decoys:
        typed = f"{predicate}:: " if predicate else ""
        if draw(st.booleans()):
            lines.append(f"{draw(filler)} `{typed}[[{target}]]` {draw(filler)}")
        else:
            lines.append(f"```\n{typed}[[{target}]]\n```")  # one block: shuffled as a whole
    order = draw(st.permutations(range(len(lines))))
    return "\n".join(lines[i] for i in order) + "\n"


@st.composite
def old_and_new(draw):
    old_edges = draw(edge_sets)
    kept = [edge for edge in old_edges if draw(st.booleans())]
    added = [edge for edge in draw(edge_sets) if edge not in old_edges]
    # a dropped edge whose target stays under another predicate is still missing
    retyped = [(t, None if p else "is_a") for t, p in old_edges if (t, p) not in kept and draw(st.booleans())]
    added += [edge for edge in retyped if edge not in old_edges and edge not in added]
    return old_edges, kept + added, draw(documents(old_edges)), draw(documents(kept + added))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(old_and_new())
def test_missing_edges_are_exactly_the_old_edges_the_new_body_lacks(case):
    old_edges, new_edges, old, new = case
    assert set(edges(old)) == set(old_edges) and set(edges(new)) == set(new_edges)
    missing = missing_edges(old, new)
    assert {(m["target"], m["predicate"]) for m in missing} == set(old_edges) - set(new_edges)
    assert len(missing) == len({(m["target"], m["predicate"]) for m in missing})
    assert missing_edges(old, old) == [] and missing_edges(new, new + old) == []


@settings(max_examples=200, deadline=None, derandomize=True)
@given(edge_sets, st.data())
def test_union_of_a_split_keeps_every_edge_iff_each_is_somewhere(old_edges, data):
    parts = [[edge for edge in old_edges if data.draw(st.booleans())] for _ in range(3)]
    old = data.draw(documents(old_edges))
    bodies = [data.draw(documents(part)) for part in parts]
    union = {edge for part in parts for edge in part}
    missing = missing_edges(old, *bodies)
    assert {(m["target"], m["predicate"]) for m in missing} == set(old_edges) - union

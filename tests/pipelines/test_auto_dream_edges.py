"""Property test of the edge-conservation checker dream relies on (E-1): random link sets in every form."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reme.workspace.edges import missing_edges

TARGETS = (
    "digest/wiki/solar.md",
    "digest/wiki/电池.md",
    "daily/2026-06-20/s.md",
    "notes/plain",
    "resource/r.pdf",
)
PREDICATES = (None, "derived_from", "is_a", "competitor_2")
Edge = tuple[str, str | None]


@st.composite
def link(draw: st.DrawFn, edge: Edge) -> str:
    """One line holding `edge` in a form the parser reads (anchor, alias and embed are not identity)."""
    target, predicate = edge
    inner = draw(
        st.sampled_from([f"[[{target}]]", f"[[{target}#part]]", f"[[{target}|Shown]]", f"![[{target}]]"])
    )
    if predicate is None:
        return draw(st.sampled_from([f"- see {inner}", f"{inner} here", f"> quoted {inner}"]))
    return draw(
        st.sampled_from(
            [f"- {predicate}:: {inner}", f"{predicate}:: {inner}", f"text [{predicate}:: {inner}] more"]
        )
    )


def decoy(edge: Edge) -> str:
    """The edge's text where it is not a link: an inline code span and a fenced block."""
    return f"`[[{edge[0]}]]` and\n\n```\n{edge[1] or 'x'}:: [[{edge[0]}]]\n```\n"


edges = st.lists(
    st.tuples(st.sampled_from(TARGETS), st.sampled_from(PREDICATES)), min_size=1, max_size=8, unique=True
)


@given(st.data(), edges)
def test_missing_edges_are_exactly_the_dropped_identities(data: st.DataObject, old_edges: list[Edge]) -> None:
    kept = data.draw(st.lists(st.sampled_from(old_edges), unique=True))
    extra = data.draw(st.lists(st.tuples(st.sampled_from(TARGETS), st.sampled_from(PREDICATES)), max_size=3))
    old = "# Node\n\n" + "\n\n".join(data.draw(link(edge)) for edge in old_edges) + "\n"
    dropped = [edge for edge in old_edges if edge not in kept]
    new = "# Node\n\n" + "\n\n".join(
        [data.draw(link(edge)) for edge in [*kept, *extra]] + [decoy(edge) for edge in dropped]
    )
    expected = [edge for edge in dropped if edge not in extra]
    assert [(e["target"], e["predicate"]) for e in missing_edges(old, new)] == expected
    assert missing_edges(old, old) == []

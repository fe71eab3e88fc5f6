"""Link parsing a note cannot fool or stall (docs/spec.md §2.2, E-1).

An Obsidian comment `%% … %%` hides its text from every reader just as an HTML comment does, so a
link inside one is no edge: an edit that moves a visible link into it loses that edge (the dream
run that tries it: test_adversarial_hidden_edges.py). And no shape
of line (thousands of `[key:: …]` or `[valid_from:: …]` fields, runs of brackets, backticks, comment
marks or backslashes) makes parsing more than linear, so a hostile note cannot stall indexing, a
digest write or a dream run. The size cases carry a timeout far above what they need; the field
cases took minutes each before the fields were read in one pass.
"""

from __future__ import annotations

import pytest

from reme.workspace.edges import missing_edges
from reme.workspace.validity import statements
from reme.workspace.wikilinks import parse_body_links, parse_links

SOLAR = "digest/wiki/solar.md"
OLD = f"see [[{SOLAR}]] now\n"


@pytest.mark.parametrize(
    "new",
    [
        f"see %% [[{SOLAR}]] %% now\n",
        f"see now %%\nkept for the graph: [[{SOLAR}]]\n%%\n",  # a block comment
        f"see now %% runs on\nover lines [[{SOLAR}]] %% and ends\n",
        f"see now\n%% never closed\n\n[[{SOLAR}]]\n",  # Obsidian's editor hides the rest of the note
        f"see now %%%[[{SOLAR}]]%%\n",  # `%%%x%%` hides `%x`
        f"see now %% ` %% %% ` [[{SOLAR}]] %%\n",  # the first comment's backtick opens no code span
        f"see now %% --> [[{SOLAR}]] %%\n",  # inside `%%`, `-->` is comment text...
        f"see now <!-- %% --> <!-- [[{SOLAR}]] %% -->\n",  # ...and inside `<!--`, `%%` is
        f"see now \\%% visible %% [[{SOLAR}]] %%\n",  # an escaped `%%` opens nothing: the next one does
        f"see [[{SOLAR}|the sun %%]] %%\n",  # a link cut by a comment
        f"see now\n%%\n```\n[[{SOLAR}]]\n```\n%%\n",  # fenced code inside a block comment
        f"- related:: see %% [[{SOLAR}]] %%\n",
    ],
)
def test_a_link_moved_into_an_obsidian_comment_is_a_lost_edge(new: str) -> None:
    assert missing_edges(OLD, new) == [{"target": SOLAR, "predicate": None}]


@pytest.mark.parametrize(
    "new",
    [
        f"see %% a note %% [[{SOLAR}]] now\n",
        f"%%\nhidden\n%% see [[{SOLAR}]] now\n",
        f"%%\nhidden\n%%\nsee [[{SOLAR}]] now\n",
        f"see `%%` [[{SOLAR}]] `%%`\n",  # in code spans `%%` is text, not a comment
        f"see \\%% [[{SOLAR}]] \\%%\n",  # escaped, as in Obsidian
        f"see %%%% [[{SOLAR}]]\n",  # an empty comment
        f"see 50% [[{SOLAR}]] 100%\n",  # a single percent sign is text
        f"```\n%%\n```\nsee [[{SOLAR}]] now\n",  # a `%%` inside a fence opens nothing
        f"see [[{SOLAR}]] now %% [[{SOLAR}]] %%\n",
        f"<!-- %% -->\nsee [[{SOLAR}]] now\n",  # a `%%` inside an HTML comment opens nothing
        f"%%\n```\n%%\nsee [[{SOLAR}]] now\n",  # a fence inside a comment is comment text
    ],
)
def test_a_visible_link_beside_an_obsidian_comment_is_still_an_edge(new: str) -> None:
    assert missing_edges(OLD, new) == []


def test_the_link_graph_leaves_out_links_in_obsidian_comments_and_keeps_typed_ones_around_them() -> None:
    text = (
        "---\nname: Energy\n---\n# Energy\n\n%% related:: [[digest/wiki/wind.md]] %%\n"
        "- related:: [[digest/wiki/solar.md]] %% [[digest/wiki/coal.md]] %%\n"
        "%%\n- [[digest/wiki/gas.md]]\n%%\n[source:: [[daily/2026-06-20.md]]]\n"
    )
    assert [(link.target, link.predicate) for link in parse_links(text)] == [
        ("digest/wiki/solar.md", "related"),
        ("daily/2026-06-20.md", "source"),
    ]


def _typed(text: str) -> list[tuple[str, str | None]]:
    return [(link.target, link.predicate) for link in parse_links(text)]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[a:: [b:: [[x]]] [[y]]] [[z]]", [("x", "a"), ("y", "a"), ("z", None)]),  # the outer field wins
        ("[a:: [[x]] [b:: [[y]]]", [("x", None), ("y", "b")]),  # an unclosed field is no field
        ("[a:: [[[x]]]]", [("x", "a")]),  # `[`, a whole link, its `]`, then the field's `]`
        ("[a:: [[[x]]]", [("x", None)]),  # ...without that last `]` the field never closes
        ("`[a::` [[x]]]", [("x", None)]),  # a field opened in code is none
        ("[[a:: [[x]]]", [("x", None)]),  # `[[a::` opens no field
        ("k:: [[x]] [a:: [[y]]] [[z]]", [("x", "k"), ("y", "a"), ("z", "k")]),
    ],
)
def test_inline_fields_pair_their_brackets(line: str, expected: list[tuple[str, str | None]]) -> None:
    assert _typed(line + "\n") == expected


BIG = 240_000


def _run(unit: str, size: int = BIG, sep: str = "") -> str:
    """`unit` repeated to about `size` characters, an even number of times (so comment marks pair)."""
    count = size // len(unit + sep)
    return (unit + sep) * (count - count % 2)


@pytest.mark.timeout(60)  # ~0.2 s here; the old parser compared every field with every other: ~5 min
def test_a_megabyte_line_of_inline_fields_parses_in_one_pass() -> None:
    assert _typed(f"{_run('[key:: v] ', 1_000_000)}[rel:: [[{SOLAR}]]]\n") == [(SOLAR, "rel")]
    linked = _run(f"[key:: [[{SOLAR}]]] ", 1_000_000)
    assert missing_edges(linked, linked.replace("key", "rel")) == [{"target": SOLAR, "predicate": "key"}]


@pytest.mark.timeout(60)  # ~0.1 s here; the old parser rescanned the rest of the line per field: ~20 min
@pytest.mark.parametrize("unit", ["[key:: ", "[a:: [b:: ", "[key:: [[x]] ", "[key:: %% "])
def test_a_line_of_unclosed_inline_fields_parses_in_one_pass(unit: str) -> None:
    assert _typed(f"{_run(unit)} [[{SOLAR}]]\n")[-1] == (SOLAR, None)


@pytest.mark.timeout(60)  # each ~0.1 s here
@pytest.mark.parametrize(
    "unit",
    [
        "[[",
        "]]",
        "[",
        "]",
        "`",
        "`` ",
        "\\",
        "<!--",
        "-->",
        "%%",
        "%% [[x]] ",
        "\\%",
        "![[x]]",
        "[[x|",
        "> ",
        "1",
    ],
)
@pytest.mark.parametrize("sep", ["", "\n"], ids=["one line", "many lines"])
def test_runs_of_link_syntax_parse_in_linear_time(unit: str, sep: str) -> None:
    keys = [link.key for link in parse_body_links(f"k:: {_run(unit, sep=sep)}\n[[{SOLAR}]]\n")]
    assert ((SOLAR, None) in keys) is (unit != "<!--")  # only an unclosed `<!--` hides the last line


@pytest.mark.timeout(60)  # microseconds here; the old field pattern backtracked cubically: ~4 min
def test_a_validity_field_left_open_over_blanks_does_not_stall_the_statements_after_it() -> None:
    text = "[valid_to::" + " " * 10_000 + "\n- the price is 4 € [valid_from::  2026-03 \t]\n"
    [statement] = statements(text)
    assert (statement.line, statement.valid_from, statement.claim) == (2, "2026-03", "the price is 4 €")


@pytest.mark.timeout(60)  # ~0.1 s here; the old parser rescanned the rest of the line per field: ~1.5 min
def test_a_line_of_validity_fields_parses_in_linear_time() -> None:
    unclosed = _run("[valid_from:: 2026 ")
    coded = _run("[valid_to:: 2026] `x` ")
    assert statements(f"{unclosed}\n{coded}\n")[0].line == 2

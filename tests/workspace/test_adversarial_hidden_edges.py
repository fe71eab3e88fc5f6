"""A link no reader sees is no edge (docs/spec.md §2.2, E-1): inside an HTML comment, as inside a code
span, `[[x]]` is hidden text, so an edit that moves a visible link into a comment loses that edge and
edge conservation refuses it. Comments and code spans are read left to right as Markdown reads them,
so neither can be used to fake where the other starts or ends."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    NODE,
    Pipes,
    body,
    catalog,
    extract_run,
    integrate_run,
    put,
    report,
    unit,
)

from reme.workspace.edges import missing_edges
from reme.workspace.wikilinks import parse_links

SOLAR = "digest/wiki/solar.md"
OLD = f"see [[{SOLAR}]] now\n"


@pytest.mark.parametrize(
    "new",
    [
        f"see <!-- [[{SOLAR}]] --> now\n",
        f"see now <!--\nkept for the graph: [[{SOLAR}]]\n-->\n",
        f"see now\n<!-- never closed\n\n[[{SOLAR}]]\n",
        f"see now <!-- ` --> <!-- ` [[{SOLAR}]] -->\n",  # the first comment's backtick opens no code span
        f"see now \\` <!-- ` [[{SOLAR}]] -->\n",  # an escaped backtick opens no code span either
        f"see [[{SOLAR}|the sun<!--]] -->\n",  # a link cut by a comment
    ],
)
def test_a_link_moved_into_an_html_comment_is_a_lost_edge(new: str) -> None:
    assert missing_edges(OLD, new) == [{"target": SOLAR, "predicate": None}]


@pytest.mark.parametrize(
    "new",
    [
        f"see <!-- a note --> [[{SOLAR}]] now\n",
        f"<!--\nhidden\n--> see [[{SOLAR}]] now\n",
        f"see `<!--` [[{SOLAR}]] `-->`\n",  # in code spans `<!--` is text, not a comment
        f"see \\<!-- [[{SOLAR}]] -->\n",  # an escaped `<` opens no comment
        f"see <!--> [[{SOLAR}]] -->\n",  # `<!-->` is an empty comment, as in HTML
        f"```\n<!--\n```\nsee [[{SOLAR}]] now\n",  # a `<!--` inside a fence opens nothing
        f"<!--\n```\n-->\nsee [[{SOLAR}]] now\n",  # a fence inside a comment is comment text
        f"see [[{SOLAR}]] now <!-- [[{SOLAR}]] -->\n",
    ],
)
def test_a_visible_link_beside_a_comment_is_still_an_edge(new: str) -> None:
    assert missing_edges(OLD, new) == []


def test_the_link_graph_leaves_out_commented_links_and_keeps_typed_ones_around_them() -> None:
    text = (
        "---\nname: Energy\n---\n# Energy\n\n<!-- related:: [[digest/wiki/wind.md]] -->\n"
        "- related:: [[digest/wiki/solar.md]] <!-- [[digest/wiki/coal.md]] -->\n"
        "<!-- notes:auto -->\n- [[daily/2026-06-20.md]]\n<!-- /notes:auto -->\n"
    )
    assert [(link.target, link.predicate) for link in parse_links(text)] == [
        ("digest/wiki/solar.md", "related"),
        ("daily/2026-06-20.md", None),
    ]


OTHER = "digest/wiki/outage-review.md"
OLD_CARD = "daily/2026-06-10/outage.md"


@pytest.mark.parametrize(("opens", "closes"), [("<!--", "-->"), ("%%", "%%")], ids=["html", "obsidian"])
async def test_a_dream_edit_that_hides_a_link_in_a_comment_is_refused_and_the_node_kept(
    tmp_path: Path, opens: str, closes: str
) -> None:
    hide = {
        "tool": "digest_edit",
        "args": {
            "path": NODE,
            "old": f", see [[{OTHER}]].",
            "new": f". Also [derived_from:: [[{CARD}]]]. {opens} see [[{OTHER}]] {closes}",
        },
    }
    turns = [{"tool": "read", "args": {"path": NODE}}, hide, hide, report("REFINE")]
    app = Pipes(tmp_path / "ws", [extract_run(unit()), integrate_run(turns)])
    put(app.workspace_dir, OLD_CARD, "# Outage\n\nWe had an outage.\n")
    await app.write_node(NODE, body(OLD_CARD, text=f"The team releases weekly, see [[{OTHER}]]."), "Cadence.")
    put(app.workspace_dir, CARD, CARD_TEXT)
    node = app.workspace_dir / NODE
    before = node.read_bytes()

    response = await app.dream()

    assert not response.success
    [failure] = response.metadata["failed_units"]
    assert failure["error"].startswith("ConservationViolation: ")
    assert [v["missing_edges"] for v in response.metadata["violations"]] == [
        [{"target": OTHER, "predicate": None}]
    ] * 2
    assert node.read_bytes() == before and CARD not in catalog(app.workspace_dir)

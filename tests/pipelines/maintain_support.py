"""Helpers of the digest upkeep tests: an overloaded node (nine sections) and scripted splits of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.pipelines.dream_support import put

PARENT = "digest/wiki/release-practice.md"
OTHER = "digest/wiki/outage-review.md"
CARDS = [f"daily/2026-06-{day}/release.md" for day in (18, 19, 20)]
CHILDREN = [f"digest/wiki/release-{name}.md" for name in ("cadence", "rollback", "hotfix")]
SECTIONS = [
    f"## Rule {i}\n\nRule {i} of shipping, see [[{OTHER if i == 1 else CARDS[(i - 1) // 3]}]] "
    f"and [[digest/wiki/rule-{i}-notes.md]].\n"
    for i in range(1, 10)
]
SOURCES = "## Sources\n" + "".join(
    f"- derived_from:: [[{card}]] — rules {n * 3 + 1}-{n * 3 + 3}.\n" for n, card in enumerate(CARDS)
)
PARENT_BODY = "# Release practice\n\nHow the team ships.\n\n" + "\n".join(SECTIONS) + "\n" + SOURCES
OVERVIEW = "## Parts\n\n" + "".join(f"- [[{child}]] — three of the rules.\n" for child in CHILDREN) + "\n"


def child_body(k: int, *, drop_last_link: bool = False) -> str:
    sections = "\n".join(SECTIONS[3 * k : 3 * k + 3])
    if drop_last_link:
        sections = sections.replace(f" and [[digest/wiki/rule-{3 * k + 3}-notes.md]]", "")
    return f"# Part {k + 1}\n\n{sections}\n## Sources\n- derived_from:: [[{CARDS[k]}]] — these rules.\n"


def setup_digest(ws: Path) -> Path:
    """The overloaded PARENT (plus OTHER, which links it) on disk; the parent's path."""
    for card in CARDS:
        put(ws, card, "# Release\n\nWe talked about shipping rules.\n")
    put(
        ws,
        OTHER,
        f"---\nname: outage-review\ndescription: The outage.\n---\n# Outage review\n\nSee [[{PARENT}]].\n\n"
        f"## Sources\n- derived_from:: [[{CARDS[0]}]] — the outage.\n",
    )
    return put(ws, PARENT, f"---\nname: release-practice\ndescription: How we ship.\n---\n{PARENT_BODY}")


def overview_edit(extra: str = "") -> dict[str, Any]:
    return {
        "tool": "digest_edit",
        "args": {"path": PARENT, "old": "\n".join(SECTIONS) + "\n", "new": OVERVIEW + extra},
    }


def split_turns(
    *, drop_link: bool = False, children: list[str] | None = None, retry: str | None = None
) -> list[dict[str, Any]]:
    """Write the three children, turn the parent into an overview, report the split.

    With `retry`, the overview edit is made twice, the second time with `retry` added to it.
    """
    turns: list[dict[str, Any]] = [
        {
            "tool": "digest_write",
            "args": {
                "path": child,
                "content": child_body(k, drop_last_link=drop_link and k == 2),
                "description": f"Shipping rules, part {k + 1}.",
            },
        }
        for k, child in enumerate(CHILDREN)
    ]
    turns.append(overview_edit())
    if retry is not None:
        turns.append(overview_edit(retry))
    turns.append(report(children if children is not None else CHILDREN))
    return turns


def report(
    children: list[str], split: bool = True, reason: str = "three distinct groups of rules"
) -> dict[str, Any]:
    return {"output": {"split": split, "children": children, "reason": reason}}


def split_run(turns: list[dict[str, Any]]) -> dict[str, Any]:
    return {"run": "split:*", "turns": turns}

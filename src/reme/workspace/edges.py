"""Edge conservation of the digest (docs/spec.md §12.3 E-1, 12.5 E-2): an update may add links, never lose one.

An edge is `(target, predicate)` as the one wikilink parser reads it (targets compared as written;
anchor, alias and embed flag are not part of the identity; code spans, fences, HTML comments,
Obsidian `%% … %%` comments and escaped `\\[[x]]` hold no links, so an edit that turns a link into
any of them, hiding it from the reader, loses it).
`missing_edges(old, new)` lists the edges of `old` that `new` lacks; with several new bodies it
checks against their union, which is what a split into a parent and its children must keep (E-2).
"""

from __future__ import annotations

from reme.errors import ReMeError
from reme.workspace.wikilinks import parse_body_links

Edge = tuple[str, str | None]


class ConservationViolation(ReMeError):
    """An update would drop edges; `metadata.missing_edges` lists them as `{target, predicate}`."""


def edges(body: str) -> list[Edge]:
    """The distinct edges of a Markdown body, in order of first appearance."""
    return list(dict.fromkeys(link.key for link in parse_body_links(body)))


def missing_edges(old_body: str, *new_bodies: str) -> list[dict[str, str | None]]:
    """Edges of `old_body` found in none of `new_bodies`, as `{target, predicate}`, in old order."""
    kept: set[Edge] = set()
    for body in new_bodies:
        kept.update(edges(body))
    return [
        {"target": target, "predicate": predicate}
        for target, predicate in edges(old_body)
        if (target, predicate) not in kept
    ]


def describe(edge: dict[str, str | None]) -> str:
    """An edge as the link text that would restore it: `derived_from:: [[daily/x.md]]` or `[[x.md]]`."""
    link = f"[[{edge['target']}]]"
    return f"{edge['predicate']}:: {link}" if edge["predicate"] else link


def check_conserved(path: str, old_body: str, *new_bodies: str) -> None:
    """Raise `ConservationViolation` naming every edge of `old_body` the new bodies lose."""
    missing = missing_edges(old_body, *new_bodies)
    if missing:
        shown = ", ".join(describe(edge) for edge in missing[:20])
        more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
        raise ConservationViolation(
            f"the change to {path!r} would drop {len(missing)} link(s): {shown}{more}. Links are part of "
            "the node (E-1): keep every one of them in the new text; nothing was changed",
            {"path": path, "missing_edges": missing},
        )

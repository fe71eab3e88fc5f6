"""How a wikilink target finds its file, the way Obsidian does (docs/spec.md §2.2).

Targets stay as written; a target naming no existing file resolves to `<target>.md`, else to the
one known file whose path ends with `/<target>` or `/<target>.md`; several or none → unresolved
(the edge is pending). The graph, link expansion, `stat`, `delete` and `move` all resolve through
`resolve`, each giving its own view of which files exist; `move` keeps a short link short with
`short_form`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

MD = ".md"

Exists = Callable[[str], bool]
EndingWith = Callable[[str], Iterable[str]]  # suffix -> known files whose path ends with "/" + suffix


def resolve(target: str, exists: Exists, ending_with: EndingWith) -> str | None:
    """The file `target` names: itself, `<target>.md`, or the unique file ending like it."""
    if exists(target):
        return target
    if not target.endswith(MD) and exists(target + MD):
        return target + MD
    found = set(ending_with(target))
    if not target.endswith(MD):
        found.update(ending_with(target + MD))
    return found.pop() if len(found) == 1 else None


def spellings(path: str) -> list[str]:
    """Every target that could resolve to `path`: its trailing segments, with and without `.md`."""
    parts = path.split("/")
    forms = ["/".join(parts[i:]) for i in range(len(parts))]
    if path.endswith(MD):
        forms += [form[: -len(MD)] for form in forms if len(form) > len(MD)]
    return forms


def short_form(written: str, old: str, new: str) -> str:
    """`new` spelled like `written` spelled `old`: as many trailing segments, `.md` kept or dropped."""
    dropped = old.endswith(MD) and not written.endswith(MD)
    if dropped and new.endswith(MD):
        new = new[: -len(MD)]
    return "/".join(new.split("/")[-(written.count("/") + 1) :])


def ends_with(path: str, suffix: str) -> bool:
    return path.endswith("/" + suffix)

"""How a wikilink target finds its file, the way Obsidian does (docs/spec.md §2.2).

Targets stay as written; a target naming no existing file resolves to `<target>.md`, else to the
one known file whose path ends with `/<target>` or `/<target>.md`; several or none → unresolved
(the edge is pending). The graph, link expansion, `stat`, `delete` and `move` all resolve through
`resolve`, each giving its own view of which files exist; `move` keeps a short link short with
`short_form`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable

MD = ".md"

Exists = Callable[[str], bool]
EndingWith = Callable[[str], Iterable[str]]  # suffix -> known files whose path ends with "/" + suffix


def resolve(target: str, exists: Exists, ending_with: EndingWith) -> str | None:
    """The file `target` names: itself, `<target>.md`, or the unique file ending like it; a target
    that is no plain workspace-relative path (`/etc/x`, `../x`, `a//b`, `a/`) names none, whatever
    `exists` says, so link text can never lead outside the workspace."""
    if not _plain(target):
        return None
    forms = _normal_forms(target)
    for form in forms:
        if exists(form):
            return form
    if not target.endswith(MD):
        for form in forms:
            if exists(form + MD):
                return form + MD
    found: set[str] = set()
    for form in forms:
        found.update(ending_with(form))
        if not target.endswith(MD):
            found.update(ending_with(form + MD))
    return found.pop() if len(found) == 1 else None


def _plain(target: str) -> bool:
    return not target.startswith("/") and all(part not in ("", ".", "..") for part in target.split("/"))


def _normal_forms(text: str) -> list[str]:
    """`text` as written, then composed (NFC) and decomposed (NFD) where they differ: `café` typed on
    one system and the file name `café` stored on another are one name, as Obsidian reads them."""
    return list(dict.fromkeys([text, unicodedata.normalize("NFC", text), unicodedata.normalize("NFD", text)]))


def spellings(path: str) -> list[str]:
    """Every target that could resolve to `path`: its trailing segments, with and without `.md`, as
    stored and in either Unicode normal form."""
    parts = path.split("/")
    forms = ["/".join(parts[i:]) for i in range(len(parts))]
    if path.endswith(MD):
        forms += [form[: -len(MD)] for form in forms if len(form) > len(MD)]
    return list(dict.fromkeys(spelled for form in forms for spelled in _normal_forms(form)))


def short_form(written: str, old: str, new: str) -> str:
    """`new` spelled like `written` spelled `old`: as many trailing segments, `.md` kept or dropped."""
    dropped = old.endswith(MD) and not written.endswith(MD)
    if dropped and new.endswith(MD):
        new = new[: -len(MD)]
    return "/".join(new.split("/")[-(written.count("/") + 1) :])


def ends_with(path: str, suffix: str) -> bool:
    return path.endswith("/" + suffix)

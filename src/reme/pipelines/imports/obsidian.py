"""An Obsidian vault copied in under one folder, its structure kept and its links made resolvable.

Notes land at `<folder>/<vault>/<path in the vault>`, front matter kept byte for byte (provenance
keys appended), attachments copied beside them (text ones redacted). Each wikilink is resolved the
way Obsidian resolves it — a path relative to the note (`./`, `../`), a vault path, else the file of
that name (the note's own folder first, then the shortest path), else a note's `aliases`. A link stays as the author wrote
it when the workspace resolves that spelling to the same file (docs/spec.md §2: `[[Settings]]` names the one
`…/Settings.md`); otherwise its target becomes the shortest spelling that does (at most the full
workspace path), anchor, alias and embed flag kept. A link Obsidian could not resolve either stays
as written (a pending edge), and the counts go into the import's summary. A note without a `name`
gets its file name as one. `.obsidian/` and other dot-folders never come in. Of two paths that differ
only in case (`Case.md`, `case.md`: one file on macOS and Windows) the first comes in, the other is
skipped with the reason; a link to either finds the first, as Obsidian's do.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence

from reme.pipelines.capture.redaction import redact, redact_note
from reme.pipelines.imports.writing import ImportBatch, ImportedFile, ImportedNote
from reme.workspace import frontmatter
from reme.workspace.paths import check_new_name, check_relative, is_markdown
from reme.workspace.resolving import resolve, spellings
from reme.workspace.textio import decode_text
from reme.workspace.wikilinks import linkable, retarget_links

KIND = "obsidian"
MD = ".md"


def _decode(data: bytes, shown: str) -> str | None:
    try:
        return decode_text(data, shown).removeprefix("\ufeff")
    except ValueError:
        return None


class VaultIndex:
    """Which vault file a link names, seen from one note."""

    def __init__(self, paths: Sequence[str], aliases: dict[str, str]) -> None:
        self.paths = set(paths)
        self.by_name: dict[str, list[str]] = {}
        for path in paths:
            parts = path.split("/")
            for i in range(len(parts)):
                tail = "/".join(parts[i:])
                self.by_name.setdefault(tail.lower(), []).append(path)
                if tail.endswith(MD):
                    self.by_name.setdefault(tail[: -len(MD)].lower(), []).append(path)
        self.aliases = {alias.lower(): path for alias, path in aliases.items()}

    def resolve(self, target: str, note: str) -> str | None:
        target = target.strip()
        if not target:
            return None
        here = posixpath.dirname(note)
        if target.startswith(("./", "../")):
            joined = posixpath.normpath(posixpath.join(here, target))
            return next((p for p in (joined, joined + MD) if p in self.paths), None)
        for candidate in (target, target + MD):
            if candidate in self.paths:
                return candidate
        found = self.by_name.get(target.lower(), [])
        if found:
            return min(set(found), key=lambda p: (posixpath.dirname(p) != here, p.count("/"), p))
        return self.aliases.get(target.lower())


class WorkspaceNames:
    """How the workspace will resolve a link once the import is written (docs/spec.md §2): any file by its
    full path; a note (the catalogued kind: Markdown) also by each of its proper trailing parts
    (`b/c.md`, `c.md` of `a/b/c.md`), one lookup per link. An attachment is found by its full path
    only, so `![[panel.png]]` becomes `![[<folder>/attachments/panel.png]]`."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = set(paths)
        self.tails: dict[str, list[str]] = {}
        for path in filter(is_markdown, self.paths):
            parts = path.split("/")
            for i in range(1, len(parts)):
                self.tails.setdefault("/".join(parts[i:]), []).append(path)

    def resolve(self, target: str) -> str | None:
        return resolve(target, self.paths.__contains__, lambda suffix: self.tails.get(suffix, []))

    def shortest(self, path: str) -> str | None:
        """The shortest spelling of `path` that resolves to it (at worst the path itself); None when
        none can be written as a link target (a `#` or `|` in the path)."""
        forms = sorted(spellings(path), key=lambda form: (form.count("/"), len(form)))
        return next((form for form in forms if linkable(form) and self.resolve(form) == path), None)


def _aliases(text: str) -> list[str]:
    value = frontmatter.parse(text).metadata.get("aliases")
    if isinstance(value, str):
        return [value]
    return [a for a in value if isinstance(a, str)] if isinstance(value, list) else []


def _redacted(data: bytes) -> bytes:
    """An attachment's bytes, secrets redacted when it is text (`.txt`, `.canvas`, `.json`): `read`
    serves it to agents as it serves the notes, so a pasted key must not come in through it either."""
    text = _decode(data, "attachment")
    if text is None:
        return data
    cleaned = redact(text)
    return data if cleaned == text else cleaned.encode()


def _stem(relative: str) -> str:
    return posixpath.basename(relative)[: -len(MD)] if relative.lower().endswith(MD) else relative


def obsidian_batch(
    files: Sequence[tuple[str, bytes]],
    *,
    destination: str,
    workspace_paths: Sequence[str] = (),
    moved: Mapping[str, str] | None = None,
) -> ImportBatch:
    """Notes (links kept or respelled, see above) and attachments of a vault; files reme cannot hold
    are skipped. `workspace_paths`: the files already in the workspace, which links may also match;
    `moved`: vault path -> where an earlier import's copy lives now (`imports.relocated`)."""
    batch = ImportBatch(ids_per_source=True)
    notes: dict[str, str] = {}
    attachments: dict[str, bytes] = {}
    taken: dict[str, str] = {}  # casefolded path -> the vault path that has it
    for relative, data in files:
        try:
            check_relative(relative)
            check_new_name(relative)
        except ValueError as exc:
            batch.skip(relative, f"its name cannot be a workspace path: {exc}")
            continue
        first = taken.setdefault(relative.casefold(), relative)
        if first != relative:
            batch.skip(
                relative, f"{first} differs from it only in case (one file on macOS and Windows); rename one"
            )
            continue
        if not is_markdown(relative):
            attachments[relative] = _redacted(data)
            continue
        text = _decode(data, relative)
        if text is None:
            batch.skip(relative, "a .md file that is not UTF-8 text")
            continue
        notes[relative] = text
    aliases = {alias: path for path, text in notes.items() for alias in _aliases(text)}
    index = VaultIndex([*notes, *attachments], aliases)
    moved = moved or {}
    located = {
        relative: moved.get(relative, f"{destination}/{relative}") for relative in (*notes, *attachments)
    }
    names = WorkspaceNames([*workspace_paths, *located.values()])
    for relative, text in notes.items():
        rewritten, _count = retarget_links(text, _mapping(index, names, relative, located, batch.links))
        name = None if "name" in frontmatter.parse(text).metadata else _stem(relative)
        batch.notes.append(
            ImportedNote(located[relative], redact_note(rewritten), relative, name and redact(name))
        )
    for relative, data in attachments.items():
        batch.files.append(ImportedFile(f"{destination}/{relative}", data, relative))
    return batch


def _mapping(
    index: VaultIndex, names: WorkspaceNames, note: str, located: Mapping[str, str], counts: dict[str, int]
) -> Callable[[str], str | None]:
    """A link's new target (None: keep it as written), counting links kept, respelled and unresolved."""

    def mapped(target: str) -> str | None:
        found = index.resolve(target, note)
        if found is None:
            counts["unresolved"] += 1
            return None
        path = located[found]
        if names.resolve(target) == path:
            counts["kept"] += 1
            return None
        new = names.shortest(path)
        counts["rewritten" if new else "unresolved"] += 1
        return new

    return mapped

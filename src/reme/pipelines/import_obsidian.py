"""An Obsidian vault copied in under one folder, its structure kept and its links made resolvable.

Notes land at `<folder>/<vault>/<path in the vault>`, front matter kept byte for byte (provenance
keys appended), attachments copied beside them. Each wikilink is resolved the way Obsidian resolves
it — a path relative to the note (`./`, `../`), a vault path, else the file of that name (the note's
own folder first, then the shortest path), else a note's `aliases` — and its target is rewritten to
the full workspace path, anchor, alias and embed flag kept. A link Obsidian could not resolve either
stays as written (a pending edge). `.obsidian/` and other dot-folders never come in.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

from reme.pipelines.imports import ImportBatch, ImportedFile, ImportedNote
from reme.pipelines.redaction import redact_note
from reme.workspace import frontmatter
from reme.workspace.paths import check_new_name, check_relative, is_markdown
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


def _aliases(text: str) -> list[str]:
    value = frontmatter.parse(text).metadata.get("aliases")
    if isinstance(value, str):
        return [value]
    return [a for a in value if isinstance(a, str)] if isinstance(value, list) else []


def obsidian_batch(files: Sequence[tuple[str, bytes]], *, destination: str) -> ImportBatch:
    """Notes with rewritten links and attachments of a vault; files reme cannot hold are skipped."""
    batch = ImportBatch()
    notes: dict[str, str] = {}
    attachments: dict[str, bytes] = {}
    for relative, data in files:
        try:
            check_relative(relative)
            check_new_name(relative)
        except ValueError as exc:
            batch.skip(relative, f"its name cannot be a workspace path: {exc}")
            continue
        if not is_markdown(relative):
            attachments[relative] = data
            continue
        text = _decode(data, relative)
        if text is None:
            batch.skip(relative, "a .md file that is not UTF-8 text")
            continue
        notes[relative] = text
    aliases = {alias: path for path, text in notes.items() for alias in _aliases(text)}
    index = VaultIndex([*notes, *attachments], aliases)
    for relative, text in notes.items():
        rewritten, _count = retarget_links(text, _mapping(index, relative, destination))
        batch.notes.append(ImportedNote(f"{destination}/{relative}", redact_note(rewritten), relative))
    for relative, data in attachments.items():
        batch.files.append(ImportedFile(f"{destination}/{relative}", data, relative))
    return batch


def _mapping(index: VaultIndex, note: str, destination: str) -> Callable[[str], str | None]:
    def mapped(target: str) -> str | None:
        found = index.resolve(target, note)
        new = f"{destination}/{found}" if found else None
        return new if new and linkable(new) else None

    return mapped

"""Claude Code memory files (`CLAUDE.md`, `CLAUDE.local.md`, `MEMORY.md`) as notes, one per section.

A file becomes an overview note `<folder>/<doc>.md` (its text before the first section, and links to
its sections and to the files it imports) plus one note `<folder>/<doc>/<section>.md` per section.
Sections are cut at the shallowest heading level, not counting a lone title heading at the top.
`@path` references (outside code, as Claude Code reads them) are followed up to five hops: relative
to the file that names them, `~` for the home folder; each file reached is imported the same way.
A folder (`.claude/rules/`, an auto-memory folder) imports each Markdown file in it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import unquote

from reme.errors import ReMeError
from reme.pipelines.imports.writing import ImportBatch, ImportedNote, note_text
from reme.pipelines.memory.card_names import short_hash, slugify
from reme.workspace import frontmatter
from reme.workspace.wikilinks import render

KIND = "claude-code"
MAX_HOPS = 5
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_REFERENCE = re.compile(r"(?:^|(?<=\s))@((?:~/|\.{1,2}/|/)?[\w.\-/~+]+)")
_CODE_SPAN = re.compile(r"`+[^`]*`+")
_TOPIC_LINK = re.compile(r"\]\((?:<([^<>]+\.md)>|([^)<>\s]+\.md))\)")
INDEX_NAME = "MEMORY.md"

# (base origin, reference as written) -> (origin, text); raises ReMeError when it cannot be read.
Loader = Callable[[str, str], tuple[str, str]]


@dataclass
class ClaudeDocument:
    origin: str
    text: str
    references: list[tuple[str, str]] = field(default_factory=list)  # (as written, origin)


def _lines_outside_code(text: str) -> list[tuple[int, str]]:
    """(index, line) of the lines that are not inside a fenced code block."""
    found, fence = [], None
    for index, line in enumerate(text.splitlines()):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        found.append((index, line))
    return found


def references(text: str, *, topic_links: bool = False) -> list[str]:
    """The `@path` imports of a memory file, in order, outside code blocks and code spans.

    With `topic_links` (an auto-memory index, `MEMORY.md`), relative Markdown links to `.md` files
    count too: that is how the index points at its topic files.
    """
    found: list[str] = []
    for _index, line in _lines_outside_code(text):
        prose = _CODE_SPAN.sub(" ", line)
        refs = [m.group(1).rstrip(".,;:") for m in _REFERENCE.finditer(prose)]
        refs = [ref for ref in refs if "/" in ref or re.search(r"\.[A-Za-z0-9]+$", ref)]
        if topic_links:
            links = [unquote(m.group(1) or m.group(2)) for m in _TOPIC_LINK.finditer(prose)]
            refs += [link for link in links if "://" not in link]
        found += [ref for ref in refs if ref not in found]
    return found


def collect_documents(
    entries: Sequence[tuple[str, str]], load: Loader, *, max_documents: int
) -> tuple[list[ClaudeDocument], list[dict[str, str]]]:
    """The entry files `(origin, text)` and every file they import (breadth first, at most `MAX_HOPS` hops deep)."""
    if len(entries) > max_documents:
        raise ReMeError(f"the source holds {len(entries)} memory files, more than max_items {max_documents}")
    documents = [ClaudeDocument(origin, text) for origin, text in entries]
    seen = {document.origin for document in documents}
    skipped: list[dict[str, str]] = []
    frontier = [(document, 0) for document in documents]
    while frontier:
        document, hops = frontier.pop(0)
        is_index = PurePosixPath(document.origin.replace("\\", "/")).name == INDEX_NAME
        for ref in references(document.text, topic_links=is_index):
            if hops >= MAX_HOPS:
                skipped.append(
                    {"item": f"@{ref} in {document.origin}", "reason": f"more than {MAX_HOPS} hops deep"}
                )
                continue
            try:
                target, body = load(document.origin, ref)
            except ReMeError as exc:
                skipped.append({"item": f"@{ref} in {document.origin}", "reason": exc.message})
                continue
            document.references.append((ref, target))
            if target in seen:
                continue
            if len(documents) >= max_documents:
                raise ReMeError(f"the memory file imports more than {max_documents} files (max_items)")
            seen.add(target)
            found = ClaudeDocument(target, body)
            documents.append(found)
            frontier.append((found, hops + 1))
    return documents, skipped


@dataclass(frozen=True)
class Section:
    title: str
    text: str


def split_sections(text: str) -> tuple[str, list[Section]]:
    """(text before the first section, sections) cut at the shallowest heading level."""
    lines = text.splitlines(keepends=True)
    headings = [
        (index, len(m.group(1)), m.group(2).strip())
        for index, line in _lines_outside_code(text)
        if (m := _HEADING.match(line))
    ]
    if not headings:
        return text, []
    top = min(level for _i, level, _t in headings)
    if [level for _i, level, _t in headings].count(top) == 1 and headings[0][1] == top:
        headings = headings[1:]  # a lone title heading stays in the overview
        if not headings:
            return text, []
        top = min(level for _i, level, _t in headings)
    cuts = [(index, title) for index, level, title in headings if level == top]
    preamble = "".join(lines[: cuts[0][0]])
    sections = []
    for number, (index, title) in enumerate(cuts):
        end = cuts[number + 1][0] if number + 1 < len(cuts) else len(lines)
        sections.append(Section(title, "".join(lines[index:end])))
    return preamble, sections


def _summary(section: Section) -> str:
    for line in section.text.splitlines()[1:]:
        words = line.strip().lstrip("-*>+ ").strip()
        if words:
            return words[:200]
    return section.title


def _doc_slug(origin: str) -> str:
    """`<project>-<stem>`: the folder a memory file belongs to, past `.claude/` and `memory/`."""
    path = PurePosixPath(origin.replace("\\", "/"))
    owner = next((p.name for p in path.parents if p.name not in (".claude", "memory")), "")
    return slugify(f"{owner.strip('-.')}-{path.stem}") or slugify(path.stem) or short_hash(origin)


def claude_batch(documents: list[ClaudeDocument], folder: str, name: str | None = None) -> ImportBatch:
    """Overview and section notes of every document."""
    batch = ImportBatch()
    slugs: dict[str, str] = {}
    for number, document in enumerate(documents):
        slug = (slugify(name) if name and number == 0 else "") or _doc_slug(document.origin)
        if slug in slugs.values():
            slug = f"{slug}-{short_hash(document.origin)}"
        slugs[document.origin] = slug
    for document in documents:
        slug = slugs[document.origin]
        overview = f"{folder}/{slug}.md"
        parsed = frontmatter.parse(document.text)  # auto-memory topic files carry name/description/type
        preamble, sections = split_sections(parsed.body)
        taken: set[str] = set()  # stems given: `Setup`, `Setup` and `Setup 2` make three files
        lines: list[str] = []
        for section in sections:
            base = slugify(section.title) or "section"
            stem, n = base, 1
            while stem in taken:
                n += 1
                stem = f"{base}-{n}"
            taken.add(stem)
            path = f"{folder}/{slug}/{stem}.md"
            front = {
                "name": section.title,
                "description": _summary(section),
                "part_of": f"[[{overview}]]",
            }
            batch.notes.append(
                ImportedNote(path, note_text(front, section.text), f"{document.origin}#{stem}")
            )
            alias = re.sub(r"[\[\]|]", " ", section.title).strip()  # would cut the link short
            lines.append(f"- {render(path, alias=alias or None)}")
        body = preamble.rstrip("\n") + "\n" if preamble.strip() else ""
        if lines:
            body += "\n## Sections\n\n" + "\n".join(lines) + "\n"
        imported = [(ref, slugs[target]) for ref, target in document.references if target in slugs]
        if imported:
            body += "\n## Imported files\n\n"
            body += "".join(f"- @{ref}: {render(f'{folder}/{other}.md')}\n" for ref, other in imported)
        front = {
            "name": PurePosixPath(document.origin.replace("\\", "/")).name,
            "description": f"Claude Code memory file {document.origin}: {len(sections)} section(s)",
            **parsed.metadata,
        }
        batch.notes.append(ImportedNote(overview, note_text(front, body.lstrip("\n")), document.origin))
    return batch

"""Daily notes (docs/spec.md §8): day index pages `daily/<date>.md` and cards `daily/<date>/<name>.md`.

The day page owns only the block between `<!-- notes:auto -->` and `<!-- /notes:auto -->`; whatever a
person writes around it is kept, and the page is rewritten only when its text would change.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from reme.workspace import frontmatter
from reme.workspace.atomic import atomic_write
from reme.workspace.layout import Workspace
from reme.workspace.links import LinkSource
from reme.workspace.paths import check_segment, in_git, real
from reme.workspace.textio import read_text
from reme.workspace.transcript import transcript_path
from reme.workspace.wikilinks import render

BLOCK_START = "<!-- notes:auto -->"
BLOCK_END = "<!-- /notes:auto -->"
_BLOCK = re.compile(re.escape(BLOCK_START) + r".*?" + re.escape(BLOCK_END), re.DOTALL)


def day_page(ws: Workspace, day: str) -> str:
    return f"{ws.folder('daily')}/{day}.md"


def session_link_target(ws: Workspace, session_id: str) -> str:
    return transcript_path(ws.folder("session"), session_id)


def create(
    ws: Workspace,
    links: LinkSource,
    day: str,
    name: str | None = None,
    session_id: str | None = None,
    description: str | None = None,
) -> dict[str, Any]:
    """Create, or return unchanged when it exists, the day page or a card of that day."""
    if session_id is not None:
        check_segment(session_id, "session_id")
    card_name = name if name is not None else session_id
    if card_name is None:
        if description is not None:
            raise ValueError("description applies to a card; give a name or session_id as well")
        result = reindex(ws, links, day, create_only=True)
        return {"path": result["path"], "created": result["changed"]}
    card_name = card_name.removesuffix(".md")
    check_segment(card_name, "name")
    relative = ws.check(f"{ws.folder('daily')}/{day}/{card_name}.md", write=True)
    target = ws.absolute(relative, write=True)
    metadata: dict[str, Any] = {"name": card_name}
    if description is not None:
        metadata["description"] = description
    if session_id is not None:
        metadata["session_id"] = session_id
        metadata["source_conversation"] = render(session_link_target(ws, session_id))
    frontmatter.check_metadata(metadata)
    with ws.lock(relative):
        if target.exists():
            return {"path": relative, "created": False}
        atomic_write(target, frontmatter.render_new(metadata), ws.root)
    links.sync_paths([relative])
    return {"path": relative, "created": True}


def list_notes(ws: Workspace, day: str) -> list[dict[str, str]]:
    """Cards of a day, sorted by path, with their `name` (file stem when absent) and `description`."""
    folder = ws.absolute(ws.check(f"{ws.folder('daily')}/{day}"))
    if not folder.is_dir():
        return []
    notes = []
    for card in sorted(folder.iterdir()):
        if card.name.startswith(".") or card.suffix.lower() != ".md" or not _is_card(ws, card):
            continue
        relative = ws.relative(card)
        try:
            metadata = frontmatter.parse(read_text(ws.root, relative)).metadata
        except ValueError:
            metadata = {}
        notes.append(
            {
                "path": relative,
                "name": _one_line(metadata.get("name") or card.stem),
                "description": _one_line(metadata.get("description") or ""),
            }
        )
    return notes


def _is_card(ws: Workspace, card: Path) -> bool:
    """A file whose real path (symbolic links resolved) is a note of the workspace: not outside it, not
    derived state in `metadata/`, not in `.git/` — the day page links every card it lists."""
    target = real(card)
    if not target.is_relative_to(ws.root) or not target.is_file():
        return False
    relative = ws.relative(target)
    return not ws.is_metadata(relative) and not in_git(relative)


def reindex(ws: Workspace, links: LinkSource, day: str, *, create_only: bool = False) -> dict[str, Any]:
    """Regenerate the day page's front matter and card block; write only when the text changes."""
    relative = ws.check(day_page(ws, day), write=True)
    target = ws.absolute(relative, write=True)
    with ws.lock(relative):
        notes = list_notes(ws, day)
        exists = target.is_file()
        if create_only and exists:
            return {"path": relative, "changed": False, "count": len(notes)}
        old = read_text(ws.root, relative) if exists else ""
        new = _day_text(old, day, notes)
        if new != old or not exists:
            atomic_write(target, new, ws.root)
            changed = True
        else:
            changed = False
    if changed:
        links.sync_paths([relative])
    return {"path": relative, "changed": changed, "count": len(notes), "notes": notes}


def _day_text(old: str, day: str, notes: list[dict[str, str]]) -> str:
    """The page with its block regenerated: one line per card, nothing else (docs/spec.md §8)."""
    block = "\n".join(
        [
            BLOCK_START,
            *(
                f"- {render(note['path'])} name: {note['name']} description: {note['description']}".rstrip()
                for note in notes
            ),
            BLOCK_END,
        ]
    )
    document = frontmatter.parse(old)
    if document.error:
        raise ValueError(f"the day page has broken front matter ({document.error}); fix it by hand first")
    description = f"{len(notes)} note(s)."
    if document.metadata.get("description") == f"{len(notes)} note(s) today.":
        description = f"{len(notes)} note(s) today."  # a ReMe 0.4 page is read as it is
    metadata = {"name": day, "description": description}
    body = document.body
    if _BLOCK.search(body):
        body = _BLOCK.sub(lambda _: block, body, count=1)
    else:
        separator = "" if not body or body.endswith("\n\n") else ("\n" if body.endswith("\n") else "\n\n")
        body = body + separator + block + "\n"
    return frontmatter.update(document.head + body, metadata)


def _one_line(value: object) -> str:
    return " ".join(str(value).split())

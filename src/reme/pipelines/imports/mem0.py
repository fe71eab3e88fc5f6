"""A mem0 export (the JSON of `get_all`, or a list of its memories) as one note per memory.

A memory `{id, memory, user_id?, agent_id?, run_id?, metadata?, categories?, hash?, created_at?,
updated_at?}` becomes `<folder>/<owner>/<id>.md`, the owner being its user (else agent, else run,
else `shared`). The note's path comes from the memory id, so a memory mem0 updated in place updates
the same note on the next import.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from reme.jsontypes import JSONObject, JSONValue
from reme.pipelines.imports.writing import SAFE_ID, ImportBatch, ImportedNote, check_items, note_text
from reme.pipelines.memory.card_names import short_hash, slugify
from reme.workspace import frontmatter, relative_dates
from reme.workspace.dates import is_date
from reme.workspace.paths import check_segment

KIND = "mem0"
OWNER_KEYS = ("user_id", "agent_id", "run_id")
COPIED_KEYS = ("user_id", "agent_id", "run_id", "categories", "hash", "created_at", "updated_at")


def memories_of(data: JSONValue) -> list[JSONValue]:
    """The memories of an export: `{"results": [...]}` (mem0 1.x), `{"memories": [...]}` or a bare array."""
    if isinstance(data, dict):
        for key in ("results", "memories"):
            listed = data.get(key)
            if isinstance(listed, list):
                return list(listed)
        raise ValueError('a mem0 export is a JSON array of memories or an object with a "results" array')
    if not isinstance(data, list):
        raise ValueError('a mem0 export is a JSON array of memories or an object with a "results" array')
    return data


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _file_stem(memory_id: str) -> str:
    """The id itself when it is a usable file name, else its hash (`a/b`, `con`: a device name on Windows)."""
    try:
        if SAFE_ID.fullmatch(memory_id):
            return check_segment(f"{memory_id}.md")[: -len(".md")]
    except ValueError:
        pass
    return short_hash(memory_id, 16)


def mem0_batch(data: JSONValue, *, folder: str, max_items: int, max_memory_chars: int) -> ImportBatch:
    """One note per memory; memories without an id or text are skipped with a reason."""
    memories = memories_of(data)
    check_items(
        memories,
        limit=max_items,
        what="memories",
        recognised=lambda m: isinstance(m, Mapping) and ("memory" in m or "text" in m),
        refusal='no item has a "memory" text: this is not a mem0 export',
    )
    batch = ImportBatch()
    seen: dict[str, str] = {}  # memory id -> the item that brought it
    for shown, memory in batch.objects(memories, "memories", "memory"):
        memory_id = memory.get("id")
        text = memory.get("memory", memory.get("text"))
        if memory_id in (None, "") or isinstance(memory_id, (dict, list, bool)):
            batch.skip(shown, "no id")
            continue
        if not isinstance(text, str) or not text.strip():
            batch.skip(f"{shown} {memory_id}", "no memory text")
            continue
        if len(text) > max_memory_chars:
            batch.skip(
                f"{shown} {memory_id}", f"{len(text)} characters, over max_memory_chars {max_memory_chars}"
            )
            continue
        if str(memory_id) in seen:  # two exports joined: the first copy is imported, not both to one note
            batch.skip(f"{shown} {memory_id}", f"the same id as {seen[str(memory_id)]}")
            continue
        owner_value = next(
            (
                str(memory[k])
                for k in OWNER_KEYS
                if memory.get(k) not in (None, "") and not isinstance(memory[k], (dict, list))
            ),
            "shared",
        )
        owner = slugify(owner_value) or short_hash(owner_value)
        stem = _file_stem(str(memory_id))
        front: JSONObject = {
            "name": _one_line(text, 80),
            "description": _one_line(text, 200),
            "memory_id": str(memory_id),
        }
        front.update({key: memory[key] for key in COPIED_KEYS if memory.get(key) not in (None, "", [])})
        given = memory.get("metadata")
        if isinstance(given, dict) and given:
            front["mem0_metadata"] = dict(given)
        body = text.strip() + "\n"
        said = str(memory.get("created_at") or "")[:10]
        if is_date(said):  # relative dates resolved against the day it was recorded (docs/spec.md §17.1)
            body = relative_dates.annotate(body, date.fromisoformat(said))
        try:  # NaN in the metadata, a lone surrogate in the text: this memory is skipped, not the export
            frontmatter.check_metadata(front)
            rendered = note_text(front, body)
        except frontmatter.FrontMatterError as exc:
            batch.skip(f"{shown} {memory_id}", str(exc))
            continue
        seen[str(memory_id)] = shown
        batch.notes.append(ImportedNote(f"{folder}/{owner}/{stem}.md", rendered, str(memory_id)))
    return batch

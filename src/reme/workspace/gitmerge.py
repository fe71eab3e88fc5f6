"""Three-way merges that know reme's files (docs/spec.md §18): what sync does with a file changed on both sides.

- session transcripts (`.../dialog/*.jsonl`): the union of the records by message id, in time order,
  each record's line byte-exact, no duplicates (append-only on every host, so nothing conflicts);
- Markdown: the front matter key by key (lists as a union), the body through `git merge-file`; a
  digest node also keeps every edge of both sides (E-1 across machines: a link one side lacks is
  added back under `## Links`);
- YAML with topic lists (`interests.yaml`, `_proactive.yaml`): list items merged by their `id` /
  `topic_id`, other keys three-way;
- anything else: `git merge-file`, or a conflict for binary content.

A true conflict (the same lines or the same front-matter key changed differently) answers the local
version (with the remote's missing edges, for a digest node) and `conflict=True`: the caller writes the
remote version beside it as a conflict file.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from reme.workspace import frontmatter, yamlsafe
from reme.workspace.edges import describe, missing_edges
from reme.workspace.fmsplit import split
from reme.workspace.transcript import is_transcript_path

_MISSING = object()
TOPIC_KEYS = ("id", "topic_id")


@dataclass(frozen=True)
class Merged:
    content: bytes
    conflict: bool = False


def merge(
    path: str,
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    *,
    git: str = "git",
    digest_folder: str = "digest",
) -> Merged:
    """The merge of one file changed on both sides (`base` None when both added it)."""
    if ours == theirs:
        return Merged(ours)
    if base == ours:
        return Merged(theirs)
    if base == theirs:
        return Merged(ours)
    if any(b"\0" in side for side in (base or b"", ours, theirs)):
        return Merged(ours, conflict=True)  # binary (git merge-file refuses a NUL even in valid UTF-8)
    try:
        texts = [None if base is None else base.decode("utf-8"), ours.decode("utf-8"), theirs.decode("utf-8")]
    except UnicodeDecodeError:
        return Merged(ours, conflict=True)  # binary: nothing to merge line by line
    base_text, ours_text, theirs_text = texts
    assert ours_text is not None and theirs_text is not None
    suffix = PurePosixPath(path).suffix.lower()
    if suffix == ".jsonl" and is_transcript_path(path):
        merged = merge_transcript(base_text or "", ours_text, theirs_text)
        if merged is not None:
            return Merged(merged.encode("utf-8"))
    if suffix in (".yaml", ".yml"):
        topics = merge_topics_yaml(base_text or "", ours_text, theirs_text)
        if topics is not None:
            text, clash = topics
            return Merged(ours, True) if clash else Merged(text.encode("utf-8"))
    if suffix == ".md":
        digest = PurePosixPath(path).parts[:1] == (digest_folder,)
        text, conflict = merge_markdown(base_text or "", ours_text, theirs_text, git=git, keep_edges=digest)
        return Merged(text.encode("utf-8"), conflict)
    text, conflicts = merge_text(base_text or "", ours_text, theirs_text, git=git)
    return Merged(ours, True) if conflicts else Merged(text.encode("utf-8"))


# text ---------------------------------------------------------------------------------------------------


def merge_text(base: str, ours: str, theirs: str, *, git: str = "git") -> tuple[str, int]:
    """`git merge-file` on three texts: (the merge with conflict markers, number of conflicts)."""
    with tempfile.TemporaryDirectory(prefix="reme-merge-") as folder:
        names = []
        for label, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            file = Path(folder) / label
            file.write_bytes(text.encode("utf-8"))
            names.append(str(file))
        done = subprocess.run(
            [git, "merge-file", "-p", "--diff3", "-L", "local", "-L", "base", "-L", "remote", *names],
            capture_output=True,
            check=False,
        )
    if done.returncode < 0 or done.returncode > 127:
        raise RuntimeError(f"git merge-file failed: {done.stderr.decode('utf-8', 'replace')}")
    text = done.stdout.decode("utf-8")
    if done.returncode:
        resolved = union_of_additions(text)
        if resolved is not None:
            return resolved, 0
    return text, done.returncode


def union_of_additions(text: str) -> str | None:
    """Conflicts where both sides only added lines at the same place (a source each, a journal entry
    each) resolved as the local lines then the remote's, once when both added the same; None when a
    side changed old lines. The remote's block is kept whole: a line it shares with the local block
    (`- status: done` under two entries) is its own line, not a duplicate."""
    out: list[str] = []
    part: str | None = None
    hunk: dict[str, list[str]] = {}
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if part is None and bare == "<<<<<<< local":
            part, hunk = "ours", {"ours": [], "base": [], "theirs": []}
        elif part == "ours" and bare == "||||||| base":
            part = "base"
        elif part == "base" and bare == "=======":
            part = "theirs"
        elif part == "theirs" and bare == ">>>>>>> remote":
            if any(line.strip() for line in hunk["base"]):
                return None
            out += hunk["ours"] + ([] if hunk["theirs"] == hunk["ours"] else hunk["theirs"])
            part = None
        elif part is None:
            out.append(line)
        else:
            hunk[part].append(line)
    return "".join(out) if part is None else None


# transcripts --------------------------------------------------------------------------------------------


def _records(text: str) -> list[tuple[str, str, str]] | None:
    """`(id, created_at, line)` per record, or None when a line is no message record."""
    found = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            return None
        if not isinstance(record, dict) or "id" not in record:
            return None
        found.append((str(record["id"]), str(record.get("created_at") or ""), line))
    return found


def merge_transcript(base: str, ours: str, theirs: str) -> str | None:
    """Every record of either side once (by id), each side's order kept, interleaved by `created_at`;
    a record one side removed or rewrote (a leaked secret taken out by hand) stays removed or
    rewritten when the other side left it as it was.

    None when a side holds a line that is no record, or both sides rewrote one record differently:
    then the file is merged as text (a conflict keeps both).
    """
    old, mine, other = _records(base), _records(ours), _records(theirs)
    if old is None or mine is None or other is None:
        return None
    was = {record_id: line for record_id, _, line in old}
    theirs_by_id = {record_id: line for record_id, _, line in other}
    kept: list[tuple[str, str, str]] = []
    for record_id, at, line in mine:
        their_line = theirs_by_id.get(record_id)
        if their_line is None and was.get(record_id) == line:
            continue  # removed there, unchanged here
        if their_line is not None and their_line != line and was.get(record_id) != their_line:
            if was.get(record_id) != line:
                return None  # rewritten differently on both sides
            line = their_line  # rewritten there, unchanged here
        kept.append((record_id, at, line))
    seen = {record_id for record_id, _, _ in mine}
    extra = [
        record
        for record in other
        if record[0] not in seen
        and was.get(record[0]) != record[2]  # removed here, unchanged there: stays removed
        and not seen.add(record[0])  # type: ignore[func-returns-value]
    ]
    lines: list[str] = []
    i = j = 0
    while i < len(kept) or j < len(extra):
        take_mine = j >= len(extra) or (i < len(kept) and kept[i][1] <= extra[j][1])
        if take_mine:
            lines.append(kept[i][2])
            i += 1
        else:
            lines.append(extra[j][2])
            j += 1
    return "".join(line + "\n" for line in lines)


# YAML topic files ---------------------------------------------------------------------------------------


def _load(text: str) -> object:
    try:
        return yamlsafe.load(text) if text.strip() else {}
    except yaml.YAMLError:
        return _MISSING


def _key_of(item: object) -> str | None:
    if isinstance(item, dict):
        for key in TOPIC_KEYS:
            if isinstance(item.get(key), (str, int)):
                return str(item[key])
    return None


def _three_way(base: object, ours: object, theirs: object) -> tuple[object, bool]:
    """One value merged: the side that changed wins; both changed differently → ours, conflict."""
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    return ours, True


def _merge_items(
    base: list[object], ours: list[object], theirs: list[object]
) -> tuple[list[object], bool] | None:
    """Lists of topics merged item by item by id (and whether an item clashed); None when the
    lists are not all keyed."""
    if not all(_key_of(item) for item in (*base, *ours, *theirs)):
        return None
    by_id = {
        name: {str(_key_of(item)): item for item in items}
        for name, items in (("base", base), ("ours", ours), ("theirs", theirs))
    }
    order = list(dict.fromkeys([*by_id["ours"], *by_id["theirs"]]))
    merged = []
    clashed = False
    for key in order:
        value, clash = _three_way(
            by_id["base"].get(key, _MISSING),
            by_id["ours"].get(key, _MISSING),
            by_id["theirs"].get(key, _MISSING),
        )
        clashed = clashed or clash
        if value is not _MISSING:
            merged.append(value)
    return merged, clashed


def merge_topics_yaml(base: str, ours: str, theirs: str) -> tuple[str, bool] | None:
    """Mappings merged key by key, keyed lists item by item: (the merge, whether a key or topic was
    changed differently on both sides, or deleted on one and changed on the other: a true conflict,
    never decided silently); None when that does not apply."""
    old, mine, other = _load(base), _load(ours), _load(theirs)
    if not (isinstance(old, dict) and isinstance(mine, dict) and isinstance(other, dict)):
        return None
    merged: dict[str, object] = {}
    clashed = False
    for key in list(dict.fromkeys([*mine, *other])):
        b, o, t = old.get(key, _MISSING), mine.get(key, _MISSING), other.get(key, _MISSING)
        if isinstance(o, list) and isinstance(t, list):
            items = _merge_items(b if isinstance(b, list) else [], o, t)
            if items is not None:
                merged[key], clash = items
                clashed = clashed or clash
                continue
        value, clash = _three_way(b, o, t)
        clashed = clashed or clash
        if value is not _MISSING:
            merged[key] = value
    return yaml.safe_dump(merged, sort_keys=False, allow_unicode=True), clashed


# Markdown -----------------------------------------------------------------------------------------------


def _parts(text: str) -> tuple[dict[str, object] | None, str]:
    """(front matter, or None when unreadable, body)."""
    parts = split(text)
    if not parts.has_front_matter:
        return {}, text
    loaded = _load(parts.yaml(text))
    return (loaded if isinstance(loaded, dict) else None), parts.body(text)


def _merge_front(
    base: dict[str, object], ours: dict[str, object], theirs: dict[str, object]
) -> tuple[dict[str, object], bool]:
    merged: dict[str, object] = {}
    conflict = False
    for key in dict.fromkeys([*ours, *theirs]):
        b, o, t = base.get(key, _MISSING), ours.get(key, _MISSING), theirs.get(key, _MISSING)
        if isinstance(o, list) and isinstance(t, list) and b not in (o, t):  # changed on both sides
            union = list(o)
            union += [item for item in t if item not in union]
            merged[key] = union
            continue
        value, clash = _three_way(b, o, t)
        conflict = conflict or clash
        if value is not _MISSING:
            merged[key] = value
    return merged, conflict


def merge_markdown(
    base: str, ours: str, theirs: str, *, git: str = "git", keep_edges: bool = False
) -> tuple[str, bool]:
    """(merged note, true conflict?); on a conflict the local note, plus the remote's edges for a node."""
    front = [_parts(base), _parts(ours), _parts(theirs)]
    (base_front, base_body), (our_front, our_body), (their_front, their_body) = front
    if our_front is None or their_front is None:  # unreadable YAML: nothing to merge key by key
        text, conflicts = merge_text(base, ours, theirs, git=git)
        return (text, False) if not conflicts else (ours, True)
    body, conflicts = merge_text(base_body, our_body, their_body, git=git)
    merged_front, front_clash = _merge_front(base_front or {}, our_front, their_front)
    if conflicts or front_clash:
        local = _with_edges(ours, our_body, their_body) if keep_edges else ours
        return local, True
    text = _render(ours, merged_front, our_front, body)
    if keep_edges:
        text = _with_edges(text, our_body, their_body, body)
    return text, False


def _render(ours: str, front: dict[str, object], our_front: dict[str, object], body: str) -> str:
    """The local note's front matter block with the merged keys, then the merged body."""
    parts = split(ours)
    text = parts.head(ours) + body if parts.has_front_matter else body
    removed = [key for key in our_front if key not in front]
    if removed:
        text, _, _ = frontmatter.delete(text, removed)
    changes = {key: value for key, value in front.items() if our_front.get(key, _MISSING) != value}
    return frontmatter.update(text, changes) if changes else text


def _with_edges(text: str, *bodies: str) -> str:
    """`text` plus a `## Links` line for every edge of `bodies` it lacks (E-1 across machines)."""
    parts = split(text)
    current = parts.body(text) if parts.has_front_matter else text
    lost: list[dict[str, str | None]] = []
    for body in bodies:
        for edge in missing_edges(body, current):
            if edge not in lost:
                lost.append(edge)
    if not lost:
        return text
    lines = "".join(f"- {describe(edge)}\n" for edge in lost)
    heading = "" if "\n## Links\n" in f"\n{current}" else "\n## Links\n\n"
    return text.rstrip("\n") + "\n" + heading + lines

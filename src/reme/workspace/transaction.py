"""Multi-file transactions: several files change together or not at all, a kill included.

`commit(ws, links, changes)` checks each change's compare-and-set precondition under the paths'
locks, records an intent `metadata/transactions/<id>.json` holding every file's pre-image and the
sha256 of its new text (and holds `<id>.lock`, an OS lock that dies with its process), writes each
file atomically (or unlinks it), then forgets the intent. A write that fails part-way (a full disk,
a permission) rolls the files already written back before the error goes up. An intent whose lock
is free belongs to a writer that died part-way: `recover` rolls its files back to the pre-images, so
readers end up with all the old files or all the new ones, never a mix. A file that holds neither
its pre-image nor what the dead writer wrote was edited since the crash: it is left alone and
reported (state `conflict`). Recovery runs at start-up (workspace component), in `health_check` and
before every commit.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock

from reme.errors import Conflict, ReMeError
from reme.jsontypes import JSONObject
from reme.workspace import confined
from reme.workspace.atomic import atomic_write, fsync_dir
from reme.workspace.intents import settle_dead
from reme.workspace.layout import Workspace
from reme.workspace.links import LinkSource
from reme.workspace.textio import Limits, check_text, read_text, sha256_of

TRANSACTIONS_DIR = "transactions"
# A dream run touches at most max_units (20) units of a few files each; a split max_children + 2.
MAX_FILES = 512
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Change:
    """One file of a transaction: its new text (None deletes it) and the version it must still be.

    `expected_sha256` is the sha256 of the text the caller decided on; None means the file must not
    exist yet.
    """

    path: str
    content: str | None
    expected_sha256: str | None


@dataclass
class _PreImage:
    path: str
    before: str | None  # None: the file did not exist
    after_sha256: str | None = None  # sha256 of what the transaction writes; None: it deletes the file
    legacy: bool = False  # an intent from before after_sha256 was recorded: rolled back unconditionally


def journal_dir(ws: Workspace) -> Path:
    return ws.root / ws.dirs["metadata"] / TRANSACTIONS_DIR


def commit(
    ws: Workspace, links: LinkSource, changes: Sequence[Change], limits: Limits = Limits()
) -> list[dict[str, Any]]:
    """Apply every change or none; `[{path, sha256}]` (sha256 None for a deleted file) in order.

    Raises `Conflict` (nothing written) when a file is no longer the version the caller expected.
    """
    if not changes:
        return []
    if len(changes) > MAX_FILES:
        raise ReMeError(
            f"a transaction changes at most {MAX_FILES} files, got {len(changes)}; "
            "split the work into smaller runs (e.g. revert or process fewer units at a time)",
            {"max_files": MAX_FILES, "files": len(changes)},
        )
    relatives = [ws.check(change.path, write=True) for change in changes]
    if len(set(relatives)) != len(relatives):
        raise ReMeError("a transaction names the same file twice")
    for change in changes:
        if change.content is not None:
            check_text(change.content, f"the new text of {change.path!r}", limits.max_text_bytes)
    recover(ws, links)
    with ws.lock(*relatives):
        images = [
            _check(ws, relative, change, limits) for relative, change in zip(relatives, changes, strict=True)
        ]
        folder = journal_dir(ws)
        folder.mkdir(parents=True, exist_ok=True)
        intent_id = uuid.uuid4().hex
        record = folder / f"{intent_id}.json"
        with FileLock(folder / f"{intent_id}.lock"):
            intent = {
                "id": intent_id,
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "files": [
                    {"path": image.path, "before": image.before, "after_sha256": image.after_sha256}
                    for image in images
                ],
            }
            atomic_write(record, json.dumps(intent, ensure_ascii=False), ws.root)
            applied: list[_PreImage] = []
            try:
                for image, change in zip(images, changes, strict=True):
                    applied.append(image)  # first: a write that fails half-way is undone too
                    apply_change(ws, image.path, change.content)
            except BaseException:
                _undo(ws, applied, record)
                raise
            finally:
                if not record.exists():  # kept only beside an intent that recovery must still settle
                    (folder / f"{intent_id}.lock").unlink(missing_ok=True)
            _forget(record)
        (folder / f"{intent_id}.lock").unlink(missing_ok=True)
    links.sync_paths(relatives)
    return [
        {"path": relative, "sha256": None if change.content is None else sha256_of(change.content)}
        for relative, change in zip(relatives, changes, strict=True)
    ]


def _check(ws: Workspace, relative: str, change: Change, limits: Limits) -> _PreImage:
    target = ws.absolute(relative, write=True)
    if target.is_dir():
        raise ReMeError(f"{relative!r} is a folder; a transaction changes files")
    current = read_text(ws.root, relative, limits.max_text_bytes) if target.is_file() else None
    if change.expected_sha256 is None and current is not None:
        raise Conflict(
            f"conflict: {relative!r} exists already; nothing was written",
            {"conflict": True, "path": relative},
        )
    if change.expected_sha256 is not None and (
        current is None or sha256_of(current) != change.expected_sha256.lower()
    ):
        state = "no longer exists" if current is None else "changed since it was read"
        raise Conflict(
            f"conflict: {relative!r} {state}; nothing was written", {"conflict": True, "path": relative}
        )
    after = None if change.content is None else sha256_of(change.content)
    return _PreImage(relative, current, after)


def _undo(ws: Workspace, applied: list[_PreImage], record: Path) -> None:
    """Put back the pre-images of the files a failed commit reached, last first; then drop its intent.

    When even that fails, the intent stays on disk for `recover` (which compares the after-states).
    """
    try:
        for image in reversed(applied):
            # a file the failed write left as it was needs nothing (a full disk may refuse a rewrite)
            if _current_sha256(ws, image.path) != _sha_or_none(image.before):
                apply_change(ws, image.path, image.before)
    except Exception:
        log.warning(
            "undoing the failed transaction %s failed; recovery will retry", record.stem, exc_info=True
        )
        return
    _forget(record)


def apply_change(ws: Workspace, relative: str, content: str | None) -> None:
    """Write (or, with None, delete) one file of a transaction; each step is atomic on its own."""
    target = ws.absolute(relative, write=True)
    if content is not None:
        atomic_write(target, content, ws.root)
    elif target.is_file() or target.is_symlink():
        confined.remove(ws.root, relative, folder=False)


def recover(ws: Workspace, links: LinkSource | None = None) -> list[JSONObject]:
    """Roll back every transaction a dead writer left; one report `{id, paths, state}` per intent."""
    return settle_dead(journal_dir(ws), lambda record: _roll_back(ws, record, links))


def _roll_back(ws: Workspace, record: Path, links: LinkSource | None) -> JSONObject:
    try:
        intent = json.loads(record.read_text(encoding="utf-8"))
        images = [
            _PreImage(str(f["path"]), f["before"], f.get("after_sha256"), "after_sha256" not in f)
            for f in intent["files"]
        ]
    except (OSError, ValueError, TypeError, KeyError) as exc:
        log.warning("transaction intent %s is unreadable and is dropped: %s", record.name, exc)
        _forget(record)
        return {"id": record.stem, "paths": [], "state": "unreadable", "error": str(exc)}
    paths = [ws.check(image.path, write=True) for image in images]
    conflicts: list[str] = []
    try:
        with ws.lock(*paths):
            for path, image in zip(paths, images, strict=True):
                current = _current_sha256(ws, path)
                if current == _sha_or_none(image.before):
                    continue  # not reached by the dead writer, or already put back
                if image.legacy or current == image.after_sha256:
                    apply_change(ws, path, image.before)
                else:
                    conflicts.append(path)  # edited since the crash: that edit is kept
    except Exception as exc:  # left on disk: the next recovery tries again
        log.warning("rolling back the interrupted transaction %s failed", record.stem, exc_info=True)
        return {
            "id": record.stem,
            "paths": [*paths],
            "state": "failed",
            "error": f"{type(exc).__name__}: {exc}",
        }
    _forget(record)
    if links is not None:
        links.sync_paths(paths)
    if conflicts:
        log.warning(
            "rolled back the interrupted transaction %s except %s, changed since the crash and left as they are",
            record.stem,
            ", ".join(conflicts),
        )
        return {
            "id": record.stem,
            "paths": [*paths],
            "state": "conflict",
            "conflicts": [*conflicts],
            "error": (
                f"{', '.join(conflicts)} changed after the interrupted transaction and were left as they are; "
                "the other files were rolled back: check these by hand"
            ),
        }
    log.warning("rolled back the interrupted transaction %s (%s)", record.stem, ", ".join(paths))
    return {"id": record.stem, "paths": [*paths], "state": "rolled_back"}


def _sha_or_none(text: str | None) -> str | None:
    return None if text is None else sha256_of(text)


def _current_sha256(ws: Workspace, relative: str) -> str | None:
    """The sha256 of a file's bytes now; None when it is absent; a folder or link gets a value no text has."""
    target = ws.absolute(relative, write=True)
    if target.is_symlink() or target.is_dir():
        return "not-a-file"
    if not target.is_file():
        return None
    return sha256_of(target.read_bytes())


def _forget(record: Path) -> None:
    record.unlink(missing_ok=True)
    fsync_dir(record.parent)

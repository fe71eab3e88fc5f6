"""Move intents: a `move` killed between the rename and its last link rewrite is finished later.

Before the rename, `move` writes `metadata/moves/<id>.json` (source, destination, the inbound links
it will rewrite) and holds `<id>.lock` (an OS lock that dies with its process) until every link is
rewritten. An intent whose lock is free belongs to a writer that died: if the destination exists and
the source does not, the rename happened and the rewrite is rolled forward (rewriting a link is
idempotent); otherwise the rename never happened, nothing was rewritten, and the intent is dropped.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock

from reme.jsontypes import JSONObject
from reme.workspace.atomic import atomic_write, fsync_dir
from reme.workspace.intents import settle_dead
from reme.workspace.layout import Workspace

MOVES_DIR = "moves"
log = logging.getLogger(__name__)


@dataclass
class MoveIntent:
    """What an interrupted move still owes: every link of `inbound` pointed from `src` to `dst`."""

    id: str
    src: str
    dst: str
    inbound: list[dict[str, str]]
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())


def journal_dir(ws: Workspace) -> Path:
    return ws.root / ws.dirs["metadata"] / MOVES_DIR


@contextlib.contextmanager
def recorded(ws: Workspace, src: str, dst: str, inbound: list[dict[str, str]]) -> Iterator[MoveIntent]:
    """Durably record the intent for the block (the rename and the rewrites), then forget it."""
    folder = journal_dir(ws)
    folder.mkdir(parents=True, exist_ok=True)
    intent = MoveIntent(uuid.uuid4().hex, src, dst, inbound)
    lock = FileLock(folder / f"{intent.id}.lock")
    with lock:
        record = folder / f"{intent.id}.json"
        atomic_write(record, json.dumps(asdict(intent), ensure_ascii=False), ws.root)
        yield intent
        _forget(record)
    (folder / f"{intent.id}.lock").unlink(missing_ok=True)


def recover(ws: Workspace, finish: Callable[[MoveIntent], JSONObject]) -> list[JSONObject]:
    """Settle every intent left by a dead writer; `finish` rewrites the links of a renamed one.

    Returns one report per intent: `{id, src, dst, state, ...}` with state `finished` (rolled
    forward, plus what `finish` reported), `not_moved` (the rename never happened) or `failed`.
    A failed intent stays on disk and is tried again on the next recovery.
    """
    return settle_dead(journal_dir(ws), lambda record: _settle(ws, record, finish))


def _settle(ws: Workspace, record: Path, finish: Callable[[MoveIntent], JSONObject]) -> JSONObject:
    try:
        intent = MoveIntent(**json.loads(record.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as exc:
        log.warning("move intent %s is unreadable and is dropped: %s", record.name, exc)
        _forget(record)
        return {"id": record.stem, "state": "unreadable", "error": str(exc)}
    report: JSONObject = {"id": intent.id, "src": intent.src, "dst": intent.dst}
    if _exists(ws.root / intent.src) or not _exists(ws.root / intent.dst):
        _forget(record)
        log.warning(
            "move %s -> %s was interrupted before its rename; nothing to finish", intent.src, intent.dst
        )
        return {**report, "state": "not_moved"}
    try:
        done = finish(intent)
    except Exception as exc:
        log.warning("finishing the interrupted move %s -> %s failed", intent.src, intent.dst, exc_info=True)
        return {**report, "state": "failed", "error": f"{type(exc).__name__}: {exc}"}
    _forget(record)
    retargeted = done.get("retargeted_files")
    log.warning(
        "finished the interrupted move %s -> %s (%d file(s) rewritten)",
        intent.src,
        intent.dst,
        len(retargeted) if isinstance(retargeted, list) else 0,
    )
    return {**report, "state": "finished", **done}


def _forget(record: Path) -> None:
    record.unlink(missing_ok=True)
    fsync_dir(record.parent)


def _exists(path: Path) -> bool:
    return os.path.lexists(path)

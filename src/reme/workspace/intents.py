"""Intent records a dead writer left behind (moves, multi-file transactions), settled one by one.

A record's own lock is held by its live writer, so one that can be locked here belongs to a dead
one; a record another thread or process still holds is left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from filelock import FileLock, Timeout

from reme.jsontypes import JSONObject


def settle_dead(folder: Path, settle: Callable[[Path], JSONObject]) -> list[JSONObject]:
    """`settle(record)` for every unlocked `*.json` record in `folder`; one report per record."""
    if not folder.is_dir():
        return []
    reports = []
    for record in sorted(folder.glob("*.json")):
        lock = FileLock(record.with_suffix(".lock"), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            continue  # a live writer
        try:
            if record.exists():
                reports.append(settle(record))
        finally:
            lock.release()
        if not record.exists():
            record.with_suffix(".lock").unlink(missing_ok=True)
    return reports

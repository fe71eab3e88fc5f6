"""Intent records a dead writer left behind (moves, multi-file transactions), settled one by one.

A record's own lock is held by its live writer, so one that can be locked here belongs to a dead
one; a record another thread or process still holds is left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout


def settle_dead(folder: Path, settle: Callable[[Path], dict[str, Any]]) -> list[dict[str, Any]]:
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

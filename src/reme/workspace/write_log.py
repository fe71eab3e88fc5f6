"""Which job wrote which file, so that sync commits each job's changes under its name (docs/spec.md §18).

The job runner marks the running job (`running`, the outermost job wins: an agent's tool call belongs
to its dream); the atomic writer and the confined delete and rename `note` each file they change, in
`.git/reme-writes.jsonl`, only when the workspace is a git repository. With the content's blob id:
a file edited by hand after reme wrote it no longer matches and is committed as a hand edit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

CURRENT_JOB: ContextVar[str | None] = ContextVar("reme_current_job", default=None)
LEDGER = "reme-writes.jsonl"
MAX_LEDGER_BYTES = 4 * 2**20


@contextlib.contextmanager
def running(job: str) -> Iterator[None]:
    token = CURRENT_JOB.set(CURRENT_JOB.get() or job)
    try:
        yield
    finally:
        CURRENT_JOB.reset(token)


def blob_id(data: bytes) -> str:
    """The object id git gives a file with this content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def note(root: Path, relative: str, data: bytes | None) -> None:
    """Record that the running job wrote (`data`) or removed (None) `relative`; nothing outside a job."""
    job = CURRENT_JOB.get()
    if job is None or not (root / ".git").is_dir():
        return
    line = json.dumps({"path": relative, "job": job, "blob": None if data is None else blob_id(data)})
    ledger = root / ".git" / LEDGER
    with contextlib.suppress(OSError):  # attribution is best effort: the write itself has happened
        if ledger.stat().st_size > MAX_LEDGER_BYTES:
            _compact(ledger)
    with contextlib.suppress(OSError):
        fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


def _compact(ledger: Path) -> None:
    """Keep the latest line per path: a workspace that never syncs keeps a ledger bounded by its files."""
    latest: dict[str, str] = {}
    for line in ledger.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            latest[str(json.loads(line)["path"])] = line
    temp = ledger.with_name(f"{LEDGER}.{os.getpid()}.compact")
    temp.write_text("".join(line + "\n" for line in latest.values()), encoding="utf-8")
    os.replace(temp, ledger)


def take(git_dir: Path) -> dict[str, tuple[str, str | None]]:
    """The ledger so far, `path → (job, blob id or None)` (the latest write wins), and a fresh ledger."""
    ledger = git_dir / LEDGER
    taken = git_dir / f"{LEDGER}.taken"
    with contextlib.suppress(FileNotFoundError):
        os.replace(ledger, taken)
    entries: dict[str, tuple[str, str | None]] = {}
    try:
        text = taken.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return entries
    for line in text.splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            record = json.loads(line)
            entries[str(record["path"])] = (str(record["job"]), record.get("blob"))
    taken.unlink(missing_ok=True)
    return entries

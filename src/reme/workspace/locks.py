"""Per-path write locks that hold across threads and processes (docs/spec.md §14).

Each workspace-relative path hashes to one of a fixed number of lock files under `metadata/locks/`
(so the folder stays small however many notes there are); `filelock` takes an OS lock on it, so the
service, a one-shot CLI run and a background loop serialise on the same note. Several paths are always
taken in sorted stripe order, so two writers never wait on each other in a cycle. A thread that already
holds a stripe may take it again (nested operations do not deadlock on themselves).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from filelock import FileLock, Timeout


class LockTimeoutError(TimeoutError):
    """Another writer held a path for longer than the configured timeout."""


STRIPES = 1024
_HELD = threading.local()  # lock files this thread holds, shared by every PathLocks of the process


class PathLocks:
    """Striped lock files for workspace-relative paths in `lock_dir`."""

    def __init__(self, lock_dir: Path, timeout: float = 30.0) -> None:
        self.lock_dir = lock_dir
        self.timeout = timeout

    def stripe(self, path: str) -> int:
        return int.from_bytes(hashlib.sha256(path.encode("utf-8")).digest()[:4], "big") % STRIPES

    def lock_file(self, path: str) -> Path:
        return self.lock_dir / f"{self.stripe(path):04d}.lock"

    @contextmanager
    def hold(self, *paths: str) -> Iterator[None]:
        """Hold the write locks of `paths` for the duration of the block."""
        held: set[Path] = _HELD.__dict__.setdefault("files", set())
        wanted = sorted({self.lock_file(path): path for path in paths}.items())
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        with ExitStack() as stack:
            for lock_file, path in wanted:
                if lock_file in held:
                    continue
                lock = FileLock(lock_file, timeout=self.timeout)
                try:
                    stack.enter_context(lock)
                except Timeout:
                    raise LockTimeoutError(
                        f"{path!r} is being written by another writer; try again in a moment"
                    ) from None
                held.add(lock_file)
                stack.callback(held.discard, lock_file)
            yield

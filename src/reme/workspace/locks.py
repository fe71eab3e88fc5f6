"""Per-path write locks that hold across threads and processes (SPEC 14).

Each workspace-relative path maps to a lock file under `metadata/locks/`; `filelock` takes an OS lock
on it, so the service, a one-shot CLI run and a background loop serialise on the same note. Several
paths are always taken in sorted order, so two writers never wait on each other in a cycle. A thread
that already holds a path may take it again (nested operations do not deadlock on themselves).
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


class PathLocks:
    """Lock files for workspace-relative paths, one per path, in `lock_dir`."""

    def __init__(self, lock_dir: Path, timeout: float = 30.0) -> None:
        self.lock_dir = lock_dir
        self.timeout = timeout
        self._held = threading.local()

    def lock_file(self, path: str) -> Path:
        digest = hashlib.sha256(path.encode("utf-8")).hexdigest()[:32]
        return self.lock_dir / f"{digest}.lock"

    @contextmanager
    def hold(self, *paths: str) -> Iterator[None]:
        """Hold the write locks of `paths` for the duration of the block."""
        held: set[str] = self._held.__dict__.setdefault("paths", set())
        wanted = sorted(set(paths) - held)
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        with ExitStack() as stack:
            for path in wanted:
                lock = FileLock(self.lock_file(path), timeout=self.timeout)
                try:
                    stack.enter_context(lock)
                except Timeout:
                    raise LockTimeoutError(
                        f"{path!r} is being written by another process; try again in a moment"
                    ) from None
                held.add(path)
                stack.callback(held.discard, path)
            yield

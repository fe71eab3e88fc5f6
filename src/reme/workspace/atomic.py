"""Atomic file writes: a crash leaves either the old or the new file, never a half-written one (SPEC 14)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import time
from pathlib import Path

TEMP_SUFFIX = ".reme-tmp"
STALE_TEMP_SECONDS = 600  # a temporary file this old belongs to a writer that died


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write `data` to a hidden temporary file beside `path`, fsync it, then `os.replace` it into place.

    The temporary file lives in the same folder so the rename never crosses a file system; the folder
    is fsynced afterwards so the rename itself survives a power loss. An existing file keeps its mode.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if path.is_symlink():
        path = path.resolve()  # write through the link instead of replacing it
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_UMASK
    prefix = f".{path.name[:80]}.{os.getpid()}."  # the writer's pid: a sweep knows a dead writer's leftovers
    fd, temp_name = tempfile.mkstemp(prefix=prefix, suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    fsync_dir(path.parent)
    if path.parent not in _swept_folders:
        _swept_folders.add(path.parent)
        _remove_stale_temps(path.parent)


# Folders already swept by this process: listing a folder costs in proportion to its size, so it
# happens once per folder, not on every write.
_swept_folders: set[Path] = set()


def sweep_stale_temps(root: Path) -> int:
    """Delete the temporary files of dead writers anywhere under `root` (at start-up); returns how many.

    Without it a crash's leftovers stay until a later write in the same folder.
    """
    removed = 0
    for folder, subfolders, _ in os.walk(root):
        subfolders[:] = [name for name in subfolders if not os.path.islink(os.path.join(folder, name))]
        removed += _remove_stale_temps(Path(folder))
    return removed


def _remove_stale_temps(folder: Path) -> int:
    """Delete temporary files left in this folder by writers killed mid-write: those of a process that
    no longer runs at once, any other after STALE_TEMP_SECONDS (the pid may have been reused)."""
    limit = time.time() - STALE_TEMP_SECONDS
    removed = 0
    for leftover in folder.glob(".*" + TEMP_SUFFIX):
        with contextlib.suppress(OSError):
            if not _writer_alive(leftover.name) or leftover.stat().st_mtime < limit:
                leftover.unlink()
                removed += 1
    return removed


def _writer_alive(temp_name: str) -> bool:
    """Whether the process named in a temporary file's name (`.<name>.<pid>.<random>.reme-tmp`) runs."""
    parts = temp_name[: -len(TEMP_SUFFIX)].rsplit(".", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return True  # no pid in the name (an older reme): only its age tells
    pid = int(parts[1])
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def fsync_dir(folder: Path) -> None:
    """Persist a folder's entries (renames, unlinks); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

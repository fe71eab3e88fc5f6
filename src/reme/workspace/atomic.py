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
    prefix = f".{path.name[:80]}."
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


def _remove_stale_temps(folder: Path) -> None:
    """Delete temporary files left in this folder by writers killed mid-write."""
    limit = time.time() - STALE_TEMP_SECONDS
    for leftover in folder.glob(".*" + TEMP_SUFFIX):
        with contextlib.suppress(OSError):
            if leftover.stat().st_mtime < limit:
                leftover.unlink()


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

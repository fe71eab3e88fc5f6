"""Atomic file writes: a crash leaves either the old or the new file, never a half-written one (docs/spec.md §14)."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from pathlib import Path

from reme.workspace.confined import CONFINED, confined_parent
from reme.workspace.write_log import note

TEMP_SUFFIX = ".reme-tmp"
STALE_TEMP_SECONDS = 600  # a temporary file this old belongs to a writer that died


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def atomic_write(path: Path, data: bytes | str, root: Path | None = None) -> None:
    """Write `data` to a hidden temporary file beside `path`, fsync it, then `os.replace` it into place.

    The temporary file lives in the same folder so the rename never crosses a file system; the folder
    is fsynced afterwards so the rename itself survives a power loss. An existing file keeps its mode.
    With `root`, the folder is opened segment by segment from `root` (see `confined`) and every step
    happens relative to it: a folder swapped for a symlink meanwhile cannot send the write outside.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    noted = path.relative_to(root).as_posix() if root is not None and path.is_relative_to(root) else None
    if root is None or not CONFINED:
        if path.is_symlink():
            path = path.resolve()  # write through the link instead of replacing it
        path.parent.mkdir(parents=True, exist_ok=True)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            _write_in(folder, path.name, payload)
        finally:
            os.close(folder)
    else:
        with confined_parent(root, path.relative_to(root).as_posix()) as (folder, name):
            _write_in(folder, name, payload)
    if root is not None and noted is not None:
        note(root, noted, payload)  # which job wrote it, for sync's commits
    if path.parent not in _swept_folders:
        _swept_folders.add(path.parent)
        _remove_stale_temps(path.parent)


def _write_in(folder: int, name: str, payload: bytes) -> None:
    """The temporary file, its fsync, the rename and the folder's fsync, all relative to `folder`."""
    try:
        mode = stat.S_IMODE(os.stat(name, dir_fd=folder).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_UMASK
    # At most 80 bytes of the name (not characters: 80 CJK ones would pass the 255-byte limit); pid: see the sweep
    stem = os.fsencode(name)[:80].decode("utf-8", "ignore")
    temp_name = f".{stem}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
    fd = os.open(temp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp_name, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name, dir_fd=folder)
        raise
    with contextlib.suppress(OSError):
        os.fsync(folder)


# Folders already swept by this process: listing a folder costs in proportion to its size, so it
# happens once per folder, not on every write.
_swept_folders: set[Path] = set()


def sweep_stale_temps(root: Path) -> int:
    """Delete the temporary files of dead writers anywhere under `root` (at start-up); returns how many.

    Without it a crash's leftovers stay until a later write in the same folder.
    """
    removed = 0
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if not os.path.islink(os.path.join(folder, name))]
        removed += _remove_stale(Path(folder), [name for name in names if _is_temp(name)])
    return removed


def _remove_stale_temps(folder: Path) -> int:
    """Delete temporary files left in this folder by writers killed mid-write."""
    return _remove_stale(folder, [leftover.name for leftover in folder.glob(".*" + TEMP_SUFFIX)])


def _is_temp(name: str) -> bool:
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def _remove_stale(folder: Path, names: list[str]) -> int:
    """Those of a process that no longer runs go at once, any other after STALE_TEMP_SECONDS (the
    pid may have been reused)."""
    limit = time.time() - STALE_TEMP_SECONDS
    removed = 0
    for name in names:
        leftover = folder / name
        with contextlib.suppress(OSError):
            if not _writer_alive(name) or leftover.stat().st_mtime < limit:
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

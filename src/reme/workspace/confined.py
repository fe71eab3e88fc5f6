"""Open a folder of the workspace so that no symlink swapped in mid-way can lead the write outside.

Checking a path and then writing to it leaves a gap: a folder flipped to a symlink in between sends
the write elsewhere. Here the path is walked one segment at a time from an open descriptor of the
root (`openat` with `O_NOFOLLOW`); a symlink met on the way is read and its target walked the same
way, and only targets inside the root are followed. The write then happens relative to the final
descriptor, so what the path means later no longer matters (docs/spec.md §14).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from reme.workspace.paths import UnsafePathError
from reme.workspace.write_log import note

# Where the system cannot work relative to a folder descriptor, writes fall back to plain paths.
CONFINED = {os.open, os.mkdir, os.stat, os.readlink, os.unlink} <= os.supports_dir_fd
MAX_LINKS = 40  # as the kernel's own limit: a loop of links ends here
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)


@contextlib.contextmanager
def confined_parent(root: Path, relative: str, *, through_link: bool = True) -> Iterator[tuple[int, str]]:
    """`(descriptor of the folder, final name)` for writing `relative` inside `root`.

    Missing folders are created; a final name that is a symlink is written through (its target
    must be inside the root too) unless `through_link` is off (to remove or move the link itself).
    Raises UnsafePathError when the path leads outside.
    """
    parts = [part for part in PurePosixPath(relative).parts]
    if not parts:
        raise UnsafePathError("cannot write the workspace folder itself")
    links = 0
    while True:
        fd, where = _walk(root, parts[:-1])
        name = parts[-1]
        try:
            target = _link_target(fd, name) if through_link else None
        except BaseException:
            os.close(fd)
            raise
        if target is None:
            break
        os.close(fd)
        links += 1
        if links > MAX_LINKS:
            raise UnsafePathError(f"{relative!r}: too many levels of symbolic links")
        parts = _join(root, where, target, relative)
        if not parts:
            raise UnsafePathError(f"{relative!r} is a link to the workspace folder itself")
    try:
        yield fd, name
    finally:
        os.close(fd)


def remove(root: Path, relative: str, *, folder: bool) -> None:
    """Delete a file (or a symlink) or a whole folder inside `root`, relative to its confined parent."""
    note(root, relative, None)  # which job removed it, for sync's commits
    if not CONFINED:
        if folder:
            shutil.rmtree(root / relative)
        else:
            (root / relative).unlink()
        return
    with confined_parent(root, relative, through_link=False) as (parent, name):
        if folder:
            shutil.rmtree(name, dir_fd=parent)
        else:
            os.unlink(name, dir_fd=parent)
        os.fsync(parent)


def rename(root: Path, src: str, dst: str) -> None:
    """`os.replace` of `src` by `dst` (both inside `root`), each relative to its confined parent;
    the destination's missing folders are created."""
    note(root, src, None)  # which job moved it, for sync's commits
    note(root, dst, None)
    if not CONFINED:
        (root / dst).parent.mkdir(parents=True, exist_ok=True)
        os.replace(root / src, root / dst)
        return
    with (
        confined_parent(root, src, through_link=False) as (src_parent, src_name),
        confined_parent(root, dst, through_link=False) as (dst_parent, dst_name),
    ):
        os.replace(src_name, dst_name, src_dir_fd=src_parent, dst_dir_fd=dst_parent)
        os.fsync(src_parent)
        os.fsync(dst_parent)


def _walk(root: Path, folders: list[str], *, create: bool = True) -> tuple[int, list[str]]:
    """Open `root/folders...` segment by segment; symlinks inside the root are followed by hand.

    `create` makes missing folders (for writes); without it a missing one raises FileNotFoundError.
    """
    pending = list(folders)
    where: list[str] = []
    fd = os.open(root, os.O_RDONLY)
    links = 0
    try:
        while pending:
            segment = pending.pop(0)
            target = _link_target(fd, segment)
            if target is not None:
                links += 1
                if links > MAX_LINKS:
                    raise UnsafePathError("too many levels of symbolic links")
                rest = _join(root, where, target, "/".join(folders))
                os.close(fd)
                fd = os.open(root, os.O_RDONLY)
                where, pending = [], rest + pending
                continue
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(segment, dir_fd=fd)
            try:
                child = os.open(segment, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ENOTDIR and not create and _link_target(fd, segment) is None:
                    raise NotADirectoryError(
                        f"{'/'.join([*where, segment])!r} is a file, not a folder"
                    ) from None
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped for a link or a file meanwhile
                    raise UnsafePathError(
                        f"{'/'.join([*where, segment])!r} changed while being written; try again"
                    ) from None
                raise
            os.close(fd)
            fd = child
            where.append(segment)
        return fd, where
    except BaseException:
        os.close(fd)
        raise


def _link_target(fd: int, name: str) -> str | None:
    """The target of `name` in folder `fd` when it is a symlink, else None."""
    try:
        info = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return None
    return os.readlink(name, dir_fd=fd) if stat.S_ISLNK(info.st_mode) else None


def _join(root: Path, where: list[str], target: str, shown: str) -> list[str]:
    """Root-relative segments of a link's target seen from folder `where`; outside the root refused."""
    if os.path.isabs(target):
        try:
            base: list[str] = list(Path(os.path.normpath(target)).relative_to(root).parts)
        except ValueError:
            raise UnsafePathError(f"{shown!r} leads outside the workspace through a symbolic link") from None
        return base
    segments = list(where)
    for part in PurePosixPath(target).parts:
        if part == "..":
            if not segments:
                raise UnsafePathError(f"{shown!r} leads outside the workspace through a symbolic link")
            segments.pop()
        elif part != ".":
            segments.append(part)
    return segments

"""Read a workspace file or folder so that no symlink swapped in mid-way can lead the read outside.

The same walk as writes (`confined`): from an open descriptor of the root, one segment at a time with
`O_NOFOLLOW`; a symlink met on the way is read and its target walked by hand, and only targets inside
the root are followed. The final name is opened with `O_NOFOLLOW` too, so a link swapped in after it
was looked at fails the open and the walk starts again (and then refuses the link). Size, type and
bytes all come from that one descriptor, never from the path again (docs/spec.md §14).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_module
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from reme.workspace.confined import CONFINED, MAX_LINKS, _join, _link_target, _walk
from reme.workspace.paths import UnsafePathError

_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO planted in the workspace must not hang the reader
    | getattr(os, "O_CLOEXEC", 0)
)


class TooLarge(ValueError):
    """A file over the byte cap of a read; `size` is what it holds (at least the cap + 1)."""

    def __init__(self, message: str, size: int) -> None:
        super().__init__(message)
        self.size = size


class LinkRefused(UnsafePathError):
    """A symlink on the way that leads outside the workspace (or, where links are not followed, any)."""


@contextlib.contextmanager
def opened(root: Path, relative: str, *, follow_links: bool = True) -> Iterator[int]:
    """A read-only descriptor of `root/relative` ("" is the root itself), reached without leaving `root`.

    Symlinks inside the root are followed by hand; one that leads outside raises LinkRefused, and so
    does any symlink when `follow_links` is off (the indexer never follows links). A missing path
    raises FileNotFoundError.
    """
    fd = _open(root, relative, follow_links)
    try:
        yield fd
    finally:
        os.close(fd)


def stat(root: Path, relative: str, *, follow_links: bool = True) -> os.stat_result:
    """`os.stat` of a workspace path, taken from its confined descriptor."""
    with opened(root, relative, follow_links=follow_links) as fd:
        return os.fstat(fd)


def read_bytes(
    root: Path, relative: str, max_bytes: int, *, follow_links: bool = True, what: str = "text files"
) -> tuple[bytes, os.stat_result]:
    """Bytes of a regular file (with its `stat`), read from its confined descriptor.

    Folders raise IsADirectoryError, other non-files FileNotFoundError, files over `max_bytes` TooLarge.
    """
    with opened(root, relative, follow_links=follow_links) as fd:
        info = os.fstat(fd)
        if stat_module.S_ISDIR(info.st_mode):
            raise IsADirectoryError(f"{relative!r} is a folder; use `list` to see what it holds")
        if not stat_module.S_ISREG(info.st_mode):
            raise FileNotFoundError(f"{relative!r} is not a regular file")
        if info.st_size > max_bytes:
            raise TooLarge(
                f"{relative!r} is {info.st_size} bytes, over the {max_bytes}-byte cap for {what}",
                info.st_size,
            )
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:  # grew since the fstat
            raise TooLarge(f"{relative!r} is over the {max_bytes}-byte cap for {what}", len(data))
        return data, info


def entries(root: Path, relative: str) -> list[tuple[str, os.stat_result, bool]]:
    """`(name, stat, is_link)` of every entry of a folder, sorted; a symlink entry reports its target's
    stat when the target lies inside the root and is left out otherwise (also when dangling)."""
    with opened(root, relative) as fd:
        if not stat_module.S_ISDIR(os.fstat(fd).st_mode):
            raise NotADirectoryError(f"{relative!r} is a file; use `stat` or `read`")
        names = sorted(os.listdir(fd))
        found = []
        for name in names:
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                link = stat_module.S_ISLNK(info.st_mode)
                if link:
                    info = stat(root, f"{relative}/{name}" if relative else name)
            except (OSError, UnsafePathError):
                continue  # removed meanwhile, dangling, or leading outside
            found.append((name, info, link))
        return found


def _open(root: Path, relative: str, follow_links: bool) -> int:
    if not CONFINED:
        return _open_plain(root, relative, follow_links)
    parts = list(PurePosixPath(relative).parts) if relative else []
    if not parts:
        return os.open(root, _READ_FLAGS)
    links = 0
    while True:
        if not follow_links:
            fd, where = _walk_no_links(root, parts[:-1], relative)
        else:
            try:
                fd, where = _walk(root, parts[:-1], create=False)
            except UnsafePathError as exc:
                raise LinkRefused(str(exc).replace("written", "read")) from None
        name = parts[-1]
        try:
            target = _link_target(fd, name)
            if target is None:
                try:
                    return os.open(name, _READ_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno != errno.ELOOP:
                        raise
                    # swapped for a link since `_link_target` looked: look again
        finally:
            os.close(fd)
        if not follow_links:
            raise LinkRefused(f"{relative!r} is a symbolic link; it is not followed here")
        links += 1
        if links > MAX_LINKS:
            raise LinkRefused(f"{relative!r}: too many levels of symbolic links")
        if target is not None:
            try:
                parts = _join(root, where, target, relative)
            except UnsafePathError as exc:
                raise LinkRefused(str(exc)) from None
            if not parts:
                return os.open(root, _READ_FLAGS)


def _walk_no_links(root: Path, folders: list[str], relative: str) -> tuple[int, list[str]]:
    """Open `root/folders...` refusing any symlink on the way."""
    fd = os.open(root, _READ_FLAGS)
    try:
        for segment in folders:
            try:
                child = os.open(segment, _READ_FLAGS | getattr(os, "O_DIRECTORY", 0), dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _link_target(fd, segment) is not None:
                    raise LinkRefused(
                        f"{relative!r} passes through a symbolic link; it is not followed here"
                    ) from None
                raise
            os.close(fd)
            fd = child
        return fd, list(folders)
    except BaseException:
        os.close(fd)
        raise


def _open_plain(root: Path, relative: str, follow_links: bool) -> int:
    """Where descriptors cannot be walked: check the resolved path, then open it (a race stays open)."""
    full = root / relative if relative else root
    resolved = full.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise LinkRefused(f"{relative!r} leads outside the workspace through a symbolic link")
    if not follow_links and resolved != full.absolute():
        raise LinkRefused(f"{relative!r} passes through a symbolic link; it is not followed here")
    return os.open(resolved, _READ_FLAGS)

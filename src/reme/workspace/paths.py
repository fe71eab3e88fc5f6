"""Path safety: the single gate every job passes a user-supplied path through (docs/spec.md §1, 14).

Job arguments are workspace-relative POSIX paths. Anything that could reach outside the workspace,
mean different things on different systems, or touch derived state is refused before any I/O.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path, PurePosixPath

MAX_PATH_CHARS = 1024
MAX_SEGMENT_BYTES = 255
MARKDOWN_SUFFIXES = (".md", ".markdown")
GIT_FOLDER = ".git"

_WINDOWS_RESERVED_NAMES = re.compile(r"^(?:con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(?:\..*)?$", re.IGNORECASE)
_WINDOWS_RESERVED_CHARS = set('<>:"|?*\\')
# Zero-width joiners stay allowed: Persian and Indic names and emoji sequences need them.
_JOINERS = {"\u200c", "\u200d"}


class UnsafePathError(ValueError):
    """A path argument that is not a safe workspace-relative POSIX path."""


class ProtectedPathError(UnsafePathError):
    """A write aimed at derived state (`metadata/`), which only reme itself maintains."""


def check_relative(path: object, *, allow_root: bool = False) -> str:
    """Validate a workspace-relative POSIX path and return it without a trailing slash.

    `allow_root` admits "" (the workspace itself) for jobs such as `list`.
    """
    if not isinstance(path, str):
        raise UnsafePathError(f"path must be a string, got {type(path).__name__}")
    shown = repr(path)
    if len(path) > MAX_PATH_CHARS:
        raise UnsafePathError(f"path is longer than {MAX_PATH_CHARS} characters")
    bad = next((ch for ch in path if ord(ch) < 32 or 127 <= ord(ch) < 160), None)
    if bad is not None:
        raise UnsafePathError(f"path {shown} contains the control character {bad!r}; remove it")
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise UnsafePathError(
            f"path {shown} is absolute; use a path relative to the workspace, e.g. 'daily/note.md'"
        )
    if "\\" in path:
        raise UnsafePathError(f"path {shown} contains a backslash; use '/' as the separator")
    trimmed = path[:-1] if path.endswith("/") and len(path) > 1 else path
    if trimmed in ("", "."):
        if allow_root:
            return ""
        raise UnsafePathError("path is empty; name a file inside the workspace")
    for segment in trimmed.split("/"):
        _check_segment(segment, shown)
    return trimmed


def _check_segment(segment: str, shown: str) -> None:
    if segment == "":
        raise UnsafePathError(f"path {shown} has an empty segment ('//'); remove it")
    if segment == "..":
        raise UnsafePathError(f"path {shown} contains '..'; paths may not leave their folder")
    if segment == ".":
        raise UnsafePathError(f"path {shown} contains a '.' segment; write the path without it")
    if segment.startswith("~"):
        raise UnsafePathError(f"path {shown} starts a segment with '~'; home-directory paths are not allowed")
    reserved = sorted(_WINDOWS_RESERVED_CHARS.intersection(segment))
    if reserved:
        raise UnsafePathError(
            f"path {shown} contains the reserved character(s) {' '.join(reserved)}; remove them"
        )
    if _WINDOWS_RESERVED_NAMES.match(segment):
        raise UnsafePathError(f"path {shown} uses the reserved device name {segment!r}; rename it")
    if segment.endswith((" ", ".")) or segment.startswith(" "):
        raise UnsafePathError(f"path {shown}: a name may not start with a space or end with a space or dot")
    if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
        raise UnsafePathError(f"path {shown} has a name longer than {MAX_SEGMENT_BYTES} bytes")


def check_segment(name: object, what: str = "name") -> str:
    """Validate a single file or folder name (no '/')."""
    if not isinstance(name, str) or not name:
        raise UnsafePathError(f"{what} must be a non-empty string")
    if "/" in name:
        raise UnsafePathError(f"{what} {name!r} may not contain '/'")
    check_relative(name)
    return name


def check_new_name(path: str) -> None:
    """Refuse invisible format characters (U+202E right-to-left override, U+200B zero-width space,
    line separators, ...) in a name about to be created: they make a file look like another one.

    Existing files keep working whatever their names, so they can still be read, moved and deleted.
    """
    bad = next(
        (ch for ch in path if ch not in _JOINERS and unicodedata.category(ch) in ("Cf", "Zl", "Zp")), None
    )
    if bad is not None:
        raise UnsafePathError(
            f"path {path!r} contains the invisible character U+{ord(bad):04X} "
            f"({unicodedata.name(bad, 'format character')}); remove it"
        )


def has_extension(path: str) -> bool:
    return PurePosixPath(path).suffix != ""


def is_markdown(path: str) -> bool:
    return path.lower().endswith(MARKDOWN_SUFFIXES)


def real(path: Path) -> Path:
    """`path` with every symlink resolved. A symlink loop is not an error here (`Path.resolve` raises
    RuntimeError on Python < 3.13): it stays where it stands, and opening it later fails clearly."""
    return Path(os.path.normpath(os.path.realpath(path)))


def within(root: Path, candidate: Path) -> bool:
    """Whether `candidate`, with every symlink resolved, still lies inside `root` (already resolved)."""
    return real(candidate).is_relative_to(root)


def in_git(relative: str) -> bool:
    """Whether a relative path lies in a `.git/` folder (any case, any depth): git runs its hooks and
    config as commands, so no job may write there."""
    return any(segment.casefold() == GIT_FOLDER for segment in relative.split("/"))


def first_segment(path: str) -> str:
    return path.split("/", 1)[0]

"""The workspace: its root, its configured folder names, safe path resolution and write locks (docs/spec.md §1)."""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from reme.workspace.atomic import TEMP_SUFFIX
from reme.workspace.locks import PathLocks
from reme.workspace.paths import (
    GIT_FOLDER,
    ProtectedPathError,
    UnsafePathError,
    check_new_name,
    check_relative,
    check_segment,
    first_segment,
    has_extension,
    in_git,
    real,
    within,
)

DEFAULT_DIRS: dict[str, str] = {
    "metadata": "metadata",
    "session": "session",
    "daily": "daily",
    "digest": "digest",
    "resource": "resource",
    "journal": "journal",
}
LOCKS_DIR = "locks"
# Folders reme writes only when it has something to record: a ReMe 0.4 workspace opens unchanged.
CREATED_ON_WRITE = frozenset({"journal"})


class Workspace:
    """A workspace folder; every user path goes through `resolve`, every write holds `lock`."""

    def __init__(self, root: Path, dirs: Mapping[str, str] | None = None, lock_timeout: float = 30.0) -> None:
        unknown = set(dirs or {}) - set(DEFAULT_DIRS)
        if unknown:
            raise ValueError(f"unknown workspace folder(s) {sorted(unknown)}; known: {sorted(DEFAULT_DIRS)}")
        self.dirs = {**DEFAULT_DIRS, **(dirs or {})}
        for role, name in self.dirs.items():
            check_segment(name, f"workspace folder name for {role!r}")
        if len(set(self.dirs.values())) != len(self.dirs):
            raise ValueError(f"workspace folder names must be distinct: {self.dirs}")
        self.root = Path(root).expanduser().resolve()
        self.locks = PathLocks(self.root / self.dirs["metadata"] / LOCKS_DIR, lock_timeout)

    def ensure_layout(self) -> list[str]:
        """Create the root and any missing configured folder; return what was created. Deletes nothing."""
        created = []
        self.root.mkdir(parents=True, exist_ok=True)
        for role, name in self.dirs.items():
            folder = self.root / name
            if not folder.exists() and role in CREATED_ON_WRITE:
                continue
            if not folder.exists():
                folder.mkdir()
                created.append(name)
            elif not folder.is_dir():
                raise NotADirectoryError(
                    f"workspace entry {name!r} exists but is not a folder; move it aside"
                )
        self.locks.lock_dir.mkdir(parents=True, exist_ok=True)
        return created

    def check(self, path: object, *, write: bool = False, allow_root: bool = False) -> str:
        """Validate a user path (never in `.git/`; `write` also refuses `metadata/`); returns the canonical
        relative path."""
        relative = check_relative(path, allow_root=allow_root)
        if write and self.is_metadata(relative):
            raise ProtectedPathError(
                f"{relative!r} is inside {self.dirs['metadata']}/, which holds derived state only; write elsewhere"
            )
        if in_git(relative):
            raise ProtectedPathError(
                f"{relative!r} is inside {GIT_FOLDER}/, which is git's alone (it runs its hooks and config, "
                "and its config may hold a remote's credentials); use a note outside it"
            )
        return relative

    def resolve(
        self, path: object, *, write: bool = False, markdown: bool = False, allow_root: bool = False
    ) -> Path:
        """Absolute path of a checked user path; symlinks may not lead outside the workspace.

        `markdown`: a path without extension that does not exist means `<path>.md`.
        """
        relative = self.relative_for(path, write=write, markdown=markdown, allow_root=allow_root)
        return self.absolute(relative, write=write)

    def relative_for(
        self, path: object, *, write: bool = False, markdown: bool = False, allow_root: bool = False
    ) -> str:
        """Canonical relative path of a user path, after the `.md` rule; checks like `resolve`."""
        relative = self.check(path, write=write, allow_root=allow_root)
        if markdown and relative and not has_extension(relative) and not _exists(self.root / relative):
            relative += ".md"
        self.absolute(relative, write=write)
        return relative

    def absolute(self, relative: str, *, write: bool = False) -> Path:
        """Absolute path of an already checked relative path, refusing symlink escapes.

        No symlink may lead into `.git/`; with `write`, not into `metadata/` either.
        """
        candidate = self.root / relative if relative else self.root
        if not within(self.root, candidate):
            raise UnsafePathError(f"{relative!r} leads outside the workspace through a symbolic link")
        if write and within(self.root / self.dirs["metadata"], candidate):
            raise ProtectedPathError(
                f"{relative!r} leads into {self.dirs['metadata']}/ through a symbolic link"
            )
        if in_git(self.relative(real(candidate))):
            raise ProtectedPathError(f"{relative!r} leads into {GIT_FOLDER}/ through a symbolic link")
        if write:
            self._check_parents(relative)
            if not _exists(candidate):
                check_new_name(relative)
                self._check_new_file(relative)
        return candidate

    def _check_new_file(self, relative: str) -> None:
        """Refuse a new name that reme's sweep would delete as a temporary file, or that differs from an
        existing one only in its Unicode form (`café` composed or decomposed): the two would look like one
        note. ASCII names are not compared (only rare compatibility letters could match them), so bulk
        writes into large folders stay cheap."""
        if relative.endswith(TEMP_SUFFIX):
            raise UnsafePathError(f"{relative!r} ends in {TEMP_SUFFIX}, reme's temporary files; rename it")
        folder = self.root
        for segment in relative.split("/"):
            if _exists(folder / segment):
                folder = folder / segment
                continue
            if segment.isascii():
                return
            wanted = unicodedata.normalize("NFC", segment)
            try:
                names = os.listdir(folder)
            except OSError:
                return
            twin = next(
                (n for n in names if n != segment and unicodedata.normalize("NFC", n) == wanted), None
            )
            if twin is not None:
                raise UnsafePathError(
                    f"{relative!r} looks the same as the existing {self.relative(folder / twin)!r} (the same "
                    "letters in another Unicode form); use that name"
                )
            return

    def _check_parents(self, relative: str) -> None:
        """A file cannot be created below something that is itself a file."""
        parent = self.root / relative
        while (parent := parent.parent) != self.root and self.root in parent.parents:
            if parent.is_file():
                raise NotADirectoryError(
                    f"{self.relative(parent)!r} is a file, so {relative!r} cannot be created inside it"
                )

    def relative(self, absolute: Path) -> str:
        """Workspace-relative POSIX path of a path under the root."""
        return absolute.relative_to(self.root).as_posix()

    def is_metadata(self, relative: str) -> bool:
        return first_segment(relative).casefold() == self.dirs["metadata"].casefold()

    @contextmanager
    def lock(self, *paths: str) -> Iterator[None]:
        """Serialise writers of these relative paths, across threads and processes. A path reached through
        a symlink also takes the lock of the file it leads to: writers of either name are one file's."""
        with self.locks.hold(*paths, *self._link_targets(paths)):
            yield

    def _link_targets(self, paths: tuple[str, ...]) -> set[str]:
        """Workspace-relative targets of those `paths` that symlinks lead elsewhere inside the workspace."""
        targets = set()
        for path in paths:
            resolved = real(self.root / path)
            if (
                resolved.is_relative_to(self.root)
                and resolved != self.root
                and self.relative(resolved) != path
            ):
                targets.add(self.relative(resolved))
        return targets

    def folder(self, role: str) -> str:
        """Configured name of a layout folder (`daily`, `digest`, ...)."""
        return self.dirs[role]


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()

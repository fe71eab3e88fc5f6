"""What the index covers (docs/spec.md §5.6): sources to include, folders and patterns to exclude.

By default every Markdown file of the workspace is indexed except under `metadata/` (derived
state), `journal/` (reme's own logs) and `resource/` (raw material, whose cards in `daily/` are
indexed), plus the session transcripts. `metadata/` is always excluded. An exclude entry is a
folder or file path, or a glob (`*`, `?`, `[`) matched against the whole path; a source that lies
inside an excluded folder (say `resource/` named as a source) is taken as wanted and not excluded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from reme.workspace.paths import check_relative

MARKDOWN_EXTENSIONS = (".md", ".markdown")
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Source:
    """A folder (`""`: the workspace root) whose files with these extensions are indexed."""

    folder: str
    extensions: tuple[str, ...]
    recursive: bool = True

    @property
    def prefix(self) -> str:
        return self.folder + "/" if self.folder else ""

    def describe(self) -> str:
        """`.md, .markdown files anywhere`, `.jsonl files in session/dialog/`: for messages."""
        where = f"{'under' if self.recursive else 'in'} {self.prefix}" if self.folder else "anywhere"
        return f"{', '.join(self.extensions)} files {where}"

    def admits(self, path: str) -> bool:
        if not path.startswith(self.prefix) or not path.lower().endswith(self.extensions):
            return False
        rest = path[len(self.prefix) :]
        if not self.recursive and "/" in rest:
            return False
        return not any(part.startswith(".") for part in rest.split("/"))


def _excludes(entry: str, path: str) -> bool:
    """Whether exclude `entry` covers `path` (a file or a folder)."""
    if _GLOB_CHARS.intersection(entry):
        parts = path.split("/")
        return any(fnmatchcase("/".join(parts[:n]), entry) for n in range(1, len(parts) + 1))
    folded, entry = path.casefold(), entry.casefold()  # as `Workspace.is_metadata`: case-blind file systems
    return folded == entry or folded.startswith(entry + "/")


@dataclass(frozen=True)
class Scope:
    """Sources minus exclusions: the one answer to "is this path indexed?"."""

    sources: tuple[Source, ...]
    exclude: tuple[str, ...]

    def _applies(self, entry: str, source: Source) -> bool:
        """An exclusion does not cut away a source configured inside it."""
        return not (source.folder and _excludes(entry, source.folder))

    def source_of(self, path: str) -> Source | None:
        """The first source that admits `path` and does not exclude it."""
        for source in self.sources:
            if source.admits(path) and not any(
                _excludes(entry, path) for entry in self.exclude if self._applies(entry, source)
            ):
                return source
        return None

    def admits(self, path: str) -> bool:
        return self.source_of(path) is not None

    def prunes(self, folder: str, source: Source) -> bool:
        """Whether walking `source` may skip the folder `folder` entirely."""
        return any(_excludes(entry, folder) for entry in self.exclude if self._applies(entry, source))

    def ignores(self, path: str) -> bool:
        """Whether no source can see `path` or anything below it (the watcher drops such events)."""
        return not any(
            (source.folder == path or path.startswith(source.prefix) or source.prefix.startswith(path + "/"))
            and not self.prunes(path, source)
            for source in self.sources
        )

    def watched_folders(self) -> list[str]:
        """The source folders to watch, without those inside another one."""
        folders = sorted({source.folder for source in self.sources})
        return [f for f in folders if not any(o != f and (not o or f.startswith(o + "/")) for o in folders)]

    def reason(self, path: str) -> str | None:
        """Why `path` is not indexed, for a user who just wrote it; None when it is."""
        if self.admits(path):
            return None
        for entry in self.exclude:
            if _excludes(entry, path) and any(
                s.admits(path) and self._applies(entry, s) for s in self.sources
            ):
                return f"{entry!r} is excluded from the index (components.index.exclude)"
        indexed = "; ".join(source.describe() for source in self.sources)
        return f"only these are indexed: {indexed} (components.index.sources)"

    def describe(self) -> dict[str, Any]:
        """Settings the catalog content depends on (a change means a rebuild)."""
        return {"sources": [s.__dict__ for s in self.sources], "exclude": list(self.exclude)}


def default_scope(dirs: Mapping[str, str]) -> Scope:
    """Every Markdown file but `metadata/`, `journal/` and `resource/`, and `<session>/dialog/*.jsonl`."""
    sources = (
        Source("", MARKDOWN_EXTENSIONS),
        Source(f"{dirs['session']}/dialog", (".jsonl",), recursive=False),
    )
    return Scope(sources, _with_metadata(dirs, [dirs.get("journal", "journal"), dirs["resource"]]))


def configured_scope(
    dirs: Mapping[str, str], sources: Iterable[Mapping[str, Any]] | None, exclude: Iterable[str] | None
) -> Scope:
    """The scope from `components.index.sources` / `exclude`; either left out takes its default."""
    default = default_scope(dirs)
    chosen = tuple(_source(raw) for raw in sources) if sources else default.sources
    if exclude is None:
        return Scope(chosen, default.exclude)
    if isinstance(exclude, str) or not all(isinstance(entry, str) and entry for entry in exclude):
        raise ValueError("index exclude must be a list of paths or globs, like ['journal', 'drafts/*.md']")
    entries = [
        entry.strip("/") if _GLOB_CHARS.intersection(entry) else check_relative(entry) for entry in exclude
    ]
    return Scope(chosen, _with_metadata(dirs, entries))


def _with_metadata(dirs: Mapping[str, str], entries: Iterable[str]) -> tuple[str, ...]:
    """Derived state is never indexed, whatever the configuration says."""
    return tuple(dict.fromkeys([dirs["metadata"], *entries]))


def _source(raw: Mapping[str, Any]) -> Source:
    if not isinstance(raw, Mapping):
        raise ValueError(
            f"index source must be a mapping like {{folder: notes, extensions: ['.md']}}, not {raw!r}"
        )
    folder = raw.get("folder")
    folder = "" if folder in ("", "/", ".") else check_relative(folder)
    extensions = tuple(str(ext).lower() for ext in raw.get("extensions") or ())
    if not extensions or not all(ext.startswith(".") for ext in extensions):
        raise ValueError(f"index source {folder!r}: extensions must be a non-empty list like ['.md']")
    return Source(folder, extensions, bool(raw.get("recursive", True)))

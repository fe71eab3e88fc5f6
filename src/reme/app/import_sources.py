"""Reading an import's source from the host: one file or one folder, bounded, text where text is expected.

A ChatGPT export may also be given as the zip file it is downloaded as. The import jobs are local only (`enable_serve: false`): a served job must never read host paths a
client names. Everything here refuses before the importer parses anything, so a refused source
writes nothing: a missing path, a folder where a file is expected, a file over `max_bytes`, bytes
that are not UTF-8 text, more files than `max_files`, and a symbolic link leading out of the folder.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from reme.errors import ReMeError
from reme.workspace import textio
from reme.workspace.paths import is_markdown


@dataclass(frozen=True)
class FolderLimits:
    max_files: int = 5000
    max_file_bytes: int = 20_000_000
    max_total_bytes: int = 200_000_000


@dataclass(frozen=True)
class SourceFile:
    """A file of a source folder: its POSIX path relative to the folder and its bytes."""

    relative: str
    data: bytes


def source_path(path: str) -> Path:
    """The absolute host path of a source (`~` expanded), refusing an empty one."""
    if not isinstance(path, str) or not path.strip():
        raise ReMeError("source must name a file or folder on this machine")
    if "\x00" in path:
        raise ReMeError("source contains a NUL character; give the path of a file or folder on this machine")
    return Path(os.path.expanduser(path.strip())).absolute()


def decode_text(data: bytes, shown: str) -> str:
    """UTF-8 text (a leading BOM dropped); binary or undecodable bytes are refused."""
    try:
        return textio.decode_text(data, shown).removeprefix("\ufeff")
    except ValueError as exc:
        raise ReMeError(f"{exc}; give the exported text file") from None


def read_text_file(path: Path, max_bytes: int) -> str:
    """The text of one source file, within `max_bytes`."""
    if not path.exists():
        raise ReMeError(f"{path} does not exist")
    if not path.is_file():
        raise ReMeError(f"{path} is not a file")
    size = path.stat().st_size
    if size > max_bytes:
        raise ReMeError(f"{path} is {size} bytes, over the limit of {max_bytes} (max_bytes)")
    with path.open("rb") as file:
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ReMeError(f"{path} grew over the limit of {max_bytes} bytes while being read")
    return decode_text(data, str(path))


def read_zip_member(archive: Path, name: str, max_bytes: int) -> str:
    """The text of the member called `name` (at any depth) of a zip file, read within `max_bytes`
    whatever the archive's headers claim (a zip bomb stops at the cap)."""
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = [
                i for i in bundle.infolist() if i.filename.rsplit("/", 1)[-1] == name and not i.is_dir()
            ]
            if not members:
                raise ReMeError(f"{archive} holds no {name}; is it the right export?")
            member = min(members, key=lambda info: info.filename.count("/"))
            with bundle.open(member) as file:
                data = file.read(max_bytes + 1)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ReMeError(f"{archive} cannot be read as a zip file: {exc}") from None
    if len(data) > max_bytes:
        raise ReMeError(f"{name} in {archive} is over the limit of {max_bytes} bytes (max_bytes)")
    return decode_text(data, f"{name} in {archive}")


def _inside(root: Path, candidate: Path) -> bool:
    resolved = candidate.resolve()
    return resolved == root or root in resolved.parents


def read_folder(
    root: Path, limits: FolderLimits, workspace: Path | None = None
) -> tuple[list[SourceFile], list[dict[str, str]]]:
    """(files, skipped) of a folder tree; dot-folders (`.obsidian/`, `.git/`, `.trash/`) and dot-files are left out.

    A folder inside `workspace` is refused (it is there already), and a workspace inside the folder
    is left out (importing it would copy the workspace into itself, deeper at each import).
    """
    if not root.is_dir():
        raise ReMeError(f"{root} is not a folder" if root.exists() else f"{root} does not exist")
    real = root.resolve()
    inner = workspace.resolve() if workspace is not None else None
    if inner is not None and _inside(inner, real):
        raise ReMeError(f"{root} is inside the workspace {inner} already; it needs no import")
    files: list[SourceFile] = []
    skipped: list[dict[str, str]] = []
    total = 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        here = Path(folder)
        for name in sorted(dirs):
            entry = here / name
            if entry.is_symlink():
                if not _inside(real, entry):
                    raise ReMeError(f"{entry} is a symbolic link leading out of {root}; nothing was imported")
                skipped.append(
                    {"item": entry.relative_to(root).as_posix(), "reason": "symbolic link to a folder"}
                )
        if inner is not None and inner.parent == here.resolve() and inner.name in dirs:
            skipped.append(
                {"item": (here / inner.name).relative_to(root).as_posix(), "reason": "the workspace itself"}
            )
            dirs.remove(inner.name)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (here / d).is_symlink())
        for name in sorted(names):
            entry = here / name
            relative = entry.relative_to(root).as_posix()
            if name.startswith("."):
                continue
            if entry.is_symlink() and not _inside(real, entry):
                raise ReMeError(f"{entry} is a symbolic link leading out of {root}; nothing was imported")
            if not entry.is_file():
                skipped.append({"item": relative, "reason": "not a regular file"})
                continue
            size = entry.stat().st_size
            if size > limits.max_file_bytes:
                skipped.append(
                    {"item": relative, "reason": f"{size} bytes, over max_file_bytes {limits.max_file_bytes}"}
                )
                continue
            total += size
            if len(files) >= limits.max_files or total > limits.max_total_bytes:
                raise ReMeError(
                    f"{root} holds more than {limits.max_files} files or {limits.max_total_bytes} bytes "
                    "(max_files, max_total_bytes); import a smaller folder or raise the limits"
                )
            files.append(SourceFile(relative, entry.read_bytes()))
    return files, skipped


def allowed_reference(target: Path, roots: tuple[Path, ...], claude_home: Path | None = None) -> Path:
    """A file a memory file imports (`@path`), if it may come in: inside one of `roots` (the memory
    file's folder, `~/.claude/`), no dot-file (`.env`, `.npmrc`), a Markdown file, and inside
    `claude_home` (`~/.claude/`) only `CLAUDE.md`, `rules/` and the auto-memory Markdown — a cloned
    repository's CLAUDE.md must not pull `~/.ssh/id_rsa`, `~/.claude/settings.json` (tokens), the
    prompt history or session transcripts into a searchable workspace."""
    if not any(_inside(root, target) for root in roots):
        raise ReMeError(
            f"{target} is outside {' and '.join(str(root) for root in roots)}; import it on its own if you mean it"
        )
    root = next(root for root in roots if _inside(root, target))
    if any(part.startswith(".") for part in target.resolve().relative_to(root).parts):
        raise ReMeError(
            f"{target} is a hidden file (it may hold secrets); import it on its own if you mean it"
        )
    if not is_markdown(target.name):
        raise ReMeError(f"{target} is not a Markdown file; only Markdown is followed from an @ reference")
    if claude_home is not None and _inside(claude_home, target):
        parts = target.resolve().relative_to(claude_home.resolve()).parts
        memory = len(parts) == 4 and parts[0] == "projects" and parts[2] == "memory"
        if not (parts == ("CLAUDE.md",) or parts[0] == "rules" or memory):
            raise ReMeError(
                f"{target} is not CLAUDE.md, a rule (rules/) or auto-memory Markdown (projects/*/memory/) "
                f"of {claude_home}; nothing else there is followed from an @ reference"
            )
    return target

"""`import_codex` and the transcript half of `import_claude_code`: past agent sessions from this machine.

A `.jsonl` file or a folder of them (by default every project: `~/.claude/projects`,
`~/.codex/sessions`) is listed here, each transcript read only when its turn comes and bounded by
`max_file_bytes`; `reme.pipelines.imports.sessions` saves them through the capture path the hooks use.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

from reme.app.captures import open_regular
from reme.app.import_sources import source_path
from reme.app.jobs import JobContext
from reme.app.port import AppPort
from reme.app.progress import reporter
from reme.app.registry import register_step
from reme.errors import ReMeError
from reme.jsontypes import parse_json
from reme.pipelines.imports.sessions import SessionFile, import_sessions

WHERE = {
    "claude_code": "~/.claude/projects/<project>/<session>.jsonl",
    "codex": "~/.codex/sessions/YYYY/MM/DD/",
}


def transcript_files(entry: Path, max_files: int, source: str = "claude_code") -> list[Path]:
    """`entry` itself when it is a `.jsonl` file, else the `.jsonl` files under it (dot-folders and
    symbolic links and what is not a regular file left out: a FIFO would never end), sorted; at
    most `max_files`."""
    if entry.is_file():
        return [entry] if entry.suffix.lower() == ".jsonl" else []
    if entry.exists() and not entry.is_dir():
        raise ReMeError(f"{entry} is not a .jsonl file or a folder; sessions are kept in {WHERE[source]}")
    if not entry.is_dir():
        raise ReMeError(f"{entry} does not exist; sessions are kept in {WHERE[source]}")
    found: list[Path] = []
    for root, dirs, names in os.walk(entry):
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(root, d))
        )
        for name in sorted(names):
            path = Path(root) / name
            if name.lower().endswith(".jsonl") and not path.is_symlink() and path.is_file():
                found.append(path)
                if len(found) > max_files:
                    raise ReMeError(
                        f"{entry} holds more than {max_files} transcripts (max_files); import one project "
                        "folder at a time or raise the limit"
                    )
    return found


def _read(path: Path, max_file_bytes: int) -> SessionFile:
    """The file's entries; a file over `max_file_bytes`, or one that grew past it while read, is a problem."""
    shown = str(path)
    try:
        with open_regular(path) as handle:
            status = os.fstat(handle.fileno())
            raw = handle.read(max_file_bytes + 1) if status.st_size <= max_file_bytes else b""
    except OSError as exc:
        return SessionFile(shown, [], problem=f"unreadable: {exc.strerror or exc}")
    if status.st_size > max_file_bytes or len(raw) > max_file_bytes:
        size = max(status.st_size, len(raw))
        return SessionFile(shown, [], problem=f"{size} bytes, over max_file_bytes ({max_file_bytes})")
    entries: list[object] = []
    unreadable = 0
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            entries.append(parse_json(line))
        except ValueError:
            unreadable += 1
    return SessionFile(shown, entries, unreadable)


async def run_session_import(
    ctx: JobContext, entry: Path, files: list[Path], source: str, settings: dict[str, int]
) -> None:
    readers = [partial(_read, path, settings["max_file_bytes"]) for path in files]
    port = AppPort(ctx.app)
    common: dict[str, Any] = {
        "source": source,
        "origin": str(entry),
        "max_message_chars": settings["max_message_chars"],
    }
    with reporter().counting("importing sessions", total=len(files)) as update:
        report = await import_sessions(port, readers, progress=update, **common)
    ctx.response.answer = report.answer()
    ctx.response.metadata.update(report.metadata())


@register_step("import_codex")
async def import_codex(
    ctx: JobContext, max_files: int = 20000, max_file_bytes: int = 200_000_000, max_message_chars: int = 8000
) -> None:
    entry = source_path(ctx.params["source"])
    files = transcript_files(entry, max_files, "codex")
    if not files:
        raise ReMeError(f"no Codex rollouts (.jsonl) in {entry}; Codex keeps them in {WHERE['codex']}")
    settings = {"max_file_bytes": max_file_bytes, "max_message_chars": max_message_chars}
    await run_session_import(ctx, entry, files, "codex", settings)

"""Steps of the import jobs and `export_digest`: read the source on this machine, build, write, report.

The import jobs are local (`enable_serve: false`), since they read host paths; the source is read
and checked here (`reme.app.import_sources`), parsed into an `ImportBatch` by the format's module in
`reme.pipelines`, and written by `reme.pipelines.imports.writing.write_import`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from reme.app.import_sources import (
    FolderLimits,
    allowed_reference,
    decode_text,
    read_folder,
    read_text_file,
    read_zip_member,
    source_path,
)
from reme.app.jobs import JobContext
from reme.app.port import AppPort
from reme.app.registry import register_step, settings_of
from reme.app.steps.session_imports import run_session_import, transcript_files
from reme.errors import ReMeError
from reme.pipelines.capture.redaction import redact
from reme.pipelines.digest import export
from reme.pipelines.imports.chatgpt import KIND as CHATGPT
from reme.pipelines.imports.chatgpt import chatgpt_batch
from reme.pipelines.imports.claude import KIND as CLAUDE_CODE
from reme.pipelines.imports.claude import Loader, claude_batch, collect_documents
from reme.pipelines.imports.mem0 import KIND as MEM0
from reme.pipelines.imports.mem0 import mem0_batch
from reme.pipelines.imports.obsidian import KIND as OBSIDIAN
from reme.pipelines.imports.obsidian import obsidian_batch
from reme.pipelines.imports.writing import (
    ImportBatch,
    ImportReport,
    import_folder,
    queue_distillation,
    relocated,
    write_import,
)
from reme.pipelines.memory.auto_memory import session_path
from reme.pipelines.memory.card_names import slugify
from reme.workspace.paths import check_new_name, check_segment, is_markdown

CONVERSATIONS = "conversations.json"


def _json_source(path: Path, max_bytes: int, member: str | None = None) -> Any:
    """Parsed JSON of a source file (or of `member` inside a zip file)."""
    if member is not None and path.suffix.lower() == ".zip":
        text = read_zip_member(path, member, max_bytes)
    else:
        text = read_text_file(path, max_bytes)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReMeError(
            f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise ReMeError(f"{path} nests its JSON too deeply to be an export") from None


async def _run_import(
    ctx: JobContext, kind: str, origin: Path, build: Callable[[AppPort, str], ImportBatch]
) -> tuple[AppPort, ImportBatch, ImportReport]:
    port = AppPort(ctx.app)
    folder = import_folder(port, ctx.params["folder"])
    try:
        batch = build(port, folder)
    except ValueError as exc:
        raise ReMeError(f"{origin}: {exc}; nothing was imported") from None
    report = await write_import(port, batch, kind=kind, origin=str(origin), dry_run=ctx.params["dry_run"])
    ctx.response.answer = report.answer()
    ctx.response.metadata.update(report.metadata())
    return port, batch, report


@register_step("import_claude_code")
async def import_claude_code(
    ctx: JobContext,
    max_bytes: int = 5_000_000,
    max_items: int = 50,
    max_sessions: int = 20000,
    max_session_bytes: int = 200_000_000,
    max_message_chars: int = 8000,
) -> None:
    entry = source_path(ctx.params["source"])
    transcripts = entry.is_dir() or entry.suffix.lower() == ".jsonl"
    sessions = transcript_files(entry, max_sessions) if transcripts else []
    if sessions:  # transcripts (~/.claude/projects/...): saved as the hooks save them
        settings = {"max_file_bytes": max_session_bytes, "max_message_chars": max_message_chars}
        await run_session_import(ctx, entry, sessions, "claude_code", settings)
        return
    if entry.is_dir():  # `.claude/rules/`, an auto-memory folder: each Markdown file in it
        files, skipped = read_folder(entry, FolderLimits(max_items, max_bytes, max_items * max_bytes))
        entries = [
            (str(entry.resolve() / f.relative), redact(decode_text(f.data, f.relative)))
            for f in files
            if is_markdown(f.relative)
        ]
        if not entries:
            raise ReMeError(
                f"{entry} holds no Claude Code transcripts (.jsonl) and no memory files (.md); "
                "sessions are kept in ~/.claude/projects/<project>/, memory in CLAUDE.md files"
            )
        home = entry.resolve()
    elif entry.is_file() and not is_markdown(entry.name):  # never one note of claude.ai's raw JSON
        raise ReMeError(
            f"{entry} is not a Claude Code memory file (Markdown) or session transcript (.jsonl); "
            "a claude.ai export (conversations.json) is not a format reme imports"
        )
    else:
        entries, skipped, home = (
            [(str(entry.resolve()), redact(read_text_file(entry, max_bytes)))],
            [],
            entry.resolve().parent,
        )
    claude_home = (Path.home() / ".claude").resolve()
    roots = (home, claude_home)

    def load(base: str, ref: str) -> tuple[str, str]:
        target = (Path(base).parent / Path(ref).expanduser()).resolve()
        return str(target), redact(read_text_file(allowed_reference(target, roots, claude_home), max_bytes))

    reader: Loader = load
    documents, followed = collect_documents(entries, reader, max_documents=max_items)
    skipped += followed

    def build(_port: AppPort, folder: str) -> ImportBatch:
        batch = claude_batch(documents, folder, ctx.params.get("name"))
        batch.skipped += skipped
        return batch

    await _run_import(ctx, CLAUDE_CODE, entry, build)


@register_step("import_chatgpt")
async def import_chatgpt(
    ctx: JobContext, max_bytes: int = 200_000_000, max_items: int = 10_000, max_message_chars: int = 8000
) -> None:
    source = source_path(ctx.params["source"])
    if source.is_dir():
        source = source / CONVERSATIONS  # the unzipped export folder
    data = _json_source(source, max_bytes, member=CONVERSATIONS)  # or the zip as downloaded

    def build(port: AppPort, folder: str) -> ImportBatch:
        return chatgpt_batch(
            data,
            port.tz,
            folder=folder,
            session_folder=port.folder("session"),
            max_items=max_items,
            max_message_chars=max_message_chars,
        )

    port, batch, report = await _run_import(ctx, CHATGPT, source, build)
    if ctx.params["queue_distillation"] and not ctx.params["dry_run"]:
        changed = set(report.created + report.updated)
        fresh = [t for t in batch.transcripts if session_path(port, t.session_id) in changed]
        ctx.response.metadata["pending_cards"] = await queue_distillation(port, fresh)


@register_step("import_mem0")
async def import_mem0(
    ctx: JobContext, max_bytes: int = 50_000_000, max_items: int = 50_000, max_memory_chars: int = 20_000
) -> None:
    source = source_path(ctx.params["source"])
    data = _json_source(source, max_bytes)

    def build(_port: AppPort, folder: str) -> ImportBatch:
        return mem0_batch(data, folder=folder, max_items=max_items, max_memory_chars=max_memory_chars)

    await _run_import(ctx, MEM0, source, build)


@register_step("import_obsidian", settings=FolderLimits)
async def import_obsidian(ctx: JobContext, **settings: object) -> None:
    vault = source_path(ctx.params["source"])
    files, skipped = read_folder(
        vault, settings_of(FolderLimits, "import_obsidian", settings), workspace=Path(ctx.app.workspace_dir)
    )
    name = _folder_name(ctx.params.get("name") or vault.resolve().name)
    port = AppPort(ctx.app)
    existing = [entry.path for entry in await port.list_files("", recursive=True)]
    destination = f"{import_folder(port, ctx.params['folder'])}/{name}"
    planned = {f.relative: f"{destination}/{f.relative}" for f in files if is_markdown(f.relative)}
    moved = await relocated(port, str(vault), planned)

    def build(_port: AppPort, folder: str) -> ImportBatch:
        batch = obsidian_batch(
            [(f.relative, f.data) for f in files],
            destination=f"{folder}/{name}",
            workspace_paths=existing,
            moved=moved,
        )
        batch.skipped = skipped + batch.skipped
        return batch

    await _run_import(ctx, OBSIDIAN, vault, build)


def _folder_name(name: str) -> str:
    """The vault's folder name as written (`Obsidian Help`), or its slug when the workspace would
    refuse it as a folder name."""
    try:
        check_new_name(check_segment(name.strip(), "vault name"))
        return name.strip()
    except ValueError:
        return slugify(name) or "vault"


@register_step("export_digest", settings=export.ExportLimits)
async def export_digest(ctx: JobContext, **settings: object) -> None:
    port = AppPort(ctx.app)
    found = await export.digest_files(
        port,
        bucket=ctx.params.get("bucket"),
        limits=settings_of(export.ExportLimits, "export_digest", settings),
    )
    texts = found.texts
    nodes = [export.node_of(path, text) for path, text in texts.items()]
    exported_at = datetime.now(ctx.app.tz).isoformat(timespec="seconds")
    if ctx.params["format"] == "json":
        ctx.response.answer = export.as_json(nodes, exported_at)
    else:
        ctx.response.answer = export.as_bundle(nodes, texts, exported_at, found.skipped)
    ctx.response.metadata.update(
        {"format": ctx.params["format"], "paths": list(texts), "skipped": found.skipped}
    )

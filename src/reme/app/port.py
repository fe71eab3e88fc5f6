"""`AppPort`: the application seen through `reme.pipelines.port.MemoryPort`.

File operations run as reme's own jobs, so pipelines get the same path checks, locks and index updates
as every other client; a failed job becomes a `ReMeError` with the job's message. Pipeline state lives
under `metadata/` (derived, rebuildable) and is written atomically.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from filelock import FileLock, Timeout

from reme.app.components.digest import buckets_of
from reme.app.components.index import link_source
from reme.app.components.llm import LLMComponent
from reme.app.components.workspace import workspace_of
from reme.errors import Conflict, LLMUnavailable, ReMeError
from reme.pipelines.port import Embeddings, FileEntry, FileText, ModelHandle
from reme.workspace import confined_read, digest_writing, writing
from reme.workspace.atomic import atomic_write
from reme.workspace.links import LinkSource
from reme.workspace.paths import UnsafePathError, check_segment, is_markdown
from reme.workspace.transaction import Change, commit
from reme.workspace.writing import ConflictError

if TYPE_CHECKING:
    from reme.app.jobs import JobHost, Response
    from reme.llm.tools import ToolSpec

log = logging.getLogger(__name__)
SYNC_BATCH = 200  # paths per index update of a batch save
OUTPUT_MODES_STATE = "llm_output_modes"  # metadata/<this>.json: the output mode each endpoint and model takes
_LOCKS: WeakKeyDictionary[Any, dict[str, asyncio.Lock]] = WeakKeyDictionary()


class AppPort:
    """`MemoryPort` over an `Application`: file jobs for files, `metadata/` for state, the llm component for models."""

    def __init__(self, app: JobHost) -> None:
        self.app = app
        self.tz = app.tz
        self.run_job = app.run
        self.workspace = workspace_of(app)

    def today(self) -> date:
        return self.app.today()

    def folder(self, role: str) -> str:
        return self.workspace.folder(role)

    def exists(self, path: str) -> bool:
        return (self.workspace.root / path).is_file()

    def check_path(self, path: str) -> str:
        self.workspace.resolve(path)
        return path

    async def _call(self, job: str, **params: Any) -> Response:
        response = await self.app.run(job, **params)
        if not response.success:
            error = Conflict if response.metadata.get("conflict") else ReMeError
            raise error(f"{job} failed: {response.answer}", dict(response.metadata))
        return response

    # files ---------------------------------------------------------------------------------------

    async def load(self, path: str) -> FileText | None:
        if not self.exists(path):
            return None
        meta = (await self._call("load", path=path)).metadata
        return FileText(path, str(meta.get("content") or ""), str(meta["sha256"]), float(meta["mtime"]))

    async def save(self, path: str, content: str, *, expected_sha256: str | None = None) -> FileText:
        params: dict[str, Any] = {"path": path, "content": content}
        if expected_sha256:
            params["expected_sha256"] = expected_sha256
        meta = (await self._call("save", **params)).metadata
        return FileText(path, content, str(meta["sha256"]), float(meta["mtime"]))

    async def read_bytes(self, path: str, *, max_bytes: int) -> bytes:
        relative = self.workspace.relative_for(path)
        try:
            return confined_read.read_bytes(self.workspace.root, relative, max_bytes)[0]
        except confined_read.TooLarge as exc:
            raise ReMeError(f"too large: {exc.size} bytes > max_bytes {max_bytes}") from None

    async def save_batch(self, files: Sequence[tuple[str, str, str | None]]) -> None:
        links = link_source(self.app)
        written: list[str] = []

        def put() -> None:
            deferred = _DeferredSync(links)
            for path, content, expected in files:
                try:
                    written.append(
                        writing.save(self.workspace, deferred, path, content, None, expected)["path"]
                    )
                except ConflictError as exc:
                    raise Conflict(str(exc), {"conflict": True, **exc.current}) from None

        try:
            await asyncio.to_thread(put)
        finally:  # what was written is indexed, also when a conflict stopped the batch
            for start in range(0, len(written), SYNC_BATCH):
                await asyncio.to_thread(links.sync_paths, written[start : start + SYNC_BATCH])

    async def save_bytes(self, path: str, data: bytes) -> None:
        relative = self.workspace.relative_for(path, write=True)
        if is_markdown(relative):
            raise ReMeError(f"{relative!r} is Markdown; save it as text")
        target = self.workspace.absolute(relative, write=True)

        def put() -> None:
            with self.workspace.lock(relative):
                atomic_write(target, data, self.workspace.root)

        await asyncio.to_thread(put)

    async def write(self, path: str, content: str, *, name: str, metadata: dict[str, Any]) -> None:
        await self._call("write", path=path, content=content, name=name, metadata=metadata)

    async def delete(self, path: str) -> None:
        await self._call("delete", path=path)

    async def commit(self, changes: Sequence[Change]) -> list[dict[str, Any]]:
        links = link_source(self.app)
        done = await asyncio.to_thread(commit, self.workspace, links, list(changes))
        for entry in done:
            entry["inbound"] = (
                [] if entry["sha256"] else await asyncio.to_thread(links.inbound, entry["path"])
            )
        return done

    async def move(self, src: str, dst: str) -> None:
        await self._call("move", src=src, dst=dst)

    async def list_files(
        self, folder: str, *, extensions: tuple[str, ...] = (), recursive: bool = False
    ) -> list[FileEntry]:
        if not (self.workspace.root / folder).is_dir():
            return []
        params: dict[str, Any] = {"path": folder, "recursive": recursive}
        if extensions:
            params["extensions"] = list(extensions)
        entries = (await self._call("list", **params)).metadata.get("entries", [])
        files = [
            FileEntry(str(e["path"]), int(e["size"]), float(e["mtime"]))
            for e in entries
            if e.get("type") == "file"
        ]
        return sorted(files, key=lambda entry: entry.path)

    async def list_dirs(self, folder: str) -> list[str]:
        relative = self.workspace.relative_for(folder, allow_root=True)
        try:  # through confined descriptors, as `list`: a folder swapped for a link lists nothing
            children = confined_read.entries(self.workspace.root, relative)
        except (OSError, UnsafePathError):
            return []
        return sorted(
            name for name, info, _link in children if stat.S_ISDIR(info.st_mode) and not name.startswith(".")
        )

    # digest drafts -------------------------------------------------------------------------------

    async def draft_node(self, path: str, content: str, *, description: str | None, name: str | None) -> str:
        buckets = [bucket.name for bucket in buckets_of(self.app)]
        try:
            _, text = digest_writing.draft_node(self.workspace, buckets, path, content, name, description)
        except ValueError as exc:
            raise ReMeError(str(getattr(exc, "message", None) or exc)) from None
        return text

    async def draft_edit(self, path: str, text: str, old: str, new: str, *, conserve: bool) -> str:
        try:
            relative = self.workspace.check(path, write=True)
            edited, _ = digest_writing.draft_edit(self.workspace, relative, text, old, new, conserve=conserve)
        except ValueError as exc:
            raise ReMeError(str(getattr(exc, "message", None) or exc)) from None
        return edited

    # front matter --------------------------------------------------------------------------------

    async def front_matter(self, path: str) -> dict[str, Any]:
        return dict((await self._call("frontmatter_read", path=path)).metadata.get("front_matter") or {})

    async def update_front_matter(self, path: str, metadata: dict[str, Any]) -> dict[str, Any]:
        response = await self._call("frontmatter_update", path=path, metadata=metadata)
        return dict(response.metadata.get("front_matter") or {})

    async def delete_front_matter(self, path: str, keys: list[str]) -> None:
        await self._call("frontmatter_delete", path=path, keys=keys)

    # daily notes ---------------------------------------------------------------------------------

    async def create_card(self, day: str, name: str, session_id: str | None = None) -> tuple[str, bool]:
        params: dict[str, Any] = {"date": day, "name": name}
        if session_id is not None:
            params["session_id"] = session_id
        meta = (await self._call("daily_create", **params)).metadata
        return str(meta["path"]), bool(meta.get("created"))

    async def refresh_day(self, day: str) -> None:
        await self._call("daily_reindex", date=day)

    # recall --------------------------------------------------------------------------------------

    async def node_search(
        self, query: str, *, limit: int, keyword_only: bool = False, as_of: str | None = None
    ) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"query": query, "limit": limit}
        if keyword_only:
            params["keyword_only"] = True
        if as_of:
            params["as_of"] = as_of
        return list((await self._call("node_search", **params)).metadata.get("results") or [])

    async def search(
        self, query: str, *, limit: int, path_prefix: str = "", as_of: str | None = None
    ) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"query": query, "limit": limit, "expand_links": False}
        if path_prefix:
            params["path_prefix"] = path_prefix
        if as_of:
            params["as_of"] = as_of
        return list((await self._call("search", **params)).metadata.get("results") or [])

    async def traverse(self, paths: Sequence[str], *, depth: int, direction: str = "both") -> dict[str, Any]:
        meta = (await self._call("traverse", path=list(paths), depth=depth, direction=direction)).metadata
        return {"nodes": list(meta.get("nodes") or []), "edges": list(meta.get("edges") or [])}

    async def embed(self, texts: Sequence[str]) -> Embeddings | None:
        component = self.app.components.get("index")
        embedder = getattr(getattr(component, "service", None), "embedder", None)
        if embedder is None:
            return None

        def run() -> Embeddings:
            stamp = embedder.stamp
            vectors = embedder.embed_passages(list(texts)) if texts else []
            return Embeddings(f"{stamp.model}@{stamp.dimension}", [list(map(float, row)) for row in vectors])

        try:
            return await asyncio.to_thread(run)
        except Exception:
            log.warning(
                "embedding %d text(s) failed; falling back to lexical similarity", len(texts), exc_info=True
            )
            return None

    # state and concurrency -----------------------------------------------------------------------

    def keyed_lock(self, key: str) -> asyncio.Lock:
        return _LOCKS.setdefault(self.app, {}).setdefault(key, asyncio.Lock())

    def exclusive(self, name: str, kind: str | None = None) -> AbstractAsyncContextManager[None]:
        return _exclusive(self.workspace.locks.lock_dir, check_segment(name, "lock name"), kind or name)

    def _state_path(self, name: str) -> Path:
        return self.workspace.root / self.folder("metadata") / f"{check_segment(name, 'state name')}.json"

    def read_state(self, name: str) -> dict[str, Any]:
        try:
            data = json.loads(self._state_path(name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write_state(self, name: str, data: dict[str, Any]) -> None:
        atomic_write(self._state_path(name), json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True))

    # agents --------------------------------------------------------------------------------------

    def agent_tools(self, jobs: Sequence[str]) -> list[ToolSpec]:
        specs = []
        for name in jobs:
            job = self.app.jobs.get(name)
            if job is None or job.agent is None:
                raise ReMeError(
                    f"job {name!r} is not usable as an agent tool (no `agent:` block in its config)"
                )
            specs.append(job.agent)
        return specs

    # models --------------------------------------------------------------------------------------

    def model(self, role: str) -> ModelHandle:
        llm = self.app.components.get("llm")
        if not isinstance(llm, LLMComponent):
            raise LLMUnavailable("no LLM configured: the `llm` component is not enabled (components.llm)")
        try:
            missing = llm.missing(role)
            settings = llm.settings_for(role)
        except ValueError as invalid:
            raise LLMUnavailable(f"invalid LLM setting: {invalid} (see docs/llm.md)") from None
        if missing:
            raise LLMUnavailable(f"no LLM configured: set {missing} (see docs/llm.md)")
        settings = replace(settings, modes_file=str(self._state_path(OUTPUT_MODES_STATE)))
        return ModelHandle(settings, lambda variables: llm.model(role, variables))


class _DeferredSync:
    """A `LinkSource` that leaves `sync_paths` to the caller, so a batch of writes syncs the index once."""

    def __init__(self, links: LinkSource) -> None:
        self.links = links

    def inbound(self, path: str) -> list[dict[str, str]]:
        return self.links.inbound(path)

    def ending_with(self, suffix: str) -> list[str]:
        return self.links.ending_with(suffix)

    def sync_paths(self, paths: list[str]) -> None:
        pass


@asynccontextmanager
async def _exclusive(lock_dir: Path, name: str, kind: str | None = None) -> AsyncIterator[None]:
    """Hold `<lock_dir>/<name>` without waiting; the holder's kind of run, pid and start time sit beside it."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_dir / name), timeout=0)
    holder = lock_dir / f"{name}.holder.json"
    try:
        lock.acquire()
    except Timeout:
        held_by, since = name, ""
        try:
            info = json.loads(holder.read_text(encoding="utf-8"))
            since = f" since {info['since']} (process {info['pid']})"
            held_by = str(info.get("kind") or name)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
        raise ReMeError(
            f"a {held_by} run is in progress{since} (it holds the {name!r} lock); try again when it has finished"
        ) from None
    try:
        since = datetime.fromtimestamp(time.time(), UTC).isoformat(timespec="seconds")
        atomic_write(holder, json.dumps({"pid": os.getpid(), "since": since, "kind": kind or name}))
        yield
    finally:
        holder.unlink(missing_ok=True)
        lock.release()

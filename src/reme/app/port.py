"""The pipeline ports (`reme.pipelines.port`) over the workspace and over a running application.

`WorkspacePort` implements the file roles (`Notes`, `Bulk`, `Cards`, `Digest`) and `RunState` with
the very workspace functions the file jobs' steps call (`reme.workspace.{reading,writing,moving,
daily,digest_writing,transaction}`), so a pipeline's writes get the same path checks, locks, caps
and link updates as any other client's; an error keeps the job's wording (`"<job> failed: ..."`).
`AppPort` adds what needs the application: recall through the index jobs, models, agent tools.
Pipeline state lives under `metadata/` (derived, rebuildable) and is written atomically.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from datetime import UTC, date, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from weakref import WeakKeyDictionary

from filelock import FileLock, Timeout

from reme.app.components.digest import buckets_of
from reme.app.components.index import link_source
from reme.app.components.llm import LLMComponent
from reme.app.components.workspace import workspace_of
from reme.errors import Conflict, LLMUnavailable, ReMeError
from reme.jsontypes import JSONObject, JSONValue
from reme.pipelines.port import (
    Committed,
    Embeddings,
    FileEntry,
    FileText,
    GraphEdge,
    GraphNode,
    ModelHandle,
    Neighbourhood,
    NodeHit,
    PassageHit,
    Statement,
)
from reme.workspace import confined_read, daily, digest_writing, moving, reading, writing
from reme.workspace.atomic import atomic_write
from reme.workspace.confined import CONFINED, confined_parent
from reme.workspace.dates import check_date
from reme.workspace.layout import Workspace
from reme.workspace.links import LinkSource
from reme.workspace.paths import UnsafePathError, check_segment, is_markdown, real
from reme.workspace.textio import Limits
from reme.workspace.transaction import Change, commit
from reme.workspace.writing import ConflictError

if TYPE_CHECKING:
    from reme.app.jobs import JobHost, JobSpec, Response
    from reme.llm.tools import ToolSpec

log = logging.getLogger(__name__)
SYNC_BATCH = 200  # paths per index update of a batch save
OUTPUT_MODES_STATE = "llm_output_modes"  # metadata/<this>.json: the output mode each endpoint and model takes
_LOCKS: WeakKeyDictionary[object, dict[str, asyncio.Lock]] = WeakKeyDictionary()
T = TypeVar("T")
# What a failing file job answers with (`reme.app.jobs.USER_ERRORS`): the same errors, the same words here.
_USER_ERRORS = (ValueError, FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError)


async def _as_job(job: str, run: Callable[[], T]) -> T:
    """Run a workspace function in a thread; its failure as the `job` would report it (`ReMeError`)."""
    try:
        return await asyncio.to_thread(run)
    except ConflictError as exc:
        raise Conflict(f"{job} failed: {exc}", {"conflict": True, **exc.current}) from None
    except ReMeError as exc:
        raise type(exc)(f"{job} failed: {exc.message}", exc.metadata) from None
    except _USER_ERRORS as exc:
        raise ReMeError(f"{job} failed: {exc or type(exc).__name__}") from None


async def _refusing(run: Callable[[], T]) -> T:
    """Run a workspace function in a thread; a user error as a `ReMeError` in its own words (typed
    refusals such as `Conflict` and `ConservationViolation` go up as they are)."""
    try:
        return await asyncio.to_thread(run)
    except ConflictError as exc:
        raise Conflict(str(exc), {"conflict": True, **exc.current}) from None
    except ReMeError:
        raise
    except _USER_ERRORS as exc:
        raise ReMeError(str(exc) or type(exc).__name__) from None


class WorkspacePort:
    """The file roles and run state over a `Workspace`; `limits` caps each job's text (its step settings)."""

    def __init__(
        self,
        workspace: Workspace,
        links: Callable[[], LinkSource],
        *,
        tz: tzinfo,
        today: Callable[[], date],
        buckets: Callable[[], list[str]],
        limits: Callable[[str], Limits] = lambda _job: Limits(),
        lock_owner: object = None,
    ) -> None:
        self.workspace = workspace
        self._links = links
        self.tz = tz
        self._today = today
        self._buckets = buckets
        self._limits = limits
        self._lock_owner = lock_owner if lock_owner is not None else self

    def today(self) -> date:
        return self._today()

    def folder(self, role: str) -> str:
        return self.workspace.folder(role)

    def exists(self, path: str) -> bool:
        return (self.workspace.root / path).is_file()

    def check_path(self, path: str) -> str:
        self.workspace.resolve(path)
        return path

    def real_path(self, path: str) -> str:
        return self.workspace.relative(real(self.workspace.resolve(path)))

    # notes ---------------------------------------------------------------------------------------

    async def load(self, path: str) -> FileText | None:
        if not self.exists(path):
            return None
        found = await _as_job("load", lambda: reading.load(self.workspace, path, self._limits("load")))
        return FileText(path, str(found["content"]), str(found["sha256"]), float(found["mtime"]))

    async def save(self, path: str, content: str, *, expected_sha256: str | None = None) -> FileText:
        saved = await _as_job(
            "save",
            lambda: writing.save(
                self.workspace,
                self._links(),
                path,
                content,
                None,
                expected_sha256 or None,
                self._limits("save"),
            ),
        )
        return FileText(path, content, str(saved["sha256"]), float(saved["mtime"]))

    async def delete(self, path: str) -> None:
        await _as_job("delete", lambda: moving.delete(self.workspace, self._links(), path))

    async def move(self, src: str, dst: str) -> None:
        await _as_job("move", lambda: moving.move(self.workspace, self._links(), src, dst))

    async def commit(self, changes: Sequence[Change]) -> list[Committed]:
        links = self._links()
        done = await asyncio.to_thread(commit, self.workspace, links, list(changes))
        out = []
        for entry in done:
            path, sha = str(entry["path"]), entry["sha256"]
            inbound = [] if sha else await asyncio.to_thread(links.inbound, path)
            out.append(Committed(path, sha, tuple(link["source_path"] for link in inbound)))
        return out

    async def list_files(
        self, folder: str, *, extensions: tuple[str, ...] = (), recursive: bool = False
    ) -> list[FileEntry]:
        if not (self.workspace.root / folder).is_dir():
            return []
        listed = await _as_job(
            "list", lambda: reading.list_dir(self.workspace, folder, recursive, list(extensions) or None)
        )
        files = [
            FileEntry(str(e["path"]), int(e["size"]), float(e["mtime"]))
            for e in listed["entries"]
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

    async def remove_empty_folder(self, folder: str) -> bool:
        relative = self.workspace.relative_for(folder, write=True)
        if not relative or relative in self.workspace.dirs.values():
            return False

        def remove() -> bool:
            try:
                with self.workspace.lock(relative):
                    if not CONFINED:
                        (self.workspace.root / relative).rmdir()
                        return True
                    with confined_parent(self.workspace.root, relative, through_link=False) as (parent, name):
                        os.rmdir(name, dir_fd=parent)
            except (OSError, UnsafePathError):  # not empty, gone, not a folder: left as it is
                return False
            return True

        return await asyncio.to_thread(remove)

    # bulk ----------------------------------------------------------------------------------------

    async def read_bytes(self, path: str, *, max_bytes: int) -> bytes:
        relative = self.workspace.relative_for(path)
        try:
            return confined_read.read_bytes(self.workspace.root, relative, max_bytes)[0]
        except confined_read.TooLarge as exc:
            raise ReMeError(f"too large: {exc.size} bytes > max_bytes {max_bytes}") from None

    async def save_batch(self, files: Sequence[tuple[str, str, str | None]]) -> None:
        links = self._links()
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

    # cards ---------------------------------------------------------------------------------------

    async def write(self, path: str, content: str, *, name: str, metadata: Mapping[str, object]) -> None:
        await _as_job(
            "write",
            lambda: writing.write(
                self.workspace,
                self._links(),
                path,
                content,
                name,
                None,
                dict(metadata),
                self._limits("write"),
            ),
        )

    async def front_matter(self, path: str) -> JSONObject:
        found = await _as_job(
            "frontmatter_read",
            lambda: reading.frontmatter_read(self.workspace, path, self._limits("frontmatter_read")),
        )
        return dict(found.get("front_matter") or {})

    async def update_front_matter(self, path: str, metadata: JSONObject) -> JSONObject:
        updated = await _as_job(
            "frontmatter_update",
            lambda: writing.frontmatter_update(
                self.workspace, self._links(), path, metadata, self._limits("frontmatter_update")
            ),
        )
        return dict(updated.get("front_matter") or {})

    async def delete_front_matter(self, path: str, keys: list[str]) -> None:
        await _as_job(
            "frontmatter_delete",
            lambda: writing.frontmatter_delete(
                self.workspace, self._links(), path, keys, self._limits("frontmatter_delete")
            ),
        )

    async def create_card(self, day: str, name: str, session_id: str | None = None) -> tuple[str, bool]:
        made = await _as_job(
            "daily_create",
            lambda: daily.create(
                self.workspace, self._links(), check_date(day, self.today()), name, session_id
            ),
        )
        return str(made["path"]), bool(made.get("created"))

    async def refresh_day(self, day: str) -> None:
        await _as_job(
            "daily_reindex",
            lambda: daily.reindex(self.workspace, self._links(), check_date(day, self.today())),
        )

    # digest --------------------------------------------------------------------------------------

    async def write_node(
        self, path: str, content: str, *, name: str | None = None, description: str | None = None
    ) -> FileText:
        limits = self._limits("digest_write")
        await _refusing(
            lambda: digest_writing.digest_write(
                self.workspace, self._links(), self._buckets(), path, content, name, description, None, limits
            ),
        )
        return await self._loaded(path)

    async def edit_node(self, path: str, old: str, new: str, *, expected_sha256: str | None) -> FileText:
        limits = self._limits("digest_edit")
        await _refusing(
            lambda: digest_writing.digest_edit(
                self.workspace, self._links(), path, old, new, expected_sha256, limits
            )
        )
        return await self._loaded(path)

    async def _loaded(self, path: str) -> FileText:
        found = await self.load(self.workspace.check(path))
        if found is None:
            raise ReMeError(f"{path} is gone right after it was written")
        return found

    async def draft_node(self, path: str, content: str, *, description: str | None, name: str | None) -> str:
        try:
            _, text = digest_writing.draft_node(
                self.workspace, self._buckets(), path, content, name, description
            )
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

    # run state -----------------------------------------------------------------------------------

    def keyed_lock(self, key: str) -> asyncio.Lock:
        return _LOCKS.setdefault(self._lock_owner, {}).setdefault(key, asyncio.Lock())

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

    def write_state(self, name: str, data: JSONObject) -> None:
        atomic_write(self._state_path(name), json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True))


class AppPort(WorkspacePort):
    """Every role over the application (`JobHost`): its workspace and link source, its index jobs, its llm component."""

    def __init__(self, app: JobHost) -> None:
        super().__init__(
            workspace_of(app),
            lambda: link_source(app),
            tz=app.tz,
            today=app.today,
            buckets=lambda: [bucket.name for bucket in buckets_of(app)],
            limits=lambda job: _step_limits(app, job),
            lock_owner=app,
        )
        self.app = app
        self.run_job = app.run

    # recall --------------------------------------------------------------------------------------

    async def _index(self, job: str, **params: object) -> Response:
        response = await self.app.run(job, **params)
        if not response.success:
            raise ReMeError(f"{job} failed: {response.answer}", dict(response.metadata))
        return response

    async def node_search(
        self, query: str, *, limit: int, keyword_only: bool = False, as_of: str | None = None
    ) -> list[NodeHit]:
        params: dict[str, object] = {"query": query, "limit": limit}
        if keyword_only:
            params["keyword_only"] = True
        if as_of:
            params["as_of"] = as_of
        found = (await self._index("node_search", **params)).metadata.get("results") or []
        return [node_hit(hit) for hit in found]

    async def search(
        self, query: str, *, limit: int, path_prefix: str = "", as_of: str | None = None
    ) -> list[PassageHit]:
        params: dict[str, object] = {"query": query, "limit": limit, "expand_links": False}
        if path_prefix:
            params["path_prefix"] = path_prefix
        if as_of:
            params["as_of"] = as_of
        found = (await self._index("search", **params)).metadata.get("results") or []
        return [passage_hit(hit) for hit in found]

    async def traverse(self, paths: Sequence[str], *, depth: int, direction: str = "both") -> Neighbourhood:
        meta = (await self._index("traverse", path=list(paths), depth=depth, direction=direction)).metadata
        return neighbourhood(meta.get("nodes") or [], meta.get("edges") or [])

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

    # models --------------------------------------------------------------------------------------

    def agent_tools(self, jobs: Sequence[str]) -> list[ToolSpec]:
        return agent_tools_of(self.app.jobs, jobs)

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
        return ModelHandle(settings, lambda variables: llm.model(role, dict(variables)))


def _step_limits(app: JobHost, job: str) -> Limits:
    """The text caps a file job's step settings give (its config), so a pipeline's writes meet the same caps."""
    spec = app.jobs.get(job)
    for step in spec.steps if spec is not None else ():
        fields = {
            k: int(v)
            for k, v in step.settings.items()
            if k in Limits.__dataclass_fields__ and isinstance(v, int)
        }
        if fields:
            return Limits(**fields)
    return Limits()


def agent_tools_of(jobs: Mapping[str, JobSpec], names: Sequence[str]) -> list[ToolSpec]:
    """The agent tool specs of `names` from job declarations; `ReMeError` for a job agents may not call."""
    specs = []
    for name in names:
        job = jobs.get(name)
        if job is None or job.agent is None:
            raise ReMeError(f"job {name!r} is not usable as an agent tool (no `agent:` block in its config)")
        specs.append(job.agent)
    return specs


def _text(value: JSONValue) -> str | None:
    return value if isinstance(value, str) else None


def _statements(raw: JSONValue) -> tuple[Statement, ...]:
    entries = raw if isinstance(raw, list) else []
    return tuple(
        Statement(str(s.get("statement", "")), str(s.get("valid_range", "")))
        for s in entries
        if isinstance(s, dict)
    )


def node_hit(raw: JSONObject) -> NodeHit:
    """A `node_search` result as the port's typed value."""
    left_out = raw.get("left_out")
    return NodeHit(
        path=str(raw["path"]),
        score=float(raw.get("score") or 0.0),  # type: ignore[arg-type]
        name=_text(raw.get("name")),
        description=_text(raw.get("description")),
        statements=_statements(raw.get("statements")),
        superseded=_statements(raw.get("superseded")),
        left_out=left_out if isinstance(left_out, int) else 0,
    )


def passage_hit(raw: JSONObject) -> PassageHit:
    """A `search` result as the port's typed value."""
    return PassageHit(
        path=str(raw["path"]),
        start_line=int(raw.get("start_line") or 0),  # type: ignore[arg-type]
        end_line=int(raw.get("end_line") or 0),  # type: ignore[arg-type]
        score=float(raw.get("score") or 0.0),  # type: ignore[arg-type]
        text=str(raw.get("text") or ""),
        name=_text(raw.get("name")),
        description=_text(raw.get("description")),
        valid=raw.get("valid") is not False,
        valid_range=_text(raw.get("valid_range")),
        reason=_text(raw.get("reason")),
    )


def neighbourhood(nodes: list[JSONObject], edges: list[JSONObject]) -> Neighbourhood:
    """A `traverse` result as the port's typed value."""
    return Neighbourhood(
        tuple(
            GraphNode(
                str(n["path"]), _text(n.get("name")), _text(n.get("description")), bool(n.get("exists"))
            )
            for n in nodes
        ),
        tuple(
            GraphEdge(
                str(e["source"]),
                str(e["target"]),
                _text(e.get("resolved")),
                _text(e.get("predicate")),
                _text(e.get("anchor")),
            )
            for e in edges
        ),
    )


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

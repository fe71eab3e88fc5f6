"""`InMemoryPort`: every pipeline role without an application, for tests of pipeline logic.

No application is started, no index is built and no model server is asked: recall (`node_search`,
`search`, `traverse`) is computed in memory from the files each time, the model is the scripted
test double playing `script` (mutable: a test can give the next run new turns), and agent tools
run in process against the same workspace functions their jobs call, behind the same parameter
schemas (the packaged job declarations). Files sit in a plain workspace folder written by the
production workspace functions (`reme.app.port.WorkspacePort`), so a test asserts files and
records on disk as before. Not imported by production code.

    port = InMemoryPort(tmp_path / "ws", script=[...], today=date(2026, 6, 20))
    outcome = await auto_dream(port, settings, ...)
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import date, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from reme.app.config import load_config
from reme.app.jobs import JobSpec, ParameterError, Response, build_jobs, validate_params
from reme.app.port import WorkspacePort, agent_tools_of, node_hit
from reme.app.registry import load_plugins
from reme.errors import LLMUnavailable, ReMeError
from reme.index import as_of as as_of_marks
from reme.index.sources import default_scope
from reme.index.tokenizer import Tokenizer
from reme.jsontypes import JSONObject, JSONValue
from reme.llm.settings import resolve_settings
from reme.pipelines.port import (
    Embeddings,
    GraphEdge,
    GraphNode,
    ModelHandle,
    Neighbourhood,
    NodeHit,
    PassageHit,
)
from reme.workspace import daily, digest_writing, frontmatter, reading, writing
from reme.workspace.buckets import Bucket, parse_buckets, write_buckets_page
from reme.workspace.dates import parse_date
from reme.workspace.digest import is_node
from reme.workspace.layout import Workspace
from reme.workspace.links import ScanLinks
from reme.workspace.resolving import resolve
from reme.workspace.textio import Limits
from reme.workspace.wikilinks import parse_links

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from reme.llm.tools import ToolSpec

NO_SCRIPT = "components.llm.script (the scripted backend has no turns)"  # as the scripted backend says it
ToolResult = tuple[str, JSONObject]  # the answer and metadata of a tool call


@cache
def _config() -> tuple[dict[str, JobSpec], dict[str, object], tuple[Bucket, ...]]:
    """The packaged job declarations, llm settings and buckets (read once per test process)."""
    load_plugins()  # the steps the declarations name must be known to build them
    config = load_config(load_env_file=False)
    llm = (config.get("components") or {}).get("llm") or {}
    return build_jobs(config["jobs"]), dict(llm), parse_buckets((config.get("digest") or {}).get("buckets"))


class _IndexedLinks(ScanLinks):
    """Links read from the files the index would hold (not `journal/`, `resource/`, `metadata/`), as
    the application's index answers them."""

    def __init__(self, workspace: Workspace) -> None:
        super().__init__(workspace)
        self.scope = default_scope(workspace.dirs)

    def inbound(self, path: str) -> list[dict[str, str]]:
        return [link for link in super().inbound(path) if self.scope.admits(link["source_path"])]

    def ending_with(self, suffix: str) -> list[str]:
        return [path for path in super().ending_with(suffix) if self.scope.admits(path)]


@cache
def _tokenizer() -> Tokenizer:
    return Tokenizer()


def _bm25(
    query: list[str], documents: Mapping[str, list[str]], k1: float = 1.2, b: float = 0.75
) -> dict[str, float]:
    """BM25 scores (above 0) of the documents' token lists for the query's tokens."""
    count = len(documents) or 1
    average = sum(len(tokens) for tokens in documents.values()) / count or 1.0
    frequency = Counter(term for tokens in documents.values() for term in set(tokens))
    scores = {}
    for path, tokens in documents.items():
        counts = Counter(tokens)
        score = 0.0
        for term in query:
            tf = counts.get(term, 0)
            if tf:
                idf = math.log(1 + (count - frequency[term] + 0.5) / (frequency[term] + 0.5))
                score += idf * tf / (tf + k1 * (1 - b + b * len(tokens) / average))
        if score > 0:
            scores[path] = score
    return scores


class InMemoryPort(WorkspacePort):
    """`MemoryPort` over a workspace folder, without an application (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        *,
        script: Sequence[Mapping[str, JSONValue]] = (),
        tz: str = "UTC",
        today: date | None = None,
        buckets: Sequence[Bucket] | None = None,
        dirs: Mapping[str, str] | None = None,
    ) -> None:
        workspace = Workspace(root, dirs)
        workspace.ensure_layout()
        links = _IndexedLinks(workspace)
        self.scope = links.scope
        jobs, self._llm, default_buckets = _config()
        self.buckets = tuple(buckets) if buckets is not None else default_buckets
        write_buckets_page(workspace, self.buckets)
        zone = ZoneInfo(tz)
        super().__init__(
            workspace,
            lambda: links,
            tz=zone,
            today=lambda: today or datetime.now(zone).date(),
            buckets=lambda: [bucket.name for bucket in self.buckets],
            limits=lambda _job: Limits(),
        )
        self.root = workspace.root
        self.jobs = jobs
        self.script: list[Mapping[str, JSONValue]] = list(script)
        self.tool_calls: list[tuple[str, dict[str, object]]] = []  # every tool call an agent made, in order
        self.run_job = self._run_tool

    # models --------------------------------------------------------------------------------------

    def model(self, role: str) -> ModelHandle:
        if not self.script:
            raise LLMUnavailable(f"no LLM configured: set {NO_SCRIPT} (see docs/llm.md)")
        settings = resolve_settings({**self._llm, "backend": "scripted"}, role)

        def build(variables: Mapping[str, object]) -> Model:
            from reme.llm.testing.scripted import scripted_model

            return scripted_model(self.script, dict(variables))

        return ModelHandle(settings, build)

    def agent_tools(self, jobs: Sequence[str]) -> list[ToolSpec]:
        return agent_tools_of(self.jobs, jobs)

    async def _run_tool(self, job: str, /, **params: object) -> Response:
        """An agent's tool call: checked against the job's schema, then run in process; never raises."""
        self.tool_calls.append((job, dict(params)))
        spec = self.jobs.get(job)
        handler = _TOOLS.get(job)
        if spec is None or handler is None:
            return Response(False, f"the in-memory port has no tool {job!r}", {})
        try:
            checked = validate_params(spec, dict(params))
            answer, metadata = await handler(self, checked)
        except ParameterError as exc:
            return Response(False, str(exc), {})
        except ReMeError as exc:
            return Response(False, exc.message, dict(exc.metadata))
        except (ValueError, OSError) as exc:
            return Response(False, str(exc) or type(exc).__name__, {})
        return Response(True, answer, metadata)

    # recall, from the files --------------------------------------------------------------------

    def _markdown(self, prefix: str) -> list[tuple[str, str]]:
        """(path, text) of every Markdown file under `prefix` the index would hold, sorted."""
        base = self.root / prefix if prefix else self.root
        found = []
        for file in sorted(base.rglob("*.md")) if base.is_dir() else []:
            relative = file.relative_to(self.root).as_posix()
            if self.scope.admits(relative):
                found.append((relative, file.read_text(encoding="utf-8")))
        return found

    async def node_search(
        self, query: str, *, limit: int, keyword_only: bool = False, as_of: str | None = None
    ) -> list[NodeHit]:
        """Digest nodes by the BM25 score of their body (k1 1.2, b 0.75, the index's analyser), best first."""
        if not query.strip():
            raise ReMeError("node_search failed: query is empty; give some words to search for")
        digest = self.folder("digest")
        day = parse_date(as_of) if as_of else self.today()
        documents = {
            path: frontmatter.parse(text) for path, text in self._markdown(digest) if is_node(path, digest)
        }
        scores = _bm25(
            _tokenizer().tokenize(query), {p: _tokenizer().tokenize(d.body) for p, d in documents.items()}
        )
        hits = []
        for path, score in scores.items():
            document = documents[path]
            marks = as_of_marks.node_validity(document.body, day, explicit=as_of is not None)
            meta = document.metadata
            found = {
                "path": path,
                "score": score,
                "name": meta.get("name"),
                "description": meta.get("description"),
            }
            hits.append(node_hit({**found, **marks}))  # the same reading as AppPort's of the job's results
        return sorted(hits, key=lambda hit: (-hit.score, hit.path))[:limit]

    async def search(
        self, query: str, *, limit: int, path_prefix: str = "", as_of: str | None = None
    ) -> list[PassageHit]:
        """One passage per Markdown file (its whole body) by BM25 score, best first."""
        documents = {
            path: frontmatter.parse(text)
            for path, text in self._markdown(path_prefix.rstrip("/"))
            if path.startswith(path_prefix)
        }
        tokens = {path: _tokenizer().tokenize(document.body) for path, document in documents.items()}
        hits = []
        for path, score in _bm25(_tokenizer().tokenize(query), tokens).items():
            document, meta = documents[path], documents[path].metadata
            name, description = _str(meta.get("name")), _str(meta.get("description"))
            start = len(document.head.splitlines()) + 1  # the body's lines in the file
            end = start + max(len(document.body.splitlines()) - 1, 0)
            hits.append(PassageHit(path, start, end, score, document.body, name, description))
        return sorted(hits, key=lambda hit: (-hit.score, hit.path))[:limit]

    async def traverse(self, paths: Sequence[str], *, depth: int, direction: str = "both") -> Neighbourhood:
        """The link graph of the workspace's Markdown files, walked `depth` links from `paths`."""
        files = dict(self._markdown(""))
        ending = lambda suffix: [p for p in files if p == suffix or p.endswith(f"/{suffix}")]  # noqa: E731
        edges = [
            GraphEdge(
                source,
                link.target,
                resolve(link.target, files.__contains__, ending),
                link.predicate,
                link.anchor,
            )
            for source, text in files.items()
            for link in parse_links(text)
        ]
        seen, frontier = list(dict.fromkeys(paths)), set(paths)
        for _ in range(depth):
            reached = set()
            for edge in edges:
                if direction in ("out", "both") and edge.source in frontier and edge.resolved:
                    reached.add(edge.resolved)
                if direction in ("in", "both") and edge.resolved in frontier:
                    reached.add(edge.source)
            frontier = reached - set(seen)
            seen += sorted(frontier)
        nodes = []
        for path in seen:
            meta = frontmatter.parse(files[path]).metadata if path in files else {}
            nodes.append(
                GraphNode(path, _str(meta.get("name")), _str(meta.get("description")), path in files)
            )
        kept = set(seen)
        return Neighbourhood(
            tuple(nodes),
            tuple(e for e in edges if e.source in kept and (e.resolved in kept or e.resolved is None)),
        )

    async def embed(self, texts: Sequence[str]) -> Embeddings | None:
        return None  # vectors are off: pipelines fall back to lexical similarity


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


# agent tools: the workspace functions their job steps call, answered as the steps answer ---------


def _p(params: dict[str, object], key: str) -> str:
    return str(params.get(key) or "")


def _opt(params: dict[str, object], key: str) -> str | None:
    value = params.get(key)
    return value if isinstance(value, str) else None


def _int(params: dict[str, object], key: str) -> int | None:
    value = params.get(key)
    return value if isinstance(value, int) else None


async def _in_thread(run: Callable[[], dict[str, object]]) -> dict[str, object]:
    return await asyncio.to_thread(run)


async def _read(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    result = await _in_thread(
        lambda: reading.read(port.workspace, _p(p, "path"), _int(p, "start_line"), _int(p, "end_line"))
    )
    return str(result.pop("text")), _json(result)


async def _load(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    result = await _in_thread(lambda: reading.load(port.workspace, _p(p, "path")))
    return str(result["content"]), _json(result)


async def _list(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    raw = p.get("extensions")
    extensions = [str(e) for e in raw] if isinstance(raw, list) else None
    result = await _in_thread(
        lambda: reading.list_dir(port.workspace, _p(p, "path"), bool(p.get("recursive")), extensions)
    )
    entries = result["entries"] if isinstance(result["entries"], list) else []
    return "\n".join(str(e["path"]) for e in entries), _json(result)


async def _frontmatter_read(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    result = await _in_thread(lambda: reading.frontmatter_read(port.workspace, _p(p, "path")))
    return str(result.get("error") or result["front_matter"]), _json(result)


async def _frontmatter_update(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    metadata = p.get("metadata") if isinstance(p.get("metadata"), dict) else {}
    result = await _in_thread(
        lambda: writing.frontmatter_update(port.workspace, port._links(), _p(p, "path"), dict(metadata or {}))  # type: ignore[call-overload]
    )
    return f"Updated the front matter of {result['path']}", _json(result)


async def _write(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    metadata = p.get("metadata")
    result = await _in_thread(
        lambda: writing.write(
            port.workspace,
            port._links(),
            _p(p, "path"),
            _p(p, "content"),
            _opt(p, "name"),
            _opt(p, "description"),
            dict(metadata) if isinstance(metadata, dict) else None,
        )
    )
    return f"Wrote {result['path']}", _json(result)


async def _edit(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    result = await _in_thread(
        lambda: writing.edit(port.workspace, port._links(), _p(p, "path"), _p(p, "old"), _p(p, "new"))
    )
    return f"Replaced {result['count']} occurrence(s) in {result['path']}", _json(result)


async def _digest_write(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    result = await _in_thread(
        lambda: digest_writing.digest_write(
            port.workspace,
            port._links(),
            [bucket.name for bucket in port.buckets],
            _p(p, "path"),
            _p(p, "content"),
            _opt(p, "name"),
            _opt(p, "description"),
        )
    )
    return f"Created {result['path']}", _json(result)


async def _digest_edit(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    result = await _in_thread(
        lambda: digest_writing.digest_edit(
            port.workspace,
            port._links(),
            _p(p, "path"),
            _p(p, "old"),
            _p(p, "new"),
            _opt(p, "expected_sha256"),
        )
    )
    return f"Replaced {result['count']} occurrence(s) in {result['path']}", _json(result)


async def _daily_list(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    day = _opt(p, "date") or port.today().isoformat()
    notes = await asyncio.to_thread(daily.list_notes, port.workspace, day)
    return "\n".join(f"{n['path']}: {n['name']} — {n['description']}" for n in notes), {"date": day}


async def _node_search(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    hits = await port.node_search(_p(p, "query"), limit=_int(p, "limit") or 10, as_of=_opt(p, "as_of"))
    lines = [f"- {hit.path} — {hit.name or ''}: {hit.description or ''}" for hit in hits]
    results: list[object] = [
        {"path": h.path, "score": h.score, "name": h.name, "description": h.description} for h in hits
    ]
    return "\n".join(lines) or "no node found", _json({"results": results})


async def _search(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    hits = await port.search(
        _p(p, "query"), limit=_int(p, "limit") or 10, path_prefix=_p(p, "path_prefix"), as_of=_opt(p, "as_of")
    )
    lines = [f"{hit.path}:{hit.start_line}-{hit.end_line}\n{hit.text}" for hit in hits]
    return "\n\n".join(lines) or "no passage found", {"results": [hit.path for hit in hits]}


async def _traverse(port: InMemoryPort, p: dict[str, object]) -> ToolResult:
    raw = p.get("path")
    seeds = [raw] if isinstance(raw, str) else [str(s) for s in raw] if isinstance(raw, list) else []
    found = await port.traverse(seeds, depth=_int(p, "depth") or 1, direction=_p(p, "direction") or "both")
    lines = [f"- {node.path}{'' if node.exists else ' (missing)'}" for node in found.nodes]
    lines += [f"  {edge.source} -> {edge.target}" for edge in found.edges]
    return "\n".join(lines), {"nodes": [node.path for node in found.nodes]}


def _json(result: Mapping[str, object]) -> JSONObject:
    """A workspace function's result dict as tool metadata (its values are JSON already)."""
    return dict(result)  # type: ignore[arg-type]


_TOOLS: dict[str, Callable[[InMemoryPort, dict[str, object]], Awaitable[ToolResult]]] = {
    "read": _read,
    "load": _load,
    "list": _list,
    "frontmatter_read": _frontmatter_read,
    "frontmatter_update": _frontmatter_update,
    "write": _write,
    "edit": _edit,
    "digest_write": _digest_write,
    "digest_edit": _digest_edit,
    "daily_list": _daily_list,
    "node_search": _node_search,
    "search": _search,
    "traverse": _traverse,
}

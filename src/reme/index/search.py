"""Search over the index (docs/spec.md §5.3, 5.4): keyword (+ optional vector) candidates, fusion, hydration.

Engine hits are hydrated from the catalog; a hit the catalog does not know (left by a crash between
the engine commit and the catalog commit) is dropped, so readers only ever see catalogued chunks.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import date
from typing import Any, Protocol

from reme.errors import ReMeError
from reme.index.graph import LinkGraph
from reme.index.grouping import order_hits
from reme.index.keyword import KeywordIndex
from reme.index.speakers import asks_about_replies
from reme.index.store import MetadataStore
from reme.workspace.dates import path_day
from reme.workspace.transcript import is_transcript_path

RRF_K = 60
REFETCH_ROUNDS = 4  # rounds of 4x more candidates when folding left fewer than `limit` results
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchFilters:
    path_prefix: str | None = None
    start_date: date | None = None
    end_date: date | None = None
    strict_date_filter: bool = False

    def admits(self, path: str) -> bool:
        """Whether a chunk of `path` passes these filters (the keyword engine's rules, for other branches)."""
        if self.path_prefix and not path.startswith(self.path_prefix):
            return False
        if self.start_date is None and self.end_date is None:
            return True
        day = path_day(path)
        if day is None:
            return not self.strict_date_filter
        return (self.start_date is None or day >= self.start_date) and (
            self.end_date is None or day <= self.end_date
        )


class VectorsUnavailable(ReMeError):
    """The vector branch is skipped for now (a recent query failed); keyword results stand."""


class VectorBranch(Protocol):
    """What the vector index offers the search (`reme.index.vectors.VectorIndex`; off by default).

    Blocking calls (a query is embedded): the searcher runs them in a worker thread.
    """

    def search(self, query: str, limit: int, filters: SearchFilters) -> list[tuple[str, float]]: ...


@dataclass
class Hit:
    path: str
    start_line: int
    end_line: int
    score: float
    text: str
    name: str | None
    description: str | None
    outlinks: list[dict[str, Any]] = field(default_factory=list)
    inlinks: list[dict[str, Any]] = field(default_factory=list)
    folded: list[dict[str, Any]] = field(default_factory=list)  # the file's further passages: lines, score
    # each branch's own score (keyword: BM25, vector: cosine) when both were fused; shown beside `score`
    branch_scores: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            name: getattr(self, name) for name in _HIT_FIELDS if name != "branch_scores" or self.branch_scores
        }


_HIT_FIELDS = tuple(f.name for f in fields(Hit))


def reciprocal_rank_fusion(
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    vector_weight: float,
    k: int = RRF_K,
) -> list[tuple[str, float]]:
    """Fuse two rankings: `Σ weight / (k + rank)`, keyword weighted `1 - vector_weight`."""
    fused: dict[str, float] = {}
    for weight, ranking in ((1.0 - vector_weight, keyword), (vector_weight, vector)):
        for rank, (chunk_id, _) in enumerate(ranking, 1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


def relative_score_fusion(
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    vector_weight: float,
) -> list[tuple[str, float]]:
    """Fuse two rankings by their scores: `(1 - w)·k̂ + w·v̂`, a chunk missing from a branch 0 there.

    Each branch is scaled to [0, 1] against its own floor: a keyword score of 0 means no match, so
    BM25 scores are divided by the best (`k̂ = s / max`: the second of two close keyword hits keeps
    nearly all its credit); cosines of an embedding model crowd a narrow band (e5: 0.7–0.9), so
    vector scores are min–max scaled over the candidates. Non-finite scores (a broken embedder)
    are dropped.

    Why not rank fusion: ranks forget how sure a branch is. With RRF (k = 60) a chunk the vectors
    put far ahead of the rest gains little more than one barely ahead, so on LoCoMo a confident
    semantic match seldom beats a middling keyword one (benchmarks/README.md, "Fusion").
    """
    fused: dict[str, float] = {}
    for weight, ranking, floor_at_zero in (
        (1.0 - vector_weight, keyword, True),
        (vector_weight, vector, False),
    ):
        finite = [(chunk_id, score) for chunk_id, score in ranking if math.isfinite(score)]
        if not finite:
            continue
        scores = [score for _, score in finite]
        high, low = max(scores), min(scores)
        if floor_at_zero:
            low = min(low, 0.0)
        for chunk_id, score in finite:
            scaled = (score - low) / (high - low) if high > low else float(score > 0)
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight * scaled
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))


FUSIONS = {"relative_score": relative_score_fusion, "rrf": reciprocal_rank_fusion}
"""`components.index.fusion`: how the keyword and vector rankings are merged."""


def check_fusion(fusion: str) -> str:
    """`fusion` if it names one of `FUSIONS`; a ValueError listing them otherwise."""
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, not {fusion!r}")
    return fusion


def fuse(
    keyword: Sequence[tuple[str, float]],
    vector: Sequence[tuple[str, float]],
    vector_weight: float,
    fusion: str = "relative_score",
) -> list[tuple[str, float]]:
    """docs/spec.md §5.3 step 2: both branches present → fused with `fusion`; one branch → its own scores."""
    if keyword and vector:
        return FUSIONS[fusion](keyword, vector, vector_weight)
    return list(keyword or vector)


class Searcher:
    def __init__(
        self,
        store: MetadataStore,
        keyword: KeywordIndex,
        graph: LinkGraph,
        *,
        candidate_multiplier: int,  # these three: `components.index.*`, defaults in its settings table
        vector: VectorBranch | None = None,
        vector_weight: float,
        fusion: str,
    ) -> None:
        self.store = store
        self.keyword = keyword
        self.graph = graph
        self.candidate_multiplier = max(1, candidate_multiplier)
        self.vector = vector
        self.vector_weight = vector_weight
        self.fusion = check_fusion(fusion)

    def _keyword(self, query: str, limit: int, filters: SearchFilters) -> list[tuple[str, float]]:
        return self.keyword.search(
            query,
            limit,
            filters.path_prefix,
            start_date=filters.start_date,
            end_date=filters.end_date,
            strict_date_filter=filters.strict_date_filter,
        )

    async def search(
        self,
        query: str,
        *,
        limit: int = 5,
        min_score: float = 0.0,
        filters: SearchFilters = SearchFilters(),
        expand_links: bool = True,
        max_links_per_direction: int = 10,
        fold_files: bool = True,
        generated_folder: str | None = None,
    ) -> list[Hit]:
        """Best `limit` results; `fold_files`: one per note, its further passages listed in `folded`;
        `generated_folder`: leave out the pages reme generates in this folder (a file name starting
        with `_`, e.g. `digest/_buckets.md`); None keeps them.

        Candidates are fetched as docs/spec.md §5.3 says; only when folding or leaving out generated pages
        left fewer than `limit` results are more fetched (4x each round, at most REFETCH_ROUNDS), so
        a search that thins nothing ranks exactly the same candidates as before.
        """
        fetch = limit * self.candidate_multiplier
        shape = (limit, min_score, fold_files, generated_folder, not asks_about_replies(query))
        for _ in range(REFETCH_ROUNDS):
            vector_hits: list[tuple[str, float]] = []
            if self.vector is None:  # one worker-thread hop for the whole keyword search
                keyword_hits, (hits, thinned) = await asyncio.to_thread(
                    self._keyword_round, query, fetch, filters, shape
                )
            else:
                keyword_hits, vector_hits = await asyncio.gather(
                    asyncio.to_thread(self._keyword, query, fetch, filters),
                    asyncio.to_thread(self._vector, query, fetch, filters),
                )
                fused = self._fuse(keyword_hits, vector_hits)
                hits, thinned = await asyncio.to_thread(self._finish, fused, *shape)
            exhausted = len(keyword_hits) < fetch and len(vector_hits) < fetch
            if len(hits) >= limit or not thinned or exhausted:
                break
            fetch *= 4
        if keyword_hits and vector_hits:
            await asyncio.to_thread(self._branch_scores, hits, keyword_hits, vector_hits)
        if expand_links:
            await asyncio.to_thread(self.expand_links, hits, max_links_per_direction)
        return hits

    def _branch_scores(
        self, hits: list[Hit], keyword: list[tuple[str, float]], vector: list[tuple[str, float]]
    ) -> None:
        """Give each fused hit its score in each branch that found its passage."""
        places = {
            cid: (row.path, row.start_line, row.end_line)
            for cid, row in self.store.chunks_by_id([cid for cid, _ in (*keyword, *vector)]).items()
        }
        scores: dict[tuple[str, int, int], dict[str, float]] = {}
        for branch, ranking in (("keyword", keyword), ("vector", vector)):
            for cid, score in ranking:
                if cid in places:
                    scores.setdefault(places[cid], {})[branch] = score
        for hit in hits:
            hit.branch_scores = scores.get((hit.path, hit.start_line, hit.end_line), {})

    def _keyword_round(
        self, query: str, fetch: int, filters: SearchFilters, shape: tuple[int, float, bool, str | None, bool]
    ) -> tuple[list[tuple[str, float]], tuple[list[Hit], bool]]:
        keyword_hits = self._keyword(query, fetch, filters)
        return keyword_hits, self._finish(keyword_hits, *shape)

    def _vector(self, query: str, limit: int, filters: SearchFilters) -> list[tuple[str, float]]:
        """The vector branch's ranking; empty (keyword alone) when it fails, e.g. an endpoint is down."""
        if self.vector is None:
            return []
        try:
            return self.vector.search(query, limit, filters)
        except VectorsUnavailable as exc:  # the breaker is open: said once, when it tripped
            log.debug("%s", exc)
            return []
        except Exception:
            log.warning("vector search failed; answering from the keyword index alone", exc_info=True)
            return []

    def _fuse(
        self, keyword: list[tuple[str, float]], vector: list[tuple[str, float]]
    ) -> list[tuple[str, float]]:
        return fuse(keyword, vector, self.vector_weight, self.fusion)

    def _finish(
        self,
        scored: list[tuple[str, float]],
        limit: int,
        min_score: float,
        fold_files: bool,
        generated_folder: str | None,
        user_lines_first: bool,
    ) -> tuple[list[Hit], bool]:
        """The best `limit` hits of `scored`, and whether folding or generated pages removed some;
        `user_lines_first`: within a session, the user's lines before the assistant's (`reme.index.speakers`)."""
        passing = [(hit, role) for hit, role in self._hydrate_with_roles(scored) if hit.score >= min_score]
        kept = [(hit, role) for hit, role in passing if not is_generated_page(hit.path, generated_folder)]
        hits = order_hits([hit for hit, _ in kept], [role for _, role in kept] if user_lines_first else None)
        shown = fold(hits) if fold_files else hits
        return shown[:limit], len(shown) < len(passing)

    def hydrate(self, scored: Sequence[tuple[str, float]]) -> list[Hit]:
        """Catalog rows for engine hits, in score order; unknown chunk ids are dropped."""
        return [hit for hit, _ in self._hydrate_with_roles(scored)]

    def _hydrate_with_roles(self, scored: Sequence[tuple[str, float]]) -> list[tuple[Hit, str]]:
        """`hydrate`, each hit with its chunk's transcript role ('' for notes)."""
        chunks = self.store.chunks_by_id([chunk_id for chunk_id, _ in scored])
        files = self.store.files(chunk.path for chunk in chunks.values())
        hits = []
        for chunk_id, score in scored:
            chunk = chunks.get(chunk_id)
            if chunk is None or chunk.path not in files:
                continue
            row = files[chunk.path]
            hit = Hit(
                chunk.path, chunk.start_line, chunk.end_line, score, chunk.text, row.name, row.description
            )
            hits.append((hit, chunk.role))
        return hits

    def expand_links(self, hits: list[Hit], per_direction: int) -> None:
        """Attach up to `per_direction` distinct outlinks and backlinks (name/description, not text)."""
        cache: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        for hit in hits:
            if hit.path not in cache:
                targets = dict.fromkeys(link.target for link in self.graph.outlinks(hit.path))
                named = (self.graph.resolve(target) or target for target in targets)  # [[solar]] too
                out = list(dict.fromkeys(named))[:per_direction]
                inc = list(dict.fromkeys(link.source for link in self.graph.inlinks(hit.path)))[
                    :per_direction
                ]
                cache[hit.path] = (self._describe(out), self._describe(inc))
            hit.outlinks, hit.inlinks = cache[hit.path]

    def _describe(self, paths: list[str]) -> list[dict[str, Any]]:
        rows = self.store.files(paths)
        return [
            {
                "path": path,
                "name": rows[path].name if path in rows else None,
                "description": rows[path].description if path in rows else None,
            }
            for path in paths
        ]

    def node_search(
        self, query: str, limit: int, folder: str, *, keyword_only: bool = False
    ) -> list[dict[str, Any]]:
        """Best `limit` distinct nodes under `folder` by their best chunk (no text, no links).

        Generated pages such as `_buckets.md` are searchable text but not nodes: left out here.
        `keyword_only`: BM25 scores alone, even with vectors on (a lexical similarity, as the
        digest audit's near-duplicate ratio needs; fused scores are scaled per query, partly by
        meaning).
        """
        prefix = folder.rstrip("/") + "/"
        fetch = max(limit * self.candidate_multiplier, limit)
        filters = SearchFilters(path_prefix=prefix)
        while True:
            keyword = self.keyword.search(query, fetch, prefix)
            vector = [] if keyword_only else self._vector(query, fetch, filters)
            scored = self._fuse(keyword, vector)
            best: dict[str, float] = {}
            for hit in self.hydrate(scored):
                if not any(part.startswith("_") for part in hit.path[len(prefix) :].split("/")):
                    best.setdefault(hit.path, hit.score)
            if len(best) >= limit or (len(keyword) < fetch and len(vector) < fetch):
                break
            fetch *= 4
        rows = self.store.files(best)
        return [
            {"path": path, "score": score, "name": rows[path].name, "description": rows[path].description}
            for path, score in list(best.items())[:limit]
        ]


def is_generated_page(path: str, folder: str | None) -> bool:
    """A page reme generates in `folder` (`digest/_buckets.md`): its file name starts with `_`, which
    the digest's rules refuse for nodes. A `_` note of the user's elsewhere is an ordinary note."""
    if folder is None or not path.startswith(folder.rstrip("/") + "/"):
        return False
    return path.rsplit("/", 1)[-1].startswith("_")


def fold(hits: Sequence[Hit]) -> list[Hit]:
    """One result per note, at its best hit's place; the note's later hits go into its `folded`.

    Logs are left as they are: a session transcript or a dated page (`daily/2023-05-08.md`) holds
    many separate entries, each an answer of its own (folding them costs LoCoMo turn recall at
    8,000 characters 0.887 → 0.567, benchmarks/README.md); `reme.index.grouping` orders them."""
    out: list[Hit] = []
    first: dict[str, Hit] = {}
    for hit in hits:
        if is_transcript_path(hit.path) or path_day(hit.path) is not None:
            out.append(hit)
            continue
        head = first.setdefault(hit.path, hit)
        if head is hit:
            out.append(hit)
        else:
            head.folded.append({"start_line": hit.start_line, "end_line": hit.end_line, "score": hit.score})
    return out


def render_hits(query: str, hits: Sequence[Hit]) -> str:
    """Readable answer for an agent: where each hit sits, what it says, and what it links to."""
    if not hits:
        return f"No results for {query!r}."
    lines = [f"{len(hits)} result(s) for {query!r}:"]
    for number, hit in enumerate(hits, 1):
        title = f" — {hit.name}" if hit.name else ""
        lines.append("")
        lines.append(
            f"[{number}] {hit.path} (lines {hit.start_line}-{hit.end_line}, score {hit.score:.3f}){title}"
        )
        if hit.description:
            lines.append(f"description: {hit.description}")
        lines.append(hit.text)
        if hit.folded:
            spans = ", ".join(f"{f['start_line']}-{f['end_line']}" for f in hit.folded)
            lines.append(f"also matching in this file: lines {spans}")
        for label, links in (("links to", hit.outlinks), ("linked from", hit.inlinks)):
            if links:
                lines.append(f"{label}: " + "; ".join(_link_label(link) for link in links))
    return "\n".join(lines)


def _link_label(link: dict[str, Any]) -> str:
    name = link.get("name")
    return f"{link['path']} ({name})" if name else link["path"]


def render_nodes(query: str, nodes: Sequence[dict[str, Any]]) -> str:
    if not nodes:
        return f"No digest nodes match {query!r}."
    lines = [f"{len(nodes)} node(s) for {query!r}:"]
    for node in nodes:
        about = ": ".join(part for part in (node["name"], node["description"]) if part)
        lines.append(f"- {node['path']} (score {node['score']:.3f})" + (f" {about}" if about else ""))
    return "\n".join(lines)

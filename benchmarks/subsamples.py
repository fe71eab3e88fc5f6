"""The fixed, documented subsamples the dense and hybrid benchmarks embed (CPU-bound: ~2 KB/s per core).

BM25 alone is always reported on the same subsample as the hybrid, so every comparison is fair.
All choices are deterministic (sorted ids, a seeded shuffle); none looks at results.
"""

from __future__ import annotations

import random

from datasets import BeirSet

# LongMemEval-S dev: the first two cases (by id) whose question has answer sessions, in full:
# 000001 multi-session (2 answer sessions) and 000002 single-session preference.
LONGMEMEVAL_CASES = 2
SMALL_HAYSTACK_CASES = (
    22  # the other answered cases (all of them), each cut to its answer sessions + seeded others
)
SMALL_HAYSTACK_DISTRACTORS = 8
SCIFACT_QUERIES = 100  # seeded test queries
SCIFACT_DOCS = 300  # their relevant documents + seeded random distractors
CMRC_PASSAGES = 120  # seeded random passages, with every question written on them
SEED = 14


def longmemeval_subset(cases: list[dict], count: int = LONGMEMEVAL_CASES) -> list[dict]:
    answered = [case for case in cases if any(q["metadata"]["answer_session_ids"] for q in case["queries"])]
    return answered[:count]


def longmemeval_small_haystacks(
    cases: list[dict],
    skip: int = LONGMEMEVAL_CASES,
    count: int = SMALL_HAYSTACK_CASES,
    distractors: int = SMALL_HAYSTACK_DISTRACTORS,
) -> list[dict]:
    """`count` answered cases after the first `skip`, each cut to its answer sessions plus
    `distractors` seeded others (original order kept), so more questions fit the embedding budget."""
    small = []
    for case in longmemeval_subset(cases, len(cases))[skip : skip + count]:
        gold = {sid for q in case["queries"] for sid in q["metadata"]["answer_session_ids"]}
        others = [s["session_id"] for s in case["sessions"] if s["session_id"] not in gold]
        keep = gold | set(
            random.Random(f"{SEED}:{case['case_id']}").sample(others, min(distractors, len(others)))
        )
        small.append({**case, "sessions": [s for s in case["sessions"] if s["session_id"] in keep]})
    return small


def scifact_subset(data: BeirSet, queries: int = SCIFACT_QUERIES, size: int = SCIFACT_DOCS) -> BeirSet:
    chosen = sorted(data.queries)
    random.Random(SEED).shuffle(chosen)
    qrels = {q: data.qrels[q] for q in sorted(chosen[:queries])}
    relevant = sorted({doc for judged in qrels.values() for doc in judged if doc in data.corpus})
    others = sorted(set(data.corpus) - set(relevant))
    random.Random(SEED).shuffle(others)
    keep = set(relevant) | set(others[: max(0, size - len(relevant))])
    corpus = {doc: text for doc, text in data.corpus.items() if doc in keep}
    return BeirSet(corpus, {q: data.queries[q] for q in qrels}, qrels)


def cmrc_subset(data: BeirSet, size: int = CMRC_PASSAGES) -> BeirSet:
    passages = sorted(data.corpus)
    random.Random(SEED).shuffle(passages)
    keep = set(passages[:size])
    qrels = {q: judged for q, judged in data.qrels.items() if set(judged) <= keep}
    corpus = {doc: text for doc, text in data.corpus.items() if doc in keep}
    return BeirSet(corpus, {q: t for q, t in data.queries.items() if q in qrels}, qrels)


HARD_DISTRACTORS = 4


def longmemeval_hard_haystacks(cases: list[dict], distractors: int = HARD_DISTRACTORS) -> list[dict]:
    """The answered cases with several answer sessions, each cut to its answer sessions plus the
    `distractors` other sessions that BM25 (reme's chunks, in-memory Lucene BM25) ranks highest for
    its question over the full haystack: the sessions that compete for the top five there, at a
    tenth of the embedding cost. Hard for BM25 by construction, so compare rankings on it, not
    BM25 against dense."""
    from reme.index.chunking import DEFAULT_CHUNK_CHARS
    from retrieval_engines import search_files
    from retrieval_longmemeval import case_files

    hard = []
    for case in longmemeval_subset(cases, len(cases)):
        gold = {sid for q in case["queries"] for sid in q["metadata"]["answer_session_ids"]}
        if len(gold) < 2:
            continue
        files, session_of, _ = case_files(case)
        questions = [q["question"] for q in case["queries"] if q["metadata"]["answer_session_ids"]]
        ranked = search_files("harness", files, questions, 200, chunk_chars=DEFAULT_CHUNK_CHARS)
        order = [session_of[hit.path] for hits in ranked for hit in hits]
        others = [sid for sid in dict.fromkeys(order) if sid not in gold][:distractors]
        keep = gold | set(others)
        hard.append({**case, "sessions": [s for s in case["sessions"] if s["session_id"] in keep]})
    return hard

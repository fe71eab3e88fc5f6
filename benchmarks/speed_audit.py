"""Cost of `digest_audit` against digest size, and its near-duplicate detector against a pairwise scan.

    python benchmarks/speed_audit.py                 # 100, 300, 1000 nodes
    python benchmarks/speed_audit.py --sizes 100,3000

Each size gets a fresh workspace of N synthetic nodes (topics drawn from a fixed vocabulary, every
tenth node a near-copy of the one before it), indexed once. Rows: the wall time of one whole
`digest_audit` through `reme.ReMe` (one keyword search and one link lookup per node), and, side by
side, a pairwise Jaccard scan of the same bodies (N·(N-1)/2 comparisons, what the audit avoids),
with the planted pairs each one finds. One run per size, this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import tempfile
import time
from pathlib import Path

from reme import ReMe

CARD = "daily/2026-06-20/notes.md"
COMMON = [
    "the",
    "team",
    "said",
    "that",
    "we",
    "should",
    "keep",
    "this",
    "in",
    "mind",
    "when",
    "planning",
    "next",
    "week",
    "and",
    "after",
]


def bodies(count: int) -> list[str]:
    """Each node: common words plus words of its own topic; every tenth one a near-copy of the one before."""
    rng = random.Random(7)
    texts: list[str] = []
    for i in range(count):
        if i % 10 == 9:
            texts.append(texts[-1] + " Also noted once more.")
            continue
        topic = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(12)]
        texts.append(" ".join(rng.choice(COMMON + topic) for _ in range(80)) + ".")
    return texts


def write_nodes(ws: Path, texts: list[str]) -> None:
    (ws / "daily/2026-06-20").mkdir(parents=True)
    (ws / CARD).write_text("# Notes\n", encoding="utf-8")
    folder = ws / "digest/wiki"
    folder.mkdir(parents=True)
    for i, text in enumerate(texts):
        (folder / f"node-{i}.md").write_text(
            f"---\nname: node-{i}\ndescription: Node {i}.\n---\n# Node {i}\n\n{text}\n\n"
            f"## Sources\n- derived_from:: [[{CARD}]] — evidence.\n",
            encoding="utf-8",
        )


def pairwise(texts: list[str], threshold: float = 0.8) -> set[tuple[int, int]]:
    bags = [set(re.findall(r"\w{3,}", text.lower())) for text in texts]
    found = set()
    for i, left in enumerate(bags):
        for j in range(i + 1, len(bags)):
            right = bags[j]
            if len(left & right) / len(left | right) >= threshold:
                found.add((i, j))
    return found


async def audit(size: int) -> tuple[float, int, float, int, int]:
    texts = bodies(size)
    planted = size // 10
    with tempfile.TemporaryDirectory() as folder:
        ws = Path(folder) / "ws"
        write_nodes(ws, texts)
        async with ReMe(workspace_dir=ws, timezone="UTC", **{"scheduler.cron": False}) as app:
            await app.run("reindex")
            start = time.perf_counter()
            response = await app.run("digest_audit")
            seconds = time.perf_counter() - start
            if not response.success:
                raise SystemExit(response.answer)
    found = response.metadata["counts"]["near_duplicate"]
    start = time.perf_counter()
    scanned = pairwise(texts)
    return seconds, found, time.perf_counter() - start, len(scanned), planted


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="100,300,1000")
    args = parser.parse_args()
    print(
        "| nodes | digest_audit (s) | per node (ms) | pairs found | pairwise Jaccard scan (s) | pairs found | planted |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",") if s):
        seconds, found, scan, scanned, planted = await audit(size)
        print(
            f"| {size:,} | {seconds:.2f} | {seconds / size * 1000:.1f} | {found} | {scan:.2f} | {scanned} | {planted} |"
        )


if __name__ == "__main__":
    asyncio.run(main())

"""Query cost of the ranking stages: the `search` job with today's ordering vs the new one, side by side in one run.

    .venv/bin/python benchmarks/retrieval_cost.py --files 4000      # ~100k chunks

The synthetic workspace of `speed_index.py` (SciFact words, dated daily/ notes and digest/
notes, front matter, links) is written and indexed once; then every query is asked twice in
turn, once ordered as before this change (`retrieval_loo.today_order`: pieces + transcript
sessions) and once with `reme.index.search.order_hits` (the shipped ordering), so both see the
same machine load. Prints p50 / p95 of each and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from retrieval_loo import today_order  # noqa: E402
from speed_index import QUERIES, percentile, write_workspace  # noqa: E402


async def measure(root: Path, rounds: int) -> dict[str, list[float]]:
    import reme.index.search as search_module
    from reme import ReMe

    shipped = search_module.order_hits
    times: dict[str, list[float]] = {"today": [], "new": []}
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        started = time.perf_counter()
        await app.run("reindex")
        stats = app.component("index").stats()
        print(
            f"{stats['files']:,} files, {stats['chunks']:,} chunks, reindex {time.perf_counter() - started:.0f} s"
        )
        try:
            for _ in range(rounds):
                for query in QUERIES:
                    for name, order in (("today", today_order), ("new", shipped)):
                        search_module.order_hits = order
                        t = time.perf_counter()
                        response = await app.run("search", query=query, limit=5)
                        times[name].append((time.perf_counter() - t) * 1e3)
                        assert response.success, response.answer
        finally:
            search_module.order_hits = shipped
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=4000)
    parser.add_argument("--sections", type=int, default=10)
    parser.add_argument(
        "--rounds", type=int, default=1, help="times each of the 200 queries is asked per ordering"
    )
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="reme-retrieval-cost-"))
    try:
        write_workspace(root, args.files, args.sections)
        times = asyncio.run(measure(root, args.rounds))
        p50 = {name: percentile(values, 0.5) for name, values in times.items()}
        for name, values in times.items():
            print(
                f"{name:>6}: p50 {p50[name]:.2f} ms, p95 {percentile(values, 0.95):.2f} ms ({len(values)} queries)"
            )
        print(f"ratio new / today at p50: {p50['new'] / p50['today']:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

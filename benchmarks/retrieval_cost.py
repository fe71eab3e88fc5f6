"""Query cost of the search defaults before and after issue 27, side by side in one run.

    .venv/bin/python benchmarks/retrieval_cost.py --files 3400      # ~100k chunks at the old size

The synthetic workspace of `speed_index.py` (SciFact words, dated daily/ notes and digest/
notes, front matter, links) is written once and copied; one copy is indexed with the settings
before this change (notes' `chunk_chars` 400, `candidate_multiplier` 3), the other with today's
defaults. Both applications stay open and every query is asked of each in turn, so both see the
same machine load. Prints each index's size and p50 / p95 of the `search` job, and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from speed_index import QUERIES, percentile, write_workspace  # noqa: E402

BEFORE = {"components.index.chunk_chars": 400, "components.index.candidate_multiplier": 3}


async def measure(roots: dict[str, Path], rounds: int) -> dict[str, list[float]]:
    from reme import ReMe

    settings = {"before": BEFORE, "new": {}}
    times: dict[str, list[float]] = {name: [] for name in roots}
    async with AsyncExitStack() as stack:
        apps = {}
        for name, root in roots.items():
            app = await stack.enter_async_context(ReMe(workspace_dir=root, timezone="UTC", **settings[name]))
            started = time.perf_counter()
            await app.run("reindex")
            stats = app.component("index").stats()
            print(
                f"{name:>6}: {stats['files']:,} files, {stats['chunks']:,} chunks, "
                f"reindex {time.perf_counter() - started:.0f} s"
            )
            apps[name] = app
        for _ in range(rounds):
            for query in QUERIES:
                for name, app in apps.items():
                    t = time.perf_counter()
                    response = await app.run("search", query=query, limit=5)
                    times[name].append((time.perf_counter() - t) * 1e3)
                    assert response.success, response.answer
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=3400)
    parser.add_argument("--sections", type=int, default=10)
    parser.add_argument(
        "--rounds", type=int, default=1, help="times each of the 200 queries is asked per index"
    )
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="reme-retrieval-cost-"))
    try:
        roots = {"before": base / "before", "new": base / "new"}
        write_workspace(roots["before"], args.files, args.sections)
        shutil.copytree(roots["before"], roots["new"])
        times = asyncio.run(measure(roots, args.rounds))
        p50 = {name: percentile(values, 0.5) for name, values in times.items()}
        for name, values in times.items():
            print(
                f"{name:>6}: p50 {p50[name]:.2f} ms, p95 {percentile(values, 0.95):.2f} ms ({len(values)} queries)"
            )
        print(f"ratio new / before at p50: {p50['new'] / p50['before']:.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

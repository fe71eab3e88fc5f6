"""Query cost of the search defaults before and after issue 27, side by side in one run.

    .venv/bin/python benchmarks/retrieval_cost.py --files 3400      # ~100k chunks at the old size

The synthetic workspace of `speed_index.py` (SciFact words, dated daily/ notes and digest/
notes, front matter, links) is written once and copied; one copy is indexed with the settings
before this change (notes' `chunk_chars` 400, `candidate_multiplier` 3), the other with today's
defaults. Both applications stay open and every query is asked of each in turn, so both see the
same machine load. Prints each index's size and p50 / p95 of the `search` job, and their ratio.

    .venv/bin/python benchmarks/retrieval_cost.py --transcripts --rounds 20   # round three's stage

    .venv/bin/python benchmarks/retrieval_cost.py --freshness --files 3400 --rounds 3

`--freshness` asks one index each query with the stale-hit check on and off in turn (a stat of each
returned file against the catalog, `IndexService._current`), at 5 and 50 results.

`--transcripts` indexes every session of the LongMemEval-S dev cases in one workspace (transcripts
only, where the user's lines are put first within a session) and asks their questions with the
stage on and off in turn, in one application: the cost of `reme.index.speakers` alone.
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

from datasets import longmemeval_cases  # noqa: E402
from reme import ReMe  # noqa: E402
from retrieval_longmemeval import answered, case_files  # noqa: E402
from speed_index import QUERIES, percentile, write_workspace  # noqa: E402

BEFORE = {"components.index.chunk_chars": 400, "components.index.candidate_multiplier": 3}


async def measure(roots: dict[str, Path], rounds: int) -> dict[str, list[float]]:
    settings = {"before": BEFORE, "new": {}}
    times: dict[str, list[float]] = {name: [] for name in roots}
    async with AsyncExitStack() as stack:
        apps = {}
        for name, root in roots.items():
            app = await stack.enter_async_context(ReMe(workspace_dir=root, timezone="UTC", **settings[name]))
            await reindexed(app, f"files ({name})")
            apps[name] = app
        for _ in range(rounds):
            for query in QUERIES:
                for name, app in apps.items():
                    times[name].append(await timed_search(app, query, 5))
    return times


async def reindexed(app: ReMe, what: str = "files") -> None:
    """Reindex `app`'s workspace and print its size and the time it took."""
    started = time.perf_counter()
    await app.run("reindex")
    stats = app.component("index").stats()
    print(
        f"{stats['files']:,} {what}, {stats['chunks']:,} chunks, reindex {time.perf_counter() - started:.0f} s"
    )


async def timed_search(app: ReMe, query: str, limit: int) -> float:
    """Milliseconds the search job took; it must succeed."""
    started = time.perf_counter()
    response = await app.run("search", query=query, limit=limit)
    assert response.success, response.answer
    return (time.perf_counter() - started) * 1e3


async def measure_speakers(root: Path, rounds: int) -> dict[str, list[float]]:
    """The search job with the user's lines first within a session (on) and in fused order (off)."""
    import reme.index.search as search

    questions = [q["question"] for case in longmemeval_cases() for q in answered(case)]
    times: dict[str, list[float]] = {"off": [], "on": []}
    gate = search.asks_about_replies
    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        await reindexed(app, "transcripts")
        try:
            for _ in range(rounds):
                for question in questions:
                    for name in times:
                        search.asks_about_replies = (lambda _q: True) if name == "off" else gate
                        times[name].append(await timed_search(app, question, 5))
        finally:
            search.asks_about_replies = gate
    return times


async def measure_freshness(root: Path, rounds: int) -> dict[str, list[float]]:
    """The search job with the check that returned files are still as indexed (on) and without (off)."""
    from reme.index.service import IndexService

    times: dict[str, list[float]] = {f"{state} {limit}": [] for limit in (5, 50) for state in ("off", "on")}
    check = IndexService._stale

    async def unchecked(_self: IndexService, _paths: list[str]) -> set[str]:
        return set()

    async with ReMe(workspace_dir=root, timezone="UTC") as app:
        await reindexed(app)
        try:
            for _ in range(rounds):
                for query in QUERIES:
                    for name in times:
                        state, limit = name.split()
                        IndexService._stale = unchecked if state == "off" else check  # type: ignore[method-assign]
                        times[name].append(await timed_search(app, query, int(limit)))
        finally:
            IndexService._stale = check  # type: ignore[method-assign]
    return times


def write_transcripts(root: Path) -> None:
    for case in longmemeval_cases():
        for path, text in case_files(case)[0].items():
            target = root / path.replace("/s", f"/{case['case_id']}-s", 1)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")


def report(times: dict[str, list[float]], before: str, after: str) -> None:
    p50 = {name: percentile(values, 0.5) for name, values in times.items()}
    for name, values in times.items():
        print(
            f"{name:>6}: p50 {p50[name]:.2f} ms, p95 {percentile(values, 0.95):.2f} ms ({len(values)} queries)"
        )
    print(f"ratio {after} / {before} at p50: {p50[after] / p50[before]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=3400)
    parser.add_argument("--sections", type=int, default=10)
    parser.add_argument(
        "--rounds", type=int, default=1, help="times each of the 200 queries is asked per index"
    )
    parser.add_argument("--transcripts", action="store_true", help="the LongMemEval sessions, stage on/off")
    parser.add_argument("--freshness", action="store_true", help="the stale-hit check on/off, one index")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="reme-retrieval-cost-"))
    try:
        if args.transcripts:
            write_transcripts(base / "sessions")
            report(asyncio.run(measure_speakers(base / "sessions", args.rounds)), "off", "on")
            return
        if args.freshness:
            write_workspace(base / "notes", args.files, args.sections)
            times = asyncio.run(measure_freshness(base / "notes", args.rounds))
            report({k: v for k, v in times.items() if k.endswith(" 5")}, "off 5", "on 5")
            report({k: v for k, v in times.items() if k.endswith(" 50")}, "off 50", "on 50")
            return
        roots = {"before": base / "before", "new": base / "new"}
        write_workspace(roots["before"], args.files, args.sections)
        shutil.copytree(roots["before"], roots["new"])
        report(asyncio.run(measure(roots, args.rounds)), "before", "new")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

"""What keeping the previous version costs a `write` over an existing note (issue 23.11).

Runs the real `write` job in-process on a fresh workspace: N creates, N replacements of the same
notes (each keeps the earlier text under journal/replaced/), N identical rewrites (answered
"Unchanged", nothing written), and the version copy alone (`keep_previous`). Prints p50/p95 in ms.

    .venv/bin/python benchmarks/speed_overwrite.py --notes 200 --size 2000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from reme import ReMe
from reme.workspace.layout import Workspace
from reme.workspace.replaced import keep_previous


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


async def timed(app: ReMe, notes: int, text: str) -> list[float]:
    times = []
    for n in range(notes):
        start = time.perf_counter()
        response = await app.run("write", path=f"digest/wiki/n{n:04d}.md", content=text)
        times.append((time.perf_counter() - start) * 1000)
        assert response.success, response.answer
    return times


async def main(args: argparse.Namespace) -> None:
    body = ("Solar panels turn light into power. " * 100)[: args.size]
    with tempfile.TemporaryDirectory() as folder:
        async with ReMe(workspace_dir=Path(folder) / "ws", timezone="UTC") as app:
            rows = {
                "create": await timed(app, args.notes, body + "\n"),
                "replace (keeps the previous version)": await timed(app, args.notes, body + " v2\n"),
                "same text again (Unchanged, no write)": await timed(app, args.notes, body + " v2\n"),
            }
            ws = Workspace(app.workspace_dir)
            copies = []
            for n in range(args.notes):
                start = time.perf_counter()
                keep_previous(ws, f"digest/wiki/n{n:04d}.md", body.encode())
                copies.append((time.perf_counter() - start) * 1000)
            rows["the version copy alone (keep_previous)"] = copies
    print(f"| write, {args.notes} notes of {args.size} chars | p50 ms | p95 ms |\n|---|---:|---:|")
    for name, values in rows.items():
        print(f"| {name} | {p(values, 50):.2f} | {p(values, 95):.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--size", type=int, default=2000)
    asyncio.run(main(parser.parse_args()))

"""Cost of the digest guarantees: the E-1 checker and the digest_edit job, against node size.

    python benchmarks/speed_digest.py

Prints one row per node size: links in the node, `missing_edges` time per call, and the wall time of
one `digest_edit` through `reme.ReMe` (path rules, lock, CAS, E-1, Sources rule, atomic write, index
sync). Figures are medians of repeated runs on this machine.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from reme import ReMe
from reme.workspace.edges import missing_edges

SOURCE = "daily/2026-06-20/session.md"


def node_body(links: int) -> str:
    lines = [
        f"- Point {i} relates to [[digest/wiki/n{i}.md]] and is_a:: [[digest/wiki/c{i % 7}.md]]"
        for i in range(links)
    ]
    return "\n".join(
        ["# Node", "", *lines, "", "## Sources", f"- derived_from:: [[{SOURCE}]] — evidence", ""]
    )


def median_seconds(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def edit_seconds(app: ReMe, path: str, repeat: int) -> float:
    samples = []
    for i in range(repeat):
        start = time.perf_counter()
        response = await app.run("digest_edit", path=path, old=f"Point {i} ", new=f"Point {i}. ")
        samples.append(time.perf_counter() - start)
        assert response.success, response.answer
    return statistics.median(samples)


async def main() -> None:
    print("| links in node | body chars | missing_edges (ms) | digest_edit (ms) |")
    print("|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        async with ReMe(
            workspace_dir=Path(folder) / "ws", timezone="UTC", **{"scheduler.cron": False}
        ) as app:
            (app.workspace_dir / "daily/2026-06-20").mkdir(parents=True)
            (app.workspace_dir / SOURCE).write_text("evidence\n")
            for links in (10, 100, 1000, 5000):
                body = node_body(links)
                path = f"digest/wiki/size-{links}.md"
                written = await app.run("digest_write", path=path, content=body, description="benchmark node")
                assert written.success, written.answer
                changed = body.replace("Point 0 ", "Point zero ")
                checker = median_seconds(lambda b=body, c=changed: missing_edges(b, c), 5)
                edit = await edit_seconds(app, path, 5)
                print(f"| {2 * links + 1} | {len(body)} | {checker * 1000:.2f} | {edit * 1000:.1f} |")


if __name__ == "__main__":
    asyncio.run(main())

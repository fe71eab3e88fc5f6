"""Studio's speed on a large workspace: server time of the main pages, graph render in Chromium.

    .venv/bin/python benchmarks/studio_eval.py [--notes 5000] [--nodes 2000] [--runs 5]

Generates a workspace of `--notes` Markdown notes: `--nodes` digest nodes in 8 buckets (each
linking two nodes of its bucket and one of any, and, by `derived_from::`, two day cards) and day cards for the rest.
Starts `reme start` on it (no cron, no model), waits until the index is built, then times each
main page as the page loads it: the same job requests, sent at once as the browser does, median of
`--runs`. Last, headless Chromium (Debian's `chromium`) opens the graph view `--runs` times and
reports what the page measured: data load (list + traverse), layout, first draw, and all of it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed_cli import REME, wait_for_service  # noqa: E402

BUCKETS = ["wiki", "people", "projects", "places", "health", "food", "travel", "work"]
WORDS = [
    "solar",
    "battery",
    "garden",
    "recipe",
    "coconut",
    "journal",
    "release",
    "rollback",
    "budget",
    "meeting",
    "river",
    "mountain",
    "concert",
    "painting",
    "library",
    "bicycle",
    "kitchen",
    "doctor",
    "flight",
    "museum",
    "harbour",
    "winter",
    "lantern",
    "meadow",
]


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def build(ws: Path, notes: int, nodes: int) -> tuple[list[str], list[str]]:
    rng = random.Random(7)
    cards = [
        f"daily/2026-{1 + i // 300 % 12:02d}-{1 + i // 10 % 28:02d}/card-{i}.md" for i in range(notes - nodes)
    ]
    digest = [f"digest/{BUCKETS[i % len(BUCKETS)]}/node-{i}.md" for i in range(nodes)]
    for path in cards:
        target = ws / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            f"---\nname: {target.stem}\n---\n# {target.stem}\n\n- {text(rng, 60)}\n", encoding="utf-8"
        )
    for i, path in enumerate(digest):
        target = ws / path
        target.parent.mkdir(parents=True, exist_ok=True)
        bucket = digest[i % len(BUCKETS) :: len(BUCKETS)]  # two links in its bucket, one anywhere
        links = " ".join(f"[[{rng.choice(pool)}]]" for pool in (bucket, bucket, digest))
        sources = "\n".join(f"- derived_from:: [[{rng.choice(cards)}]]" for _ in range(2))
        target.write_text(
            f"---\nname: {target.stem}\ndescription: {text(rng, 8)}\n---\n# {target.stem}\n\n"
            f"{text(rng, 80)}\n\nSee {links}.\n\n## Sources\n{sources}\n",
            encoding="utf-8",
        )
    return cards, digest


def pages(digest: list[str]) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """The job requests each view sends when it opens (see the view modules in studio/assets)."""
    node = digest[len(digest) // 2]
    batches = [digest[i : i + 250] for i in range(0, len(digest), 250)]
    return {
        "tree (root + digest + daily)": [("list", {"path": p}) for p in ("", "digest", "daily")],
        "note (read, front matter, links)": [
            ("read", {"path": node}),
            ("frontmatter_read", {"path": node}),
            ("traverse", {"path": node, "depth": 1, "direction": "both"}),
        ],
        "search (20 hits with links)": [("search", {"query": "coconut recipe journal", "limit": 20})],
        "review (journal, agenda, captures, recent)": [
            ("journal", {"limit": 50}),
            ("proactive_read", {"include_content": False}),
            ("list", {"path": "session/dialog", "sort_by": "mtime", "extensions": [".jsonl"]}),
            *[
                ("list", {"path": p, "recursive": True, "sort_by": "mtime", "limit": 15})
                for p in ("daily", "digest")
            ],
        ],
        "review: digest audit": [("digest_audit", {})],
        "status (health, status, config)": [("health_check", {}), ("status", {}), ("app_config", {})],
        f"graph data ({len(digest)} nodes: list + {len(batches)} traverse)": [
            ("list", {"path": "digest", "recursive": True, "extensions": [".md"]}),
            *[("traverse", {"path": b, "depth": 1, "direction": "forward"}) for b in batches],
        ],
    }


async def page_ms(client: httpx.AsyncClient, requests: list[tuple[str, dict[str, Any]]]) -> float:
    started = time.perf_counter()
    replies = await asyncio.gather(*(client.post(f"/{job}", json=params) for job, params in requests))
    elapsed = time.perf_counter() - started
    for (job, _), reply in zip(requests, replies, strict=True):
        if reply.status_code != 200:
            raise SystemExit(f"{job} answered {reply.status_code}: {reply.text[:300]}")
    return 1000 * elapsed


async def time_pages(url: str, digest: list[str], runs: int) -> list[tuple[str, float]]:
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        shell = [
            "/studio",
            *(f"/studio/assets/{a}" for a in ("app.js", "style.css", "markdown.js", "graph.js")),
        ]
        rows = []
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            await asyncio.gather(*(client.get(p) for p in shell))
            times.append(1000 * (time.perf_counter() - started))
        rows.append(("page shell (HTML + 4 assets)", statistics.median(times)))
        client.cookies.clear()  # the jobs are asked as the CLI asks them (a cookie would want CSRF)
        for label, requests in pages(digest).items():
            rows.append((label, statistics.median([await page_ms(client, requests) for _ in range(runs)])))
        return rows


def graph_in_chromium(url: str, runs: int, shot: str | None) -> list[dict[str, float]]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    found = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        for _ in range(runs):
            page.goto(f"{url}/studio#/graph")
            page.wait_for_selector("canvas[data-ready=true]", timeout=600_000)
            found.append(page.evaluate("window.__remeGraph"))
        if shot:
            page.screenshot(path=shot)
        browser.close()
    return found


def wait_until_indexed(url: str, total: int) -> float:
    started = time.monotonic()
    while True:
        index = (
            httpx.post(f"{url}/status", json={}, timeout=60).json()["metadata"]["components"].get("index")
            or {}
        )
        if index.get("ready") and (index.get("files") or 0) >= total:
            return time.monotonic() - started
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--screenshot", help="save the graph view as this PNG")
    parser.add_argument("--graph-only", action="store_true", help="skip the page timings")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        _, digest = build(ws, args.notes, args.nodes)
        service = subprocess.Popen(
            [REME, "start", f"workspace_dir={ws}", "service.port=0", "scheduler.cron=false"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_service(ws, service)
            info = json.loads((ws / "metadata" / "service.json").read_text())
            url = f"http://{info['host']}:{info['port']}"
            indexed = wait_until_indexed(url, args.notes)
            print(f"{args.notes} notes ({args.nodes} digest nodes) indexed in {indexed:.1f} s after start\n")
            print(f"| page | server time, median of {args.runs} (ms) |\n|---|---:|")
            for label, ms in [] if args.graph_only else asyncio.run(time_pages(url, digest, args.runs)):
                print(f"| {label} | {ms:.0f} |")
            graphs = graph_in_chromium(url, args.runs, args.screenshot)
            med = {k: statistics.median(g[k] for g in graphs) for k in ("loadMs", "layoutMs", "drawMs", "ms")}
            print(
                f"\nGraph in headless Chromium, {graphs[0]['nodes']} nodes / {graphs[0]['edges']} edges, median of {args.runs}:\n"
            )
            print("| data load | layout | first draw | total |\n|---:|---:|---:|---:|")
            print(
                f"| {med['loadMs']:.0f} ms | {med['layoutMs']:.0f} ms | {med['drawMs']:.0f} ms | {med['ms']:.0f} ms |"
            )
        finally:
            service.terminate()
            service.wait(60)


if __name__ == "__main__":
    main()

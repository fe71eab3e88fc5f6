"""Known-item search: a note's own title as the query, through the whole `search` job.

Every document of a set becomes one note of a workspace — SciFact (5,183 abstracts, long English
titles) or CMRC 2018 dev (847 Wikipedia passages, short Chinese titles such as 战国无双3) — in
three shapes a user's notes take; each shape is searched with the titles of `--queries` seeded
documents (limit 10):

- ``heading``: ``notes/<id>.md`` starting with ``# <title>``, then the abstract;
- ``file-name``: ``notes/<title>.md`` holding the abstract alone (an Obsidian note: its name is
  its file name);
- ``name``: ``notes/<id>.md`` with front matter ``name: <title>``, then the abstract.

Reported per shape: the share of queries whose own note is the first result (rank 1), within the
first 5, the mean reciprocal rank, and the mean number of distinct files in the first 5 results.

    .venv/bin/python benchmarks/known_item.py --queries 300
    .venv/bin/python benchmarks/known_item.py --set cmrc --shapes file-name,heading
    PYTHONPATH=/path/to/older/src .venv/bin/python benchmarks/known_item.py   # the same for other code
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from datasets import DATA_DIR, read_jsonl  # noqa: E402

SHAPES = ("heading", "file-name", "name")
SETS = {"scifact": DATA_DIR / "beir-scifact", "cmrc": DATA_DIR / "cmrc2018" / "beir-dev"}
LIMIT = 10
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]')


def notes(shape: str, rows: list[dict]) -> tuple[dict[str, str], dict[str, str]]:
    """(workspace path -> text, doc id -> its path) for one shape."""
    files: dict[str, str] = {}
    paths: dict[str, str] = {}
    for row in rows:
        title, text = row["title"].strip(), row["text"].strip()
        if shape == "heading":
            path, body = f"notes/{row['_id']}.md", f"# {title}\n\n{text}\n"
        elif shape == "file-name":
            stem = _UNSAFE.sub(" ", title)[:150].strip(" .") or row["_id"]
            path, body = f"notes/{stem}.md", f"{text}\n"
            if path in files:  # two documents with one title: keep the first
                continue
        else:
            path, body = f"notes/{row['_id']}.md", f"---\nname: {json.dumps(title)}\n---\n{text}\n"
        files[path] = body
        paths[row["_id"]] = path
    return files, paths


async def measure(files: dict[str, str], queries: dict[str, str]) -> dict[str, float]:
    """queries: expected path -> query."""
    from reme import ReMe

    ranks: list[int] = []
    spread: list[int] = []
    with tempfile.TemporaryDirectory(prefix="reme-known-") as directory:
        workspace = Path(directory) / "workspace"
        for path, text in files.items():
            target = workspace / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        async with ReMe(workspace_dir=workspace, timezone="UTC") as app:
            await app.run("reindex")
            for expected, query in queries.items():
                response = await app.run("search", query=query, limit=LIMIT, expand_links=False)
                if not response.success:
                    raise RuntimeError(response.answer)
                paths = [row["path"] for row in response.metadata["results"]]
                ranks.append(paths.index(expected) + 1 if expected in paths else 0)
                spread.append(len(set(paths[:5])))
    count = len(ranks)
    return {
        "queries": count,
        "rank1": sum(r == 1 for r in ranks) / count,
        "top5": sum(0 < r <= 5 for r in ranks) / count,
        "mrr": sum(1 / r for r in ranks if r) / count,
        "files_in_top5": sum(spread) / count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--set", choices=sorted(SETS), default="scifact")
    parser.add_argument("--queries", type=int, default=300, help="seeded titles asked per shape")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    rows = [row for row in read_jsonl(SETS[args.set] / "corpus.jsonl") if row.get("title", "").strip()]
    asked = random.Random(args.seed).sample(rows, min(args.queries, len(rows)))
    print("| shape | queries | rank 1 | top 5 | MRR | distinct files in top 5 | seconds |")
    print("|---|---|---|---|---|---|---|")
    for shape in args.shapes.split(","):
        files, paths = notes(shape, rows)
        queries = {paths[row["_id"]]: row["title"] for row in asked if row["_id"] in paths}
        started = time.perf_counter()
        figures = asyncio.run(measure(files, queries))
        print(
            f"| {shape} | {figures['queries']} | {figures['rank1']:.3f} | {figures['top5']:.3f} | "
            f"{figures['mrr']:.3f} | {figures['files_in_top5']:.2f} | {time.perf_counter() - started:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()

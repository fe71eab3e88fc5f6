"""A fixed bilingual workspace and queries whose keyword results were recorded with main's code
before vectors existed (`keyword_golden.json`): with vectors off the search must give exactly them.

Re-record (only when keyword search is meant to change) with
`python -m tests.index.keyword_fixture tests/index/data/keyword_golden.json`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

TOPICS = [
    ("solar", "The solar panels on the roof gave 12 kWh today; the inverter hummed."),
    ("garden", "Planted tomatoes and basil; the garden needs water every morning."),
    ("piano", "Practised the piano for an hour, scales then a Chopin nocturne."),
    ("travel", "Booked the train to Kyoto for the conference in May."),
    ("health", "Went running by the river, 5 km, knee felt fine."),
    ("work", "Reviewed the database migration plan with the team; Postgres it is."),
    ("太阳能", "屋顶的太阳能板今天发电十二度，逆变器有点响。"),
    ("花园", "在花园里种了番茄和罗勒，每天早上都要浇水。"),
    ("钢琴", "练了一个小时钢琴，先练音阶，再弹肖邦的夜曲。"),
    ("旅行", "订了去京都的火车票，五月去参加会议。"),
]
QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("search", {"query": "solar inverter"}),
    ("search", {"query": "tomatoes water garden", "limit": 3}),
    ("search", {"query": "piano nocturne", "path_prefix": "daily/"}),
    ("search", {"query": "train conference", "start_date": "2026-06-03"}),
    ("search", {"query": "train conference", "start_date": "2026-06-03", "strict_date_filter": True}),
    ("search", {"query": "太阳能 逆变器"}),
    ("search", {"query": "钢琴 夜曲", "limit": 10}),
    ("search", {"query": "database migration Postgres", "end_date": "2026-06-02"}),
    ("search", {"query": "running knee river", "min_score": 1.0}),
    ("node_search", {"query": "garden tomatoes"}),
    ("node_search", {"query": "旅行 京都", "limit": 3}),
]


def write_workspace(root: Path) -> None:
    for number, (name, text) in enumerate(TOPICS):
        day = f"2026-06-{1 + number % 5:02d}"
        daily = root / "daily" / day / f"{number}.md"
        daily.parent.mkdir(parents=True, exist_ok=True)
        daily.write_text(f"# {name}\n\n{text}\n\nMore on {name} tomorrow.\n", encoding="utf-8")
        node = root / "digest" / "wiki" / f"{number}.md"
        node.parent.mkdir(parents=True, exist_ok=True)
        node.write_text(
            f"---\nname: {name}\ndescription: notes about {name}\n---\n# {name}\n\n{text}\n\nSee [[daily/{day}/{number}.md]].\n",
            encoding="utf-8",
        )


def summary(job: str, metadata: dict[str, Any]) -> list[list[Any]]:
    if job == "node_search":
        return [[row["path"], row["score"], row["name"]] for row in metadata["results"]]
    return [
        [row["path"], row["start_line"], row["end_line"], row["score"], row["name"], len(row["outlinks"])]
        for row in metadata["results"]
    ]


async def results(root: Path, **overrides: Any) -> list[list[list[Any]]]:
    from reme import ReMe

    write_workspace(root)
    async with ReMe(workspace_dir=root, timezone="UTC", **overrides) as app:
        answers = []
        for job, params in QUERIES:
            response = await app.run(job, **params)
            assert response.success, response.answer
            answers.append(summary(job, response.metadata))
        return answers


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        recorded = asyncio.run(results(Path(folder) / "ws"))
    Path(sys.argv[1]).write_text(json.dumps(recorded, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")

"""Import cost: an Obsidian vault and a ChatGPT export, first import vs. re-import, beside a plain copy.

    .venv/bin/python benchmarks/speed_imports.py --notes 1000 --conversations 300

The alternative to `import_obsidian` a user has is copying the vault folder into the workspace and
running `reindex` (no link rewriting, no provenance, no idempotence); both run on the same vault.
Re-importing an unchanged source should cost a fraction of the first import (nothing is written).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from reme import ReMe


def make_vault(root: Path, notes: int, rng: random.Random) -> Path:
    vault = root / "vault"
    for number in range(notes):
        folder = vault / f"area-{number % 10}" / f"topic-{number % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        links = " ".join(f"[[note {rng.randrange(notes)}]]" for _ in range(5))
        words = " ".join(
            rng.choice(["solar", "battery", "grid", "tariff", "inverter", "meter"]) for _ in range(120)
        )
        (folder / f"note {number}.md").write_text(
            f"---\ntags: [t{number % 5}]\n---\n# Note {number}\n\n{words}\n\n{links}\n"
        )
    return vault


def make_export(root: Path, conversations: int) -> Path:
    data = []
    for number in range(conversations):
        mapping = {"root": {"id": "root", "message": None, "parent": None, "children": ["m0"]}}
        for turn in range(10):
            node = f"m{turn}"
            mapping[node] = {
                "id": node,
                "parent": "root" if turn == 0 else f"m{turn - 1}",
                "children": [f"m{turn + 1}"] if turn < 9 else [],
                "message": {
                    "id": f"c{number}-{node}",
                    "author": {"role": "user" if turn % 2 == 0 else "assistant"},
                    "create_time": 1717200000 + number * 1000 + turn,
                    "content": {
                        "content_type": "text",
                        "parts": [f"turn {turn} of conversation {number} " * 20],
                    },
                },
            }
        data.append(
            {
                "title": f"Conversation {number}",
                "id": f"conv-{number}",
                "current_node": "m9",
                "mapping": mapping,
            }
        )
    path = root / "conversations.json"
    path.write_text(json.dumps(data))
    return path


async def timed(app: ReMe, job: str, **params: object) -> tuple[float, dict]:
    start = time.perf_counter()
    response = await app.run(job, **params)
    assert response.success, response.answer
    return time.perf_counter() - start, response.metadata


async def main(notes: int, conversations: int) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="reme-imports-") as directory:
        root = Path(directory)
        vault, export = make_vault(root, notes, rng), make_export(root, conversations)
        rows = []
        async with ReMe(workspace_dir=root / "ws", timezone="UTC") as app:
            first, meta = await timed(app, "import_obsidian", source=str(vault))
            again, meta_again = await timed(app, "import_obsidian", source=str(vault))
            rows.append(
                ("import_obsidian", notes, first, again, len(meta["created"]), len(meta_again["unchanged"]))
            )
            first, meta = await timed(app, "import_chatgpt", source=str(export))
            again, meta_again = await timed(app, "import_chatgpt", source=str(export))
            rows.append(
                (
                    "import_chatgpt",
                    conversations,
                    first,
                    again,
                    len(meta["created"]),
                    len(meta_again["unchanged"]),
                )
            )
        async with ReMe(workspace_dir=root / "copy", timezone="UTC") as app:
            start = time.perf_counter()
            shutil.copytree(vault, root / "copy" / "vault")
            await timed(app, "reindex")
            copy = time.perf_counter() - start
        print(
            "| job | items | first import s | items/s | re-import s | re-import / first | written | unchanged |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for job, items, first, again, written, unchanged in rows:
            print(
                f"| {job} | {items} | {first:.2f} | {items / first:.0f} | {again:.2f} | {again / first:.2f} | {written} | {unchanged} |"
            )
        print(
            f"| copy vault + reindex (no link rewriting) | {notes} | {copy:.2f} | {notes / copy:.0f} | - | - | - | - |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--conversations", type=int, default=300)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.notes, arguments.conversations))

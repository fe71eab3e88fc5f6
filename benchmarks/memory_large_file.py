"""Memory of indexing large notes: RSS of one process that writes, indexes and deletes big files.

Each note is `--mb` MiB of Markdown (sections of English and Chinese paragraphs, deterministic), written
through the `write` job (which indexes it at once, as the service does), then deleted again. Prints
the resident set size (VmRSS) after start, after each note, after deleting them, and the peak (VmHWM).
Compare with `--mb 0.05` (same steps, small notes: what start-up, rjieba and the engine take).

    nice -n 10 .venv/bin/python benchmarks/memory_large_file.py --mb 16 --files 2
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from reme import ReMe
from reme.index.memory import release_memory

WORDS = [
    "solar",
    "battery",
    "grid",
    "storage",
    "inverter",
    "panel",
    "roof",
    "charge",
    "night",
    "winter",
    "price",
    "market",
    "policy",
    "meeting",
    "notes",
    "project",
    "deadline",
    "review",
    "design",
    "memory",
    "agent",
    "search",
    "index",
    "file",
    "link",
    "chunk",
    "token",
]
HANZI = "光伏组件把太阳光转换成电能宁德时代的储能电池在夜间为电网供电我们下午喝了龙井茶讨论项目进度"


def note(megabytes: float, seed: int) -> str:
    """Markdown of about `megabytes` MiB: an H2 section every 40 paragraphs, mixed-language lines."""
    rng = random.Random(seed)
    target = int(megabytes * 1024 * 1024)
    parts: list[str] = [f"# Large note {seed}\n\n"]
    size = 0
    paragraph = 0
    while size < target:
        if paragraph % 40 == 0:
            parts.append(f"## Section {paragraph // 40}\n\n")
        english = " ".join(rng.choice(WORDS) for _ in range(30))
        chinese = "".join(rng.choice(HANZI) for _ in range(20))
        line = f"{english} {chinese}.\n\n"
        parts.append(line)
        size += len(line.encode())
        paragraph += 1
    return "".join(parts)


def rss_mib() -> tuple[float, float, float]:
    """(VmRSS, VmHWM, RssFile) of this process in MiB, from /proc (Linux). RssFile is mapped files
    (the engine's segments), which the system can drop at will; the rest is heap."""
    fields = dict(
        line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line
    )
    return tuple(int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM", "RssFile"))  # type: ignore[return-value]


def memory() -> str:
    rss, peak, mapped = rss_mib()
    return f"{rss:8.0f} {peak:9.0f} {mapped:9.0f}"


async def run(megabytes: float, files: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with ReMe(workspace_dir=Path(folder) / "ws", timezone="UTC") as app:
            await app.run("search", query="warm up")  # the first reconcile, the tokenizer's dictionary
            print(f"{'step':<28} {'RSS MiB':>8} {'peak MiB':>9} {'files MiB':>9} {'seconds':>8}")
            print(f"{'started':<28} {memory()}")
            for number in range(files):
                text = note(megabytes, number)
                began = time.perf_counter()
                response = await app.run("write", path=f"digest/big/note{number}.md", content=text)
                assert response.success, response.answer
                del text
                took = time.perf_counter() - began
                print(f"{f'wrote+indexed note {number + 1}':<28} {memory()} {took:>8.1f}")
            hits = (await app.run("search", query="储能电池 inverter")).metadata["results"]
            assert hits, "the large notes were not indexed"
            for number in range(files):
                assert (await app.run("delete", path=f"digest/big/note{number}.md")).success
            print(f"{'deleted all':<28} {memory()}")
            release_memory()  # what is left now is held, not merely cached by the allocator
            print(f"{'trimmed (gc + malloc_trim)':<28} {memory()}")
            stats = app.component("index").stats()
            print(f"index now: {stats['files']} files, {stats['chunks']} chunks")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--mb", type=float, default=16.0, help="size of each note in MiB (the write cap is 16)"
    )
    parser.add_argument("--files", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(run(args.mb, args.files))


if __name__ == "__main__":
    main()

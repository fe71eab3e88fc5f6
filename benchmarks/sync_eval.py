"""Sync cost (issue 25, docs/spec.md §18): two machines converging after N changes, and an idle sync on a large workspace.

    .venv/bin/python benchmarks/sync_eval.py converge --changes 10 100 1000
    .venv/bin/python benchmarks/sync_eval.py idle --notes 5000 --repeat 5

- `converge`: a bare repository under a temporary folder is the remote; machine a (200 notes) runs
  `sync_init`, machine b `sync_clone`, each an embedded application with its index. Then N changes
  on each machine — half edits of notes the other machine edits too (other lines: a three-way merge
  of each), half new notes — and a, b, a sync. Figures: wall time of each sync and of the whole
  convergence (re-indexing of the merged files included), and bytes: the growth of the remote's
  objects (what the two pushes sent, as stored) and of each machine's objects (what it committed
  and fetched). Checked after: both trees equal, every change on both, the index of each finds a
  note written on the other.
- `idle`: a workspace of N notes (about 600 bytes each) synced, then `sync` with nothing changed,
  `--repeat` times: the median and the worst.

Timings depend on the machine (2 cores here, shared) and on git; `--json` prints the raw figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reme import ReMe

WORDS = [
    "river",
    "stone",
    "copper",
    "lantern",
    "orchard",
    "meadow",
    "harbor",
    "violet",
    "ember",
    "quartz",
    "willow",
    "falcon",
]


def _note(i: int, tag: str = "") -> str:
    words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12))
    lines = [f"# Note {i}", "", f"First paragraph {i}: {words}.", "", f"Second paragraph {i}: {words}.", ""]
    lines += [f"Line {k} of note {i}: {words}." for k in range(8)]
    return "\n".join(lines) + f"\n{tag}"


def _objects_bytes(git_dir: Path) -> int:
    total = 0
    for folder, _dirs, files in os.walk(git_dir / "objects"):
        for name in files:
            total += os.path.getsize(os.path.join(folder, name))
    return total


def _git_dir(root: Path) -> Path:
    return root / ".git" if (root / ".git").is_dir() else root


async def _app(root: Path) -> ReMe:
    app = ReMe(workspace_dir=root, timezone="UTC", **{"scheduler.cron": False})
    await app.start()
    return app


async def _timed(app: ReMe, job: str, **params: Any) -> float:
    start = time.perf_counter()
    response = await app.run(job, **params)
    if not response.success:
        raise SystemExit(f"{job} failed: {response.answer}")
    return time.perf_counter() - start


def _write_notes(root: Path, count: int) -> None:
    for i in range(count):
        path = root / f"daily/2026-01-{1 + i % 28:02d}/note-{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_note(i))


async def converge(changes: int, base_notes: int = 200) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="reme-sync-bench-") as tmp:
        root = Path(tmp)
        remote = root / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
        _write_notes(root / "a", max(base_notes, changes))
        a = await _app(root / "a")
        b = None
        try:
            await _timed(a, "sync_init", remote=str(remote))
            b = await _app(root / "b")
            await _timed(b, "sync_clone", remote=str(remote))
            for app in (a, b):  # the index is built as on any start: not part of the sync figures
                await app.run("search", query="river")
            before = {
                name: _objects_bytes(_git_dir(path))
                for name, path in (("remote", remote), ("a", root / "a"), ("b", root / "b"))
            }
            shared = changes // 2
            for machine, app in (("a", a), ("b", b)):
                folder = app.workspace_dir
                for i in range(shared):  # the same notes on both machines, different lines
                    path = folder / f"daily/2026-01-{1 + i % 28:02d}/note-{i}.md"
                    text = path.read_text()
                    old = f"First paragraph {i}:" if machine == "a" else f"Line 7 of note {i}:"
                    path.write_text(text.replace(old, f"{old} edited on {machine},"))
                for i in range(changes - shared):
                    path = folder / f"daily/2026-02-01/{machine}-new-{i}.md"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(_note(i, f"written on {machine} {i} zebra{machine}\n"))
            timings = {}
            for step, app in (("a", a), ("b", b), ("a again", a)):
                timings[step] = await _timed(app, "sync")
            after = {
                name: _objects_bytes(_git_dir(path))
                for name, path in (("remote", remote), ("a", root / "a"), ("b", root / "b"))
            }
            _check(a, b, changes, shared)
            hits_a = (await a.run("search", query="zebrab", limit=1)).metadata["results"]
            hits_b = (await b.run("search", query="zebraa", limit=1)).metadata["results"]
            if not hits_a or not hits_b:
                raise SystemExit("an index did not find the other machine's notes")
        finally:
            if b is not None:
                await b.close()
            await a.close()
    return {
        "changes_per_machine": changes,
        "sync_s": timings,
        "converge_s": sum(timings.values()),
        "bytes": {name: after[name] - before[name] for name in after},
    }


def _check(a: ReMe, b: ReMe, changes: int, shared: int) -> None:
    def files(root: Path) -> dict[str, bytes]:
        return {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file() and p.relative_to(root).parts[0] not in (".git", "metadata")
        }

    tree_a, tree_b = files(a.workspace_dir), files(b.workspace_dir)
    if tree_a != tree_b:
        raise SystemExit("the two machines did not converge")
    for i in range(shared):
        text = tree_a[f"daily/2026-01-{1 + i % 28:02d}/note-{i}.md"].decode()
        if "edited on a" not in text or "edited on b" not in text:
            raise SystemExit(f"note-{i} lost an edit")
    new = [path for path in tree_a if path.startswith("daily/2026-02-01/")]
    if len(new) != 2 * (changes - shared):
        raise SystemExit(f"{len(new)} new notes, expected {2 * (changes - shared)}")


async def idle(notes: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="reme-sync-bench-") as tmp:
        root = Path(tmp)
        remote = root / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
        _write_notes(root / "a", notes)
        app = await _app(root / "a")
        try:
            await app.run("search", query="river")  # the index is built as on any start
            first = await _timed(app, "sync_init", remote=str(remote))
            times = [await _timed(app, "sync") for _ in range(repeat)]
        finally:
            await app.close()
    return {
        "notes": notes,
        "sync_init_s": first,
        "idle_sync_median_s": statistics.median(times),
        "idle_sync_max_s": max(times),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["converge", "idle", "all"])
    parser.add_argument("--changes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {}
    if args.what in ("converge", "all"):
        figures["converge"] = [asyncio.run(converge(n)) for n in args.changes]
        print(
            "| changes per machine | sync a (s) | sync b (s) | sync a again (s) | converged (s) "
            "| remote grew (KB) | a grew (KB) | b grew (KB) |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in figures["converge"]:
            t, size = row["sync_s"], row["bytes"]
            print(
                f"| {row['changes_per_machine']:,} | {t['a']:.2f} | {t['b']:.2f} | {t['a again']:.2f} "
                f"| {row['converge_s']:.2f} | {size['remote'] / 1024:.0f} | {size['a'] / 1024:.0f} "
                f"| {size['b'] / 1024:.0f} |"
            )
    if args.what in ("idle", "all"):
        figures["idle"] = asyncio.run(idle(args.notes, args.repeat))
        row = figures["idle"]
        print(
            f"\n{row['notes']:,} notes: sync_init {row['sync_init_s']:.2f} s; sync with nothing changed: "
            f"median {row['idle_sync_median_s'] * 1000:.0f} ms, worst {row['idle_sync_max_s'] * 1000:.0f} ms"
        )
    if args.json:
        print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

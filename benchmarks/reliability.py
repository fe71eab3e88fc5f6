"""Reliability under load, under contention and across kill -9 (issue 11, docs/spec.md §14 and 5.6).

    .venv/bin/python benchmarks/reliability.py load --clients 20 --seconds 30
    .venv/bin/python benchmarks/reliability.py contention --clients 10 --seconds 20
    .venv/bin/python benchmarks/reliability.py kill --kills 10
    .venv/bin/python benchmarks/reliability.py all          # the three, with their defaults

- `load`: one `reme start` service; N HTTP clients for T seconds, each running a mix of write, edit,
  move, read, stat, list, search and node_search on its own notes. Latency p50/p95/p99 per job; then
  every acknowledged write is checked on disk (exact content at its last acknowledged path) and
  in search (its unique token finds it).
- `contention`: two services and a stream of one-shot `reme start job=write` runs on one
  workspace; clients alternate between the services. Every acknowledged write must be on disk and
  found by the search of *both* services.
- `kill`: a kill -9 matrix. A child process writes (and rewrites) notes, reindexes in a loop, or
  moves a note with 200 inbound links back and forth, and is killed at a random moment; then a
  restart, and the checks: no acknowledged write lost, no partial file, no temporary file left, no
  half-done move, and an index equal (catalog rows and engine documents) to a fresh build.

Every run prints its table; `--json` adds the raw figures. Timings depend on the machine (2 cores
here, shared), the verification counts must not.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

REME = str(Path(sys.executable).with_name("reme"))
DAY = "2026-06-01"


# services ----------------------------------------------------------------------------------------


class Service:
    """A `reme start` subprocess on a workspace, found through the port it announces."""

    def __init__(self, workspace: Path, *overrides: str) -> None:
        self.log = workspace.parent / f"service-{time.monotonic_ns()}.log"
        service_file = workspace / "metadata" / "service.json"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [REME, "start", f"workspace_dir={workspace}", "service.port=0", "timezone=UTC", *overrides],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=clean_env(),
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                info = json.loads(service_file.read_text())
            except (OSError, ValueError):
                info = {}
            if info.get("pid") == self.proc.pid:
                self.url = f"http://{info['host']}:{info['port']}"
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"the service did not start:\n{self.log.read_text()}")

    def call(self, client: httpx.Client, job: str, **params: Any) -> dict[str, Any]:
        return client.post(f"{self.url}/{job}", json=params, timeout=120).json()

    def settle(self, client: httpx.Client, timeout: float = 120.0) -> dict[str, Any]:
        """Wait until the index is ready, nothing is pending and health is ok; returns its health."""
        deadline = time.monotonic() + timeout
        while True:
            health = self.call(client, "health_check")["metadata"]["components"]["index"]
            if (health["status"] == "ok" and health["ready"] and not health["pending_writes"]) or (
                time.monotonic() > deadline
            ):
                return health
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def clean_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith(("REME_", "LLM_"))}


def seed(root: Path, notes: int) -> None:
    """Background notes so searches and the index have something to chew on."""
    words = [
        "solar",
        "wind",
        "battery",
        "cobalt",
        "lithium",
        "grid",
        "turbine",
        "panel",
        "inverter",
        "storage",
        "hydrogen",
        "nuclear",
    ]
    rng = random.Random(0)
    for i in range(notes):
        path = root / "digest" / "seed" / f"s{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = " ".join(rng.choice(words) for _ in range(120))
        path.write_text(
            f"---\nname: seed {i}\n---\n# Seed {i}\n\n{text}\n\n[[digest/seed/s{(i + 1) % notes}.md]]\n"
        )


# load --------------------------------------------------------------------------------------------


class Client(threading.Thread):
    """One HTTP client running a mix of jobs on its own notes; remembers what was acknowledged."""

    MIX = [
        ("write", 30),
        ("search", 25),
        ("read", 12),
        ("edit", 10),
        ("stat", 5),
        ("list", 5),
        ("node_search", 5),
        ("move", 8),
    ]

    def __init__(self, number: int, services: list[Service], until: float) -> None:
        super().__init__(daemon=True)
        self.number, self.services, self.until = number, services, until
        self.rng = random.Random(number)
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.failures: dict[str, list[str]] = defaultdict(list)
        self.acked: dict[str, tuple[str, str]] = {}  # path -> (content, token)
        self.count = 0

    def token(self) -> str:
        self.count += 1
        return f"k{self.number:02d}q{self.count:05d}"

    def run(self) -> None:
        jobs, weights = zip(*self.MIX, strict=True)
        with httpx.Client() as http:
            calls = 0
            while time.monotonic() < self.until:
                service = self.services[calls % len(self.services)]
                calls += 1
                job = self.rng.choices(jobs, weights)[0]
                planned = self.plan(job)
                if planned is None:
                    continue
                params, after = planned
                started = time.perf_counter()
                try:
                    reply = service.call(http, job, **params)
                except httpx.HTTPError as exc:
                    self.failures[job].append(f"{type(exc).__name__}: {exc}")
                    continue
                self.latency[job].append(time.perf_counter() - started)
                if not reply["success"]:
                    self.failures[job].append(str(reply["answer"])[:200])
                    continue
                after()  # acknowledged: remember what is now on disk

    def plan(self, job: str) -> tuple[dict[str, Any], Any] | None:
        """The job's parameters and what to record once it succeeds (None: nothing to do yet)."""
        own = sorted(self.acked)
        if job == "write":
            token = self.token()
            path = f"daily/{DAY}/c{self.number:02d}-{self.count:05d}.md"
            content = f"# Note {token}\n\nwritten with {token} and solar words\n"
            return {"path": path, "content": content}, lambda: self.acked.__setitem__(path, (content, token))
        if job in ("search", "node_search"):
            return {
                "query": self.rng.choice(["solar battery", "grid turbine hydrogen", "cobalt"])
            }, lambda: None
        if job == "list":
            return {"path": f"daily/{DAY}"}, lambda: None
        if not own:
            return None
        path = self.rng.choice(own)
        if job in ("read", "stat"):
            return {"path": path}, lambda: None
        if job == "edit":
            content, old = self.acked[path]
            new = self.token()
            edited = (content.replace(old, new), new)
            return {"path": path, "old": old, "new": new}, lambda: self.acked.__setitem__(path, edited)
        dst = f"digest/c{self.number:02d}/m{self.count:05d}-{self.rng.randrange(10**6)}.md"
        return {"src": path, "dst": dst}, lambda: self.acked.__setitem__(dst, self.acked.pop(path))


def run_clients(services: list[Service], clients: int, seconds: float) -> list[Client]:
    until = time.monotonic() + seconds
    threads = [Client(i, services, until) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return threads


def verify(root: Path, clients: list[Client], services: list[Service]) -> dict[str, Any]:
    """Every acknowledged write on disk, exactly, and found by every service's search."""
    acked = {path: value for client in clients for path, value in client.acked.items()}
    lost = [path for path, (content, _) in acked.items() if _read(root / path) != content]
    missing: dict[str, int] = {}
    with httpx.Client() as http:
        for number, service in enumerate(services):
            health = service.settle(http)
            absent = 0
            for path, (_, token) in acked.items():
                hits = service.call(http, "search", query=token, limit=5, expand_links=False)
                if path not in [hit["path"] for hit in hits["metadata"]["results"]]:
                    absent += 1
            missing[f"service {number + 1}"] = absent
            missing[f"service {number + 1} health"] = health["status"]
    return {
        "acknowledged": len(acked),
        "lost_on_disk": len(lost),
        "missing_in_search": missing,
        "lost": lost[:5],
    }


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def latency_table(clients: list[Client], seconds: float) -> list[str]:
    merged: dict[str, list[float]] = defaultdict(list)
    failed: dict[str, list[str]] = defaultdict(list)
    for client in clients:
        for job, values in client.latency.items():
            merged[job] += values
        for job, messages in client.failures.items():
            failed[job] += messages
    lines = ["| job | calls | calls/s | p50 ms | p95 ms | p99 ms | failed |", "|---|---|---|---|---|---|---|"]
    for job in sorted(merged, key=lambda j: -len(merged[j])):
        values = sorted(merged[job])
        lines.append(
            f"| {job} | {len(values)} | {len(values) / seconds:.1f} | {_pct(values, 50):.1f} | "
            f"{_pct(values, 95):.1f} | {_pct(values, 99):.1f} | {len(failed[job])} |"
        )
    examples = {job: messages[0] for job, messages in failed.items() if messages}
    if examples:
        lines.append("")
        lines += [f"- {job} failed e.g.: {message}" for job, message in examples.items()]
    return lines


def _pct(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    return 1000 * values[min(len(values) - 1, int(len(values) * pct / 100))]


def bench_load(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    root = work / "load" / "ws"
    seed(root, args.seed_notes)
    service = Service(root)
    try:
        with httpx.Client() as http:
            service.settle(http)
        clients = run_clients([service], args.clients, args.seconds)
        table = latency_table(clients, args.seconds)
        checked = verify(root, clients, [service])
    finally:
        service.stop()
    print(
        f"\n## load: {args.clients} clients x {args.seconds:.0f} s, one service, {args.seed_notes} seed notes\n"
    )
    print("\n".join(table))
    print(f"\nverification: {json.dumps(checked)}")
    return {"table": table, "verify": checked}


# contention --------------------------------------------------------------------------------------


def one_shot_writes(root: Path, until: float, acked: dict[str, tuple[str, str]], failures: list[str]) -> None:
    """`reme start job=write ...` in a loop: each run opens the workspace, writes, exits."""
    n = 0
    while time.monotonic() < until:
        n += 1
        token = f"oneshot{n:05d}"
        path = f"daily/{DAY}/oneshot-{n:05d}.md"
        content = f"# One shot {token}\n\nwritten by a one-shot run with {token}\n"
        done = subprocess.run(
            [REME, "start", "job=write", f"workspace_dir={root}", "timezone=UTC",
             f"path={path}", f"content={content}"],
            capture_output=True, text=True, env=clean_env(), timeout=120,
        )  # fmt: skip
        if done.returncode == 0:
            acked[path] = (content, token)
        else:
            failures.append(done.stderr[-300:] or done.stdout[-300:])


def bench_contention(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    root = work / "contention" / "ws"
    seed(root, args.seed_notes)
    services = [Service(root), Service(root)]
    one_shot: dict[str, tuple[str, str]] = {}
    one_shot_failures: list[str] = []
    try:
        with httpx.Client() as http:
            for service in services:
                service.settle(http)
        until = time.monotonic() + args.seconds
        writer = threading.Thread(target=one_shot_writes, args=(root, until, one_shot, one_shot_failures))
        writer.start()
        clients = run_clients(services, args.clients, args.seconds)
        writer.join()
        shot = Client(99, services, 0)
        shot.acked = one_shot
        table = latency_table(clients, args.seconds)
        checked = verify(root, [*clients, shot], services)
    finally:
        for service in services:
            service.stop()
    print(
        f"\n## contention: 2 services + one-shot CLI writes, {args.clients} clients x {args.seconds:.0f} s\n"
    )
    print("\n".join(table))
    print(f"\none-shot writes: {len(one_shot)} acknowledged, {len(one_shot_failures)} failed")
    print(f"verification: {json.dumps(checked)}")
    return {
        "table": table,
        "verify": checked,
        "one_shot": len(one_shot),
        "one_shot_failed": len(one_shot_failures),
    }


# kill -9 matrix ----------------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from reme import ReMe

    workspace, scenario = sys.argv[1], sys.argv[2]

    def version(path, n):
        return f"# {path} version {n}\\n\\n" + f"version {n} of {path} " * 200 + "\\nEND\\n"

    async def main():
        async with ReMe(workspace_dir=workspace, timezone="UTC") as app:
            print("started", flush=True)
            n = 0
            while True:
                n += 1
                if scenario == "writes":
                    path = f"daily/2026-06-01/w{n % 40}.md"  # new files, then rewrites of the same ones
                    reply = await app.run("write", path=path, content=version(path, n))
                    assert reply.success, reply.answer
                    print("ack", path, n, flush=True)
                elif scenario == "reindex":
                    await app.run("reindex")
                    print("ack reindex", n, flush=True)
                else:
                    there = Path(workspace, "digest/a.md").exists()
                    src, dst = ("digest/a.md", "digest/b.md") if there else ("digest/b.md", "digest/a.md")
                    reply = await app.run("move", src=src, dst=dst)
                    assert reply.success, reply.answer
                    print("ack", dst, n, flush=True)

    asyncio.run(main())
    """
)


def version(path: str, n: int) -> str:
    return f"# {path} version {n}\n\n" + f"version {n} of {path} " * 200 + "\nEND\n"


def prepare(scenario: str, root: Path) -> None:
    seed(root, 800 if scenario == "reindex" else 150)  # a reindex of 800 notes spans 4 engine commits
    if scenario == "move":
        (root / "digest/a.md").write_text("---\nname: moving note\n---\nthe note that moves\n")
        for i in range(200):
            path = root / "daily" / DAY / f"ref{i:03d}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"ref {i} points at [[digest/a.md]] and [[digest/a.md|again]]\n")


async def fresh_content(root: Path, scratch: Path) -> dict[str, Any]:
    from reme import ReMe
    from reme.index.guard import index_content

    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(root, scratch, ignore=shutil.ignore_patterns("metadata"))
    async with ReMe(workspace_dir=scratch, timezone="UTC", **{"components.index.watch": False}) as app:
        index = app.component("index")
        index.ensure_ready()
        return index_content(index.indexer)


async def restart_and_check(scenario: str, root: Path, acks: list[str], scratch: Path) -> dict[str, Any]:
    from reme import ReMe
    from reme.index.guard import index_content

    started = time.perf_counter()
    async with ReMe(workspace_dir=root, timezone="UTC", **{"components.index.watch": False}) as app:
        index = app.component("index")
        index.ensure_ready()
        restart_s = time.perf_counter() - started
        recovered = index_content(index.indexer)
        health = index.health()["status"]
        moves = app.component("workspace").recovered_moves
    problems: list[str] = []
    temps = [str(p.relative_to(root)) for p in root.rglob("*.reme-tmp")]
    if temps:
        problems.append(f"temporary files left: {temps[:3]}")
    if scenario == "writes":
        last: dict[str, int] = {}
        for line in acks:
            _, path, n = line.split()
            last[path] = int(n)
        for path, n in last.items():
            text = _read(root / path)
            if text not in (version(path, n), version(path, n + 40)):  # the next, unacknowledged rewrite
                problems.append(f"lost or wrong: {path} (acknowledged version {n})")
        for note in (root / "daily" / DAY).glob("w*.md"):
            text = note.read_text()
            if not text.endswith("END\n") or hashlib.sha256(text.encode()).hexdigest() not in {
                hashlib.sha256(version(f"daily/{DAY}/{note.name}", n).encode()).hexdigest()
                for n in range(1, max(last.values(), default=0) + 41)
            }:
                problems.append(f"partial file: {note.name}")
    if scenario == "move":
        a, b = (root / "digest/a.md").exists(), (root / "digest/b.md").exists()
        if a == b:
            problems.append(f"a.md exists: {a}, b.md exists: {b}")
        here = "digest/a.md" if a else "digest/b.md"
        gone = "digest/b.md" if a else "digest/a.md"
        refs = [(root / "daily" / DAY / f"ref{i:03d}.md").read_text() for i in range(200)]
        stale = sum(f"[[{gone}" in text for text in refs)
        if stale or sum(text.count(f"[[{here}") for text in refs) != 400:
            problems.append(f"half-done move: {stale} file(s) still point at {gone}")
        if list((root / "metadata" / "moves").glob("*.json")):
            problems.append("move intents left")
    if recovered != await fresh_content(root, scratch):
        problems.append("index differs from a fresh build")
    if health != "ok":
        problems.append(f"health {health}")
    return {"problems": problems, "restart_s": restart_s, "moves_recovered": len(moves), "acks": len(acks)}


def bench_kill(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    rng = random.Random(args.random_seed)
    script = work / "child.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(CHILD)
    results: dict[str, list[dict[str, Any]]] = {}
    windows = {
        "writes": (0.2, 2.0),
        "reindex": (0.3, 4.0),
        "move": (0.05, 8.0),
    }  # a move: ~200 fsynced rewrites
    for scenario in args.scenarios:
        root = work / "kill" / scenario / "ws"
        shutil.rmtree(root.parent, ignore_errors=True)
        prepare(scenario, root)
        asyncio.run(fresh_content(root, root.parent / "warm"))  # nothing indexed yet in the workspace itself
        acks: list[str] = []
        results[scenario] = []
        for kill in range(args.kills):
            child = subprocess.Popen(
                [sys.executable, str(script), str(root), scenario],
                stdout=subprocess.PIPE,
                text=True,
                env=clean_env(),
            )
            assert child.stdout is not None
            if child.stdout.readline().strip() != "started":
                raise RuntimeError(f"the {scenario} child did not start")
            lines: list[str] = []
            reader = threading.Thread(target=lines.extend, args=(child.stdout,), daemon=True)
            reader.start()
            time.sleep(rng.uniform(*windows[scenario]))
            child.send_signal(signal.SIGKILL)
            child.wait(30)
            reader.join(10)
            acks += [line.strip() for line in lines if line.startswith("ack")]
            outcome = asyncio.run(restart_and_check(scenario, root, acks, root.parent / "fresh"))
            outcome["acks_this_run"] = sum(1 for line in lines if line.startswith("ack"))
            results[scenario].append(outcome)
            print(
                f"{scenario} kill {kill + 1}: {outcome['acks_this_run']} acks, problems {outcome['problems']}"
            )
    lines = [
        "| scenario | kills | acknowledged ops | runs with a problem | moves finished at restart | restart p50 / max |",
        "|---|---|---|---|---|---|",
    ]
    for scenario, outcomes in results.items():
        bad = sum(1 for outcome in outcomes if outcome["problems"])
        restarts = [outcome["restart_s"] for outcome in outcomes]
        lines.append(
            f"| {scenario} | {len(outcomes)} | {sum(o['acks_this_run'] for o in outcomes)} | {bad} | "
            f"{sum(o['moves_recovered'] for o in outcomes)} | "
            f"{statistics.median(restarts):.2f} s / {max(restarts):.2f} s |"
        )
    print(f"\n## kill -9 matrix ({args.kills} kills per scenario)\n")
    print("\n".join(lines))
    return {"table": lines, "runs": results}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=["load", "contention", "kill", "all"])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--seed-notes", type=int, default=300)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--scenarios", nargs="+", default=["writes", "reindex", "move"])
    parser.add_argument("--random-seed", type=int, default=11)
    parser.add_argument("--json", action="store_true", help="also print the raw figures as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="reme-reliability-"))
    figures: dict[str, Any] = {}
    try:
        if args.what in ("load", "all"):
            figures["load"] = bench_load(args, work)
        if args.what in ("contention", "all"):
            figures["contention"] = bench_contention(args, work)
        if args.what in ("kill", "all"):
            figures["kill"] = bench_kill(args, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(figures, default=str))


if __name__ == "__main__":
    main()

"""A huge Claude Code transcript captured beside a normal session: service memory and the other's wait.

    .venv/bin/python benchmarks/capture_huge.py [--mb 200] [--small-runs 5]

Starts a service on a fresh workspace, times the Stop hook of a small session (the fixture, sent
anew each time under a fresh session id) as the baseline, then writes a transcript of `--mb` MB
(Claude Code lines with large tool outputs) and fires its Stop hook: the hook sends the first
parts within its budget and leaves the rest to a detached drain, which sends 1 MiB parts. While
that drain runs, the small session's Stop hook is timed again. Reported: the service's RSS before,
at its peak, and once the huge capture is done (settled), and the small capture's wall time
before and during.

`--rounds N` instead appends the last 16 MiB of such a transcript N times (as N sessions) in one
process through the application, part by part as the drain sends them, and prints the process's
RSS after each round (after a garbage collection and `malloc_trim`): memory a huge capture leaves
behind, without HTTP. `--no-pin` leaves glibc's dynamic mmap threshold as it is (what a service
did before `reme.index.memory.keep_large_blocks_apart`).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REME = str(Path(sys.executable).with_name("reme"))
sys.path.insert(0, str(Path(__file__).parent))
from speed_cli import wait_for_service  # noqa: E402

FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "agents" / "claude_session.jsonl"


def huge_transcript(path: Path, megabytes: int) -> None:
    """User turns and tool results of ~20 KB each until the file holds `megabytes` MB."""
    filler = "".join(f"line {n}: build output, nothing secret here\n" for n in range(500))
    with path.open("w", encoding="utf-8") as handle:
        n = 0
        while handle.tell() < megabytes * 1_000_000:
            kind = "user" if n % 2 == 0 else "assistant"
            content = f"turn {n}: {filler}" if kind == "user" else [{"type": "text", "text": f"reply {n}"}]
            entry = {
                "type": kind,
                "uuid": f"00000000-0000-4000-8000-{n:012d}",
                "sessionId": "huge",
                "timestamp": f"2026-06-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                "message": {"role": kind, "content": content},
            }
            handle.write(json.dumps(entry) + "\n")
            n += 1


def stop(workspace: Path, session_id: str, transcript: Path, **env: str) -> float:
    payload = json.dumps(
        {"session_id": session_id, "transcript_path": str(transcript), "hook_event_name": "Stop"}
    )
    started = time.perf_counter()
    subprocess.run(
        [REME, "hook", "Stop", f"workspace_dir={workspace}"],
        input=payload,
        text=True,
        capture_output=True,
        check=True,
        env={**os.environ, **env},
    )
    return time.perf_counter() - started


async def in_process(rounds: int, pin: bool) -> None:
    """Append a 16 MiB transcript `rounds` times in this process; RSS after each round."""
    from reme.app import captures
    from reme.app.application import Application
    from reme.app.config import load_config
    from reme.index.memory import keep_large_blocks_apart

    if pin:
        keep_large_blocks_apart()
    trim = ctypes.CDLL("libc.so.6").malloc_trim
    proc = psutil.Process()
    with tempfile.TemporaryDirectory() as tmp:
        big, workspace = Path(tmp) / "huge.jsonl", Path(tmp) / "ws"
        huge_transcript(big, 17)
        config = load_config(None, {"workspace_dir": str(workspace), "scheduler.cron": False})
        async with Application(config) as app:
            await app.run(
                "agent_session_append", session_id="warm", messages=[{"role": "user", "content": "hi"}]
            )
            (workspace / captures.CAPTURES).mkdir(parents=True, exist_ok=True)
            gc.collect()
            trim(0)
            base = proc.memory_info().rss
            for n in range(rounds):
                capture = captures.Capture(
                    session_id=f"huge-{n}",
                    transcript_path=str(big),
                    source="claude_code",
                    event="Stop",
                    cwd=None,
                    at=0,
                )
                captures.write_marker(str(workspace), capture)
                started = time.perf_counter()
                report = await captures.drain_in_app(app, str(workspace))
                assert report.saved == [capture["session_id"]], report
                gc.collect()
                trim(0)
                print(
                    f"round {n + 1}: {time.perf_counter() - started:.1f} s, RSS "
                    f"+{(proc.memory_info().rss - base) / (1 << 20):.0f} MiB (pinned threshold: {pin})"
                )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--small-runs", type=int, default=5)
    parser.add_argument(
        "--service-arg", action="append", default=[], help="a config override for the service"
    )
    parser.add_argument(
        "--rounds", type=int, default=0, help="in-process: append a 16 MiB transcript N times"
    )
    parser.add_argument("--no-pin", action="store_true", help="in-process: glibc's dynamic mmap threshold")
    args = parser.parse_args()
    if args.rounds:
        asyncio.run(in_process(args.rounds, not args.no_pin))
        return
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["REME_TRANSCRIPT_DIRS"] = tmp  # the hooks read transcripts only from known folders
        workspace = Path(tmp) / "ws"
        service = subprocess.Popen(
            [
                REME,
                "start",
                f"workspace_dir={workspace}",
                "service.port=0",
                "scheduler.cron=false",
                *args.service_arg,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_service(workspace, service)
            proc = psutil.Process(service.pid)
            small = Path(tmp) / "small.jsonl"
            small.write_text(FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
            before = [stop(workspace, f"small-a{n}", small) for n in range(args.small_runs)]
            time.sleep(1)
            rss_before = proc.memory_info().rss
            big = Path(tmp) / "huge.jsonl"
            huge_transcript(big, args.mb)
            size = big.stat().st_size
            peak = rss_before
            done = threading.Event()

            def watch() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, proc.memory_info().rss)
                    time.sleep(0.05)

            threading.Thread(target=watch, daemon=True).start()
            started = time.perf_counter()
            stop(workspace, "huge", big)  # its budget, then a detached drain sends the rest
            during = [stop(workspace, f"small-b{n}", small) for n in range(args.small_runs)]
            captures = workspace / "metadata" / "agent" / "captures"
            while (captures / "huge.json").exists() and time.perf_counter() - started < 900:
                time.sleep(0.2)
            huge_s = time.perf_counter() - started
            time.sleep(2)
            done.set()
            settled = proc.memory_info().rss
            saved = sum(1 for _ in (workspace / "session" / "dialog" / "huge.jsonl").open())
            smalls = all(
                (workspace / "session" / "dialog" / f"small-b{n}.jsonl").exists()
                for n in range(args.small_runs)
            )
        finally:
            service.terminate()
            service.wait(30)
    mib = 1 << 20
    print(f"transcript: {size / 1e6:.0f} MB; saved {saved} turns of its last 16 MiB in {huge_s:.1f} s")
    print(
        f"service RSS: before {rss_before / mib:.0f} MiB, peak {peak / mib:.0f} MiB, settled {settled / mib:.0f} MiB (+{(settled - rss_before) / mib:.0f} MiB)"
    )
    print(
        f"small session Stop hook: median {statistics.median(before) * 1000:.0f} ms alone, "
        f"{statistics.median(during) * 1000:.0f} ms (max {max(during) * 1000:.0f} ms) during the huge capture; all saved: {smalls}"
    )


if __name__ == "__main__":
    main()

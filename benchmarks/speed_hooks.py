"""Claude Code hooks as Claude Code runs them: wall time of `reme hook <event>` with and without a service.

    .venv/bin/python benchmarks/speed_hooks.py [--runs 11]

Each hook gets its JSON on stdin over the hand-written fixture transcript (tests/fixtures/agents).
Rows side by side: bare `python -c pass` and `reme version` (the CLI's floor), a capture hook with
no service (marker only, `REME_HOOK_SPAWN=0`), the same capture answered by a running service (the
transcript re-sent: idempotent, nothing new to write), SessionStart recall through the service, and
SessionStart with no service (reme started in-process once per session). Prints medians of wall
time and of CPU time (user + system of the hook process: steadier than wall time on a busy machine).
Run it without PYTHONDONTWRITEBYTECODE, as a user's Python runs (cached bytecode).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REME = str(Path(sys.executable).with_name("reme"))
sys.path.insert(0, str(Path(__file__).parent))
from speed_cli import median_ms, wait_for_service  # noqa: E402

FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "agents" / "claude_session.jsonl"


def cpu_ms(command: list[str], runs: int, stdin: str | None = None, **env: str) -> float:
    """Median CPU time (user + system) of `command` over `runs` runs, in ms."""
    spent = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(command, input=stdin, capture_output=True, text=True, env={**os.environ, **env})
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return 1000 * statistics.median(spent)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        transcript = Path(shutil.copy(FIXTURE, Path(tmp) / "session.jsonl"))
        down, up = Path(tmp) / "down", Path(tmp) / "up"
        stop = json.dumps(
            {"session_id": "bench", "transcript_path": str(transcript), "hook_event_name": "Stop"}
        )
        start = json.dumps(
            {"session_id": "bench", "cwd": "/home/dev/solar-api", "hook_event_name": "SessionStart"}
        )
        rows = [
            ("python -c pass", [sys.executable, "-c", "pass"], "", {}),
            (
                "reme version (no service: in-process)",
                [REME, "start", "job=version", f"workspace_dir={down}"],
                "",
                {},
            ),
            (
                "Stop, no service (marker only)",
                [REME, "hook", "Stop", f"workspace_dir={down}"],
                stop,
                {"REME_HOOK_SPAWN": "0"},
            ),
            (
                "SessionStart, no service (in-process recall)",
                [REME, "hook", "SessionStart", f"workspace_dir={down}"],
                start,
                {},
            ),
        ]
        service = subprocess.Popen(
            [REME, "start", f"workspace_dir={up}", "service.port=0", "scheduler.cron=false"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_service(up, service)
            subprocess.run(
                [REME, "hook", "Stop", f"workspace_dir={up}"],
                input=stop,
                text=True,
                check=True,
                env={**os.environ, "REME_HOOK_BUDGET": "60"},
            )  # the first capture saves it
            rows += [
                ("reme version (service)", [REME, "version", f"workspace_dir={up}"], "", {}),
                (
                    "Stop, service (transcript re-sent)",
                    [REME, "hook", "Stop", f"workspace_dir={up}"],
                    stop,
                    {},
                ),
                (
                    "SessionStart, service (recall)",
                    [REME, "hook", "SessionStart", f"workspace_dir={up}"],
                    start,
                    {},
                ),
            ]
            print(f"| hook | wall, median of {runs} (ms) | CPU, median (ms) |\n|---|---|---|")
            for label, command, stdin, env in rows:
                wall, cpu = median_ms(command, runs, stdin, **env), cpu_ms(command, runs, stdin, **env)
                print(f"| {label} | {wall:.0f} | {cpu:.0f} |")
        finally:
            service.terminate()
            service.wait(30)


if __name__ == "__main__":
    main()

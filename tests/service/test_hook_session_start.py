"""`reme hook SessionStart` with no service, as Claude Code runs it (issue 23, items 8 and 9).

A project folder such as `web3-app` or `k8s-tools` is searched by its whole words (`web3`, `k8s`),
which is how notes write them, as well as by their parts; the in-process recall loads only what
recall needs (timings: benchmarks/speed_hooks.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests.service.test_agent_hooks import hook_in_fresh_python
from tests.support import REME, reme_env

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


def session_start(workspace: Path, cwd: str) -> str:
    payload = {"session_id": "s1", "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}
    result = subprocess.run(
        [REME, "hook", "SessionStart", f"workspace_dir={workspace}"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env=reme_env(REME_HOOK_SPAWN="0"),
        cwd=workspace.parent,
    )
    assert result.returncode == 0, result.stderr
    if not result.stdout:
        return ""
    return str(json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"])


@pytest.mark.parametrize(
    ("project", "found"),
    [
        ("/home/dev/web3-app", "daily/2026-06-01/wallet.md"),
        ("/home/dev/k8s-tools", "daily/2026-06-02/cluster.md"),
    ],
)
def test_a_project_folder_is_searched_by_its_whole_words(tmp_path: Path, project: str, found: str) -> None:
    workspace = tmp_path / "ws"
    notes = {
        "daily/2026-06-01/wallet.md": "The web3 wallet signs every transaction with ethers.\n",
        "daily/2026-06-02/cluster.md": "Our k8s ingress dropped websockets after the upgrade.\n",
    }
    for path, text in notes.items():
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text(text, encoding="utf-8")
    context = session_start(workspace, project)
    assert f"- {found}\n  > " in context  # a match, with its snippet (not only a recent note)
    other = next(path for path in notes if path != found)
    assert f"- {other}\n  > " not in context


def test_in_process_recall_loads_neither_capture_models_nor_other_jobs(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "daily" / "2026-06-01").mkdir(parents=True)
    (workspace / "daily" / "2026-06-01" / "solar.md").write_text("Solar API retries with tenacity.\n")
    payload = json.dumps(
        {"session_id": "s1", "cwd": "/home/dev/solar-api", "hook_event_name": "SessionStart"}
    )
    heavy = (
        "reme.app.steps.agent", "reme.app.steps.dream", "reme.app.steps.imports",
        "reme.pipelines.capture.session", "reme.pipelines.memory.distil", "reme.pipelines.dream.run",
        "reme.llm.embed_openai", "httpx", "fastapi", "uvicorn", "mcp", "pydantic_ai",
    )  # fmt: skip
    lines, loaded = hook_in_fresh_python("SessionStart", workspace, payload, heavy)
    assert "daily/2026-06-01/solar.md" in lines[0]  # recall answered
    assert loaded == []

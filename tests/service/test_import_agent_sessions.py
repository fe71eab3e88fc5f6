"""`reme import claude-code|codex` of past sessions and `reme hook capture` without a session id,
through the real console script (issue 23, item 7).

Transcripts are saved as the hooks save them: the session id from the transcript, secrets
redacted, the same message once (a second import adds nothing), distillation queued; the summary
counts sessions per project.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.support import REME, reme_env

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agents"
S1 = "4f1c2a9e-8b7d-4c3e-9a10-2b6f0d5e7a11"
S2 = "9d3e5b71-2c4a-4f8e-b6d0-7a1c3e9f2b44"
CODEX = "0199a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b"
SECRET = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"


def _claude_home(root: Path) -> Path:
    """A home folder whose ~/.claude/projects holds two sessions of one project, plus a sub-agent file."""
    project = root / "home" / ".claude" / "projects" / "-home-dev-solar-api"
    project.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude_session.jsonl", project / f"{S1}.jsonl")
    shutil.copy(FIXTURES / "claude_resumed.jsonl", project / f"{S2}.jsonl")
    (project / "notes.txt").write_text("not a transcript\n")
    return root / "home"


def _records(workspace: Path, session_id: str) -> list[dict]:
    text = (workspace / "session" / "dialog" / f"{session_id}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_all_claude_code_projects_import_by_default_and_once(run_reme, tmp_path: Path) -> None:
    home = _claude_home(tmp_path)
    workspace = tmp_path / "ws"
    first = run_reme("import", "claude-code", f"workspace_dir={workspace}", env=reme_env(HOME=str(home)))
    assert first.returncode == 0, first.stderr
    assert "2 session(s) in 1 project(s), 2 with new messages" in first.stdout
    assert "  solar-api: 2 session(s)" in first.stdout
    records = _records(workspace, S1)
    assert len(records) == 10 and SECRET not in json.dumps(records)
    assert not (workspace / "imports").exists()  # no note of raw JSON
    cards = list((workspace / "daily").glob(f"*/{S1}.md"))  # the session's card, queued for distillation
    assert cards and all("pending: true" in p.read_text(encoding="utf-8") for p in cards)
    before = {p: p.read_bytes() for p in (workspace / "session").rglob("*.jsonl")}
    again = run_reme(
        "import", "claude-code", f"workspace_dir={workspace}", "--json", env=reme_env(HOME=str(home))
    )
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)["metadata"]
    assert report["projects"] == {"solar-api": {"sessions": 2, "new": 0, "messages": 0}}
    assert {p: p.read_bytes() for p in (workspace / "session").rglob("*.jsonl")} == before


def test_one_transcript_file_and_a_codex_folder(run_reme, tmp_path: Path) -> None:
    home = _claude_home(tmp_path)
    workspace = tmp_path / "ws"
    one = home / ".claude" / "projects" / "-home-dev-solar-api" / f"{S1}.jsonl"
    result = run_reme("import", "claude-code", str(one), f"workspace_dir={workspace}")
    assert result.returncode == 0, result.stderr
    assert len(_records(workspace, S1)) == 10
    day = tmp_path / "codex" / "sessions" / "2026" / "06" / "03"
    day.mkdir(parents=True)
    shutil.copy(next(FIXTURES.glob("rollout-*.jsonl")), day)
    codex = run_reme("import", "codex", str(tmp_path / "codex" / "sessions"), f"workspace_dir={workspace}")
    assert codex.returncode == 0, codex.stderr
    assert "1 session(s) in 1 project(s), 1 with new messages" in codex.stdout
    assert len(_records(workspace, CODEX)) == 4


def test_a_folder_without_transcripts_says_so(run_reme, tmp_path: Path) -> None:
    empty = tmp_path / "sessions"
    empty.mkdir()
    result = run_reme("import", "codex", str(empty), f"workspace_dir={tmp_path / 'ws'}")
    assert result.returncode == 1 and "no Codex rollouts (.jsonl)" in result.stderr
    claude = run_reme("import", "claude-code", str(empty), f"workspace_dir={tmp_path / 'ws'}")
    assert (
        claude.returncode == 1 and "no Claude Code transcripts (.jsonl) and no memory files" in claude.stderr
    )
    assert not (tmp_path / "ws" / "imports").exists()


def test_hook_capture_takes_the_session_id_from_the_transcript(tmp_path: Path) -> None:
    home = _claude_home(tmp_path)
    workspace = tmp_path / "ws"
    transcript = home / ".claude" / "projects" / "-home-dev-solar-api" / f"{S1}.jsonl"
    result = subprocess.run(
        [
            REME,
            "hook",
            "capture",
            "source=claude_code",
            f"transcript_path={transcript}",
            f"workspace_dir={workspace}",
        ],
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        env=reme_env(REME_HOOK_SPAWN="0", HOME=str(home)),  # the transcript lies in that user's ~/.claude
    )
    assert result.returncode == 0 and "nothing captured" not in result.stderr, result.stderr
    marker = workspace / "metadata" / "agent" / "captures" / f"{S1}.json"
    assert json.loads(marker.read_text())["session_id"] == S1

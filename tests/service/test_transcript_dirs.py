"""Hooks read only transcripts (issue 21 item 4): a `transcript_path` outside Claude Code's and
Codex's session folders, or a folder the user named, is refused with a message — exit 0, nothing
captured — also when a symlink inside an allowed folder leads out."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from tests.service.test_agent_hooks import FIXTURES, S1, event, hook, markers

from reme.service.transcript_dirs import NotATranscript, allowed_transcript


def lay_out(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The workspace, the user's Claude Code projects folder, and a private file shaped like a transcript."""
    workspace, projects = tmp_path / "ws", tmp_path / "home" / ".claude" / "projects" / "-p"
    projects.mkdir(parents=True)
    private = tmp_path / "private" / "notes.jsonl"
    private.parent.mkdir()
    shutil.copy(FIXTURES / "claude_session.jsonl", private)
    return workspace, projects, private


def captured(workspace: Path) -> list[Path]:
    return sorted((workspace / "session").rglob("*.jsonl")) if (workspace / "session").is_dir() else []


@pytest.mark.slow
def test_a_file_outside_the_transcript_folders_is_refused_by_the_running_service(tmp_path, reme_service):
    workspace, projects, private = lay_out(tmp_path)
    reme_service(workspace, "service.port=0", "scheduler.cron=false")
    linked = projects / f"{S1}.jsonl"
    linked.symlink_to(private)  # inside ~/.claude/projects by name, outside once resolved
    for path in (private, linked):
        result = hook("Stop", event("Stop", path), workspace)
        assert result.returncode == 0 and result.stdout == ""
        assert "is not inside a transcript folder" in result.stderr and "nothing captured" in result.stderr
    by_hand = hook(
        "capture", "", workspace, "source=claude_code", f"transcript_path={private}", f"session_id={S1}"
    )
    assert by_hand.returncode == 0 and "is not inside a transcript folder" in by_hand.stderr
    assert captured(workspace) == [] and markers(workspace) == []


@pytest.mark.slow
def test_a_configured_folder_and_the_claude_folder_are_read(tmp_path, reme_service):
    workspace, projects, private = lay_out(tmp_path)
    reme_service(workspace, "service.port=0", "scheduler.cron=false")
    own = hook("Stop", event("Stop", Path(shutil.copy(private, projects / f"{S1}.jsonl"))), workspace)
    assert own.returncode == 0, own.stderr
    assert [p.name for p in captured(workspace)] == [f"{S1}.jsonl"]
    other = "5a1c2a9e-8b7d-4c3e-9a10-2b6f0d5e7a11"
    by_argument = hook("Stop", event("Stop", private, other), workspace, f"transcript_dirs={private.parent}")
    assert by_argument.returncode == 0 and "not inside" not in by_argument.stderr, by_argument.stderr
    third = "6b1c2a9e-8b7d-4c3e-9a10-2b6f0d5e7a11"
    by_env = hook("Stop", event("Stop", private, third), workspace, REME_TRANSCRIPT_DIRS=str(private.parent))
    assert by_env.returncode == 0 and "not inside" not in by_env.stderr, by_env.stderr
    assert {p.name for p in captured(workspace)} == {f"{S1}.jsonl", f"{other}.jsonl", f"{third}.jsonl"}
    assert all(
        json.loads(line)
        for line in (workspace / "session/dialog" / f"{other}.jsonl").read_text().splitlines()
    )


def test_the_rule_resolves_links_and_dot_dots_first(tmp_path):
    env = {"HOME": str(tmp_path)}
    projects = tmp_path / ".claude" / "projects"
    projects.mkdir(parents=True)
    (tmp_path / "secret").write_text("{}\n")
    inside = projects / "t.jsonl"
    inside.write_text("{}\n")
    assert allowed_transcript(str(inside), {}, env) == os.path.realpath(inside)
    for sneaky in (
        str(projects / ".." / ".." / "secret"),
        str(tmp_path / ".claude" / "projects-x" / "t.jsonl"),
    ):
        try:
            allowed_transcript(sneaky, {}, env)
        except NotATranscript as exc:
            assert "transcript_dirs=" in str(exc)
        else:
            raise AssertionError(f"{sneaky} was allowed")
    codex = tmp_path / "cx"
    assert allowed_transcript(str(codex / "sessions" / "r.jsonl"), {}, {**env, "CODEX_HOME": str(codex)})

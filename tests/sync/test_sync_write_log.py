"""The write ledger behind sync's per-job commits: outermost job wins, bounded, best effort."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reme.workspace import write_log
from reme.workspace.atomic import atomic_write


def test_writes_are_noted_only_inside_a_job_of_a_repository(tmp_path: Path) -> None:
    atomic_write(tmp_path / "a.md", "x", tmp_path)
    (tmp_path / ".git").mkdir()
    atomic_write(tmp_path / "b.md", "outside any job", tmp_path)
    with write_log.running("auto_dream"), write_log.running("digest_edit"):  # a tool call inside a dream
        atomic_write(tmp_path / "c.md", "y", tmp_path)
    assert write_log.take(tmp_path / ".git") == {"c.md": ("auto_dream", write_log.blob_id(b"y"))}
    assert write_log.take(tmp_path / ".git") == {}  # taken once


def test_the_ledger_stays_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.setattr(write_log, "MAX_LEDGER_BYTES", 2000)
    with write_log.running("write"):
        for n in range(200):
            write_log.note(tmp_path, f"note-{n % 5}.md", str(n).encode())
    ledger = tmp_path / ".git" / write_log.LEDGER
    assert ledger.stat().st_size < 4000
    lines = [json.loads(line) for line in ledger.read_text().splitlines()]
    latest = {line["path"]: line["blob"] for line in lines}
    assert latest["note-4.md"] == write_log.blob_id(b"199")

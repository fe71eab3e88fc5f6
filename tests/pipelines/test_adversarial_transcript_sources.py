"""Adversarial transcript sources: the folders a capture may read (links, swaps, FIFOs, odd paths) and
Codex rollouts given to `import_codex` and the hook's drain (ids across parts and files, grown,
duplicated and damaged files).

The promise (docs/capture-safety.md, docs/integrations.md, docs/imports.md): a capture never reads
outside the workspace and the transcript folders the user allowed, a bad path is answered with a clear
error and loses nothing, and every turn of a rollout is saved exactly once.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.pipelines.imports_support import dialog

from reme import ReMe
from reme.app import captures
from reme.app.captures import Capture, read_transcript, write_marker
from reme.app.steps import session_imports
from reme.pipelines.imports import sessions
from reme.service import hooks
from reme.service.transcript_dirs import NotATranscript, allowed_transcript, transcript_dirs

S = "4f1c2a9e-8b7d-4c3e-9a10-2b6f0d5e7a11"
CODEX = "0199a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b"
OUTSIDE = "zanzibarquokka"  # a word only the outside file holds


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail the test instead of hanging when a read blocks (opening a FIFO that has no writer)."""

    def expire(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"blocked for over {seconds} s")

    before = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def claude_turn(uuid: str, text: str) -> str:
    entry = {
        "type": "user",
        "uuid": uuid,
        "sessionId": S,
        "timestamp": "2026-06-01T10:00:00Z",
        "message": {"role": "user", "content": text},
    }
    return json.dumps(entry) + "\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder whose Claude Code projects folder is the only transcript folder allowed."""
    root = tmp_path / "home"
    (root / ".claude" / "projects" / "-p").mkdir(parents=True)
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "REME_TRANSCRIPT_DIRS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(root))
    monkeypatch.setenv("REME_HOOK_SPAWN", "0")  # the test drains itself
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A private file outside every transcript folder, shaped like a Claude Code transcript."""
    private = tmp_path / "private" / f"{S}.jsonl"
    private.parent.mkdir()
    private.write_text(claude_turn("o1", f"my {OUTSIDE} secret"), encoding="utf-8")
    return private


def hook_capture(workspace: Path, transcript: Path, *extra: str) -> str:
    """`reme hook capture` in this process; what it printed on stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = hooks.main(
            ["capture", f"workspace_dir={workspace}", f"transcript_path={transcript}", *extra],
            io.StringIO(""),
        )
    assert code == 0
    return err.getvalue()


def saved_text(workspace: Path) -> str:
    folder = workspace / "session"
    return "".join(p.read_text(encoding="utf-8") for p in folder.rglob("*.jsonl")) if folder.is_dir() else ""


def queued(workspace: Path) -> list[str]:
    return [os.path.basename(path) for path, _ in captures.markers(str(workspace))]


# the transcript folders -----------------------------------------------------------------------


def test_links_dot_dots_relative_paths_and_trailing_slashes_are_resolved_before_the_check(
    home: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = home / ".claude" / "projects" / "-p"
    own = project / f"{S}.jsonl"
    own.write_text(claude_turn("u1", "hello"), encoding="utf-8")
    (project / "passwd.jsonl").symlink_to("/etc/passwd")
    (project / "away").symlink_to(outside.parent, target_is_directory=True)
    monkeypatch.chdir(project)
    assert allowed_transcript(f"{S}.jsonl", {}) == str(own)  # relative to the hook's folder
    assert allowed_transcript(f"{own}/", {}) == str(own)
    for sneaky in (
        project / "passwd.jsonl",
        project / "away" / outside.name,
        project / ".." / ".." / ".." / "private" / outside.name,
        Path("..") / ".." / ".." / "private" / outside.name,
    ):
        with pytest.raises(NotATranscript, match="transcript_dirs="):
            allowed_transcript(str(sneaky), {})
    assert allowed_transcript(str(outside), {}, {**os.environ, "REME_TRANSCRIPT_DIRS": f"{outside.parent}/"})


def test_a_fifo_or_a_folder_named_as_the_transcript_is_refused_at_once(home: Path, tmp_path: Path) -> None:
    """A hook given a FIFO (no writer) must not block the agent; a folder is no transcript either."""
    workspace = tmp_path / "ws"
    project = home / ".claude" / "projects" / "-p"
    fifo = project / f"{S}.jsonl"
    os.mkfifo(fifo)
    for path in (fifo, project):
        with deadline(5):
            note = hook_capture(workspace, path, "source=codex")
        assert "not a regular file" in note and "nothing captured" in note, note
        with pytest.raises(NotATranscript, match="not a regular file"):
            allowed_transcript(str(path), {})
    assert queued(workspace) == []


async def test_a_queued_capture_whose_transcript_became_a_fifo_fails_at_once(
    home: Path, workspace_dir: Path, app: ReMe
) -> None:
    project = home / ".claude" / "projects" / "-p"
    transcript = project / f"{S}.jsonl"
    transcript.write_text(claude_turn("u1", "hello"), encoding="utf-8")
    hook_capture(workspace_dir, transcript, f"session_id={S}")
    transcript.unlink()
    os.mkfifo(transcript)
    with deadline(5):  # the drain holds the drain lock: a hang would block every later capture
        retried = await app.run("capture_retry")
    assert not retried.success and "not a regular file" in str(retried.answer), retried.answer
    assert queued(workspace_dir) == [f"{S}.json"]  # kept: it can be dropped or retried


@pytest.mark.parametrize("swapped", ["file", "folder"])
async def test_a_transcript_swapped_for_a_link_after_the_hook_checked_it_is_not_read(
    home: Path, outside: Path, workspace_dir: Path, app: ReMe, swapped: str
) -> None:
    """The hook checks the path; the drain reads it later (the service may be down for hours). A link
    put there meanwhile must not make the drain read the file it leads to."""
    project = home / ".claude" / "projects" / "-p"
    transcript = project / f"{S}.jsonl"
    transcript.write_text(claude_turn("u1", "an ordinary turn"), encoding="utf-8")
    assert "nothing captured" not in hook_capture(workspace_dir, transcript, f"session_id={S}")
    assert queued(workspace_dir) == [f"{S}.json"]
    if swapped == "file":
        transcript.unlink()
        transcript.symlink_to(outside)
    else:
        project.rename(project.with_name("-p-parked"))
        project.symlink_to(outside.parent, target_is_directory=True)
    retried = await app.run("capture_retry")
    assert not retried.success and "symbolic link" in str(retried.answer), retried.answer
    assert OUTSIDE not in saved_text(workspace_dir)
    assert queued(workspace_dir) == [f"{S}.json"]
    if swapped == "file":
        transcript.unlink()
        transcript.write_text(claude_turn("u1", "an ordinary turn"), encoding="utf-8")
    else:
        project.unlink()
        project.with_name("-p-parked").rename(project)
    again = await app.run("capture_retry")
    assert again.success, again.answer
    assert "an ordinary turn" in saved_text(workspace_dir) and queued(workspace_dir) == []


def test_reading_a_transcript_refuses_what_is_not_a_regular_file_or_moved_behind_a_link(
    tmp_path: Path, outside: Path
) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    link = tmp_path / "link.jsonl"
    link.symlink_to(outside)
    with pytest.raises(OSError, match="not a regular file"), deadline(5):
        read_transcript(str(fifo))
    with pytest.raises(OSError, match="symbolic link"):
        read_transcript(str(link))
    assert [e["uuid"] for e in read_transcript(str(outside)).entries] == ["o1"]


# Codex rollouts --------------------------------------------------------------------------------


def meta(session_id: str = CODEX) -> dict[str, Any]:
    return {
        "timestamp": "2026-06-03T10:00:00.000Z",
        "type": "session_meta",
        "payload": {"id": session_id, "cwd": "/home/dev/solar-api"},
    }


def said(role: str, text: str, at: str | None = None) -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    item = {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
    return {"timestamp": at, "type": "response_item", "payload": item} if at else item


def rollout(folder: Path, lines: list[Any], session_id: str = CODEX, raw_tail: str = "") -> Path:
    path = folder / f"rollout-2026-06-03T10-00-00-{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(body + raw_tail, encoding="utf-8")
    return path


async def test_a_rollout_reimported_after_it_grew_adds_only_the_new_turns(
    tmp_path: Path, workspace_dir: Path, app: ReMe
) -> None:
    folder = tmp_path / "codex" / "sessions" / "2026" / "06" / "03"
    first = [meta(), said("user", "build it", "2026-06-03T10:00:01.000Z")]
    cut = '{"timestamp": "2026-06-03T10:00:02.000Z", "type": "response_item", "payload": {"type": "mess'
    path = rollout(folder, [*first, said("assistant", "built", "2026-06-03T10:00:02.000Z")], raw_tail=cut)
    one = await app.run("import_codex", source=str(tmp_path / "codex" / "sessions"))
    assert one.success, one.answer
    assert "1 line(s) not JSON" in str(one.answer)  # the line Codex was still writing
    assert dialog(workspace_dir, CODEX) == ["build it", "built"]
    grown = [*first, said("assistant", "built", "2026-06-03T10:00:02.000Z")]
    grown += [
        said("user", "test it", "2026-06-03T10:00:03.000Z"),
        said("assistant", "ok", "2026-06-03T10:00:04.000Z"),
    ]
    rollout(folder, grown)
    two = await app.run("import_codex", source=str(path))
    assert two.success and two.metadata["projects"]["solar-api"]["messages"] == 2, two.answer
    assert dialog(workspace_dir, CODEX) == ["build it", "built", "test it", "ok"]
    three = await app.run("import_codex", source=str(path))
    assert three.metadata["projects"]["solar-api"]["messages"] == 0


def older_rollout(turns: int) -> list[Any]:
    """The early rollout form: no timestamps on items, so the same reply twice has the same text and time."""
    lines: list[Any] = [{"id": CODEX, "timestamp": "2026-03-01T10:00:00Z", "instructions": None}]
    for number in range(turns):
        lines += [said("user", f"step {number}"), said("assistant", "done")]
    return lines


async def test_a_reply_repeated_across_import_batches_is_kept_each_time(
    tmp_path: Path, workspace_dir: Path, app: ReMe, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sessions, "BATCH_ENTRIES", 4)  # a long rollout is saved in parts
    path = rollout(tmp_path / "codex", older_rollout(5))
    imported = await app.run("import_codex", source=str(path))
    assert imported.success, imported.answer
    assert dialog(workspace_dir, CODEX).count("done") == 5


async def test_an_import_after_hook_captures_adds_nothing_twice(
    tmp_path: Path, workspace_dir: Path, app: ReMe
) -> None:
    lines = [meta()]
    for second in range(1, 7):
        lines.append(
            said("user" if second % 2 else "assistant", "same words", f"2026-06-03T10:00:0{second}.000Z")
        )
    path = rollout(tmp_path / "codex", lines[:4])
    capture = Capture(
        session_id=CODEX, transcript_path=str(path), source="codex", event="capture", cwd=None, at=0.0
    )
    write_marker(str(workspace_dir), capture)
    await captures.drain_in_app(app, str(workspace_dir))
    rollout(tmp_path / "codex", lines)
    write_marker(str(workspace_dir), capture)
    await captures.drain_in_app(app, str(workspace_dir))
    imported = await app.run("import_codex", source=str(path))
    assert imported.metadata["projects"]["solar-api"]["messages"] == 0, imported.answer
    assert len(dialog(workspace_dir, CODEX)) == 6


async def test_two_rollouts_of_one_session_and_odd_records_lose_no_turn(
    tmp_path: Path, workspace_dir: Path, app: ReMe
) -> None:
    folder = tmp_path / "codex"
    odd: list[Any] = [
        {"timestamp": "2026-06-03T10:00:05.000Z", "type": "response_item", "payload": ["not", "an", "item"]},
        {"timestamp": {"when": "now"}, "type": "response_item", "payload": said("user", "bad time")},
        {"timestamp": "2026-06-03T10:00:06.000Z", "type": "response_item", "payload": {"type": None}},
        {"type": "response_item", "payload": {"type": "message", "role": ["user"], "content": "x"}},
        {"timestamp": "2026-06-03T10:00:07.000Z", "type": {"a": 1}, "payload": {}},
        {
            "timestamp": "2026-06-03T10:00:08.000Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": {"text": "dict"}},
        },
        "a string line",
        [1, 2],
        None,
    ]
    first = [meta(), said("user", "first file", "2026-06-03T10:00:01.000Z"), *odd]
    rollout(folder / "a", first)
    rollout(
        folder / "b",
        [
            meta(),
            said("user", "first file", "2026-06-03T10:00:01.000Z"),
            said("assistant", "second file", "2026-06-03T10:00:09.000Z"),
        ],
    )
    imported = await app.run("import_codex", source=str(folder))
    assert imported.success, imported.answer
    assert dialog(workspace_dir, CODEX) == ["first file", "second file"]


async def test_a_rollout_whose_session_meta_names_no_usable_id_is_saved_under_its_file_name(
    tmp_path: Path, workspace_dir: Path, app: ReMe
) -> None:
    path = rollout(
        tmp_path / "codex", [meta("../../digest/evil"), said("user", "hello", "2026-06-03T10:00:01.000Z")]
    )
    imported = await app.run("import_codex", source=str(path))
    assert imported.success, imported.answer
    assert dialog(workspace_dir, CODEX) == ["hello"]
    assert not (workspace_dir / "digest" / "evil.jsonl").exists()


async def test_a_fifo_named_like_a_rollout_in_an_import_folder_is_passed_over_not_waited_on(
    tmp_path: Path, workspace_dir: Path, app: ReMe
) -> None:
    folder = tmp_path / "codex" / "sessions" / "2026" / "06" / "03"
    rollout(folder, [meta(), said("user", "build it", "2026-06-03T10:00:01.000Z")])
    os.mkfifo(folder / "rollout-2026-06-03T11-00-00-0199a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5c.jsonl")
    with deadline(20):
        done = await app.run("import_codex", source=str(tmp_path / "codex" / "sessions"))
    assert done.success, done.answer
    assert dialog(workspace_dir, CODEX) == ["build it"]


async def test_a_fifo_given_as_the_import_source_is_refused_not_waited_on(
    tmp_path: Path, workspace_dir: Path, app: ReMe
) -> None:
    fifo = tmp_path / "rollout.jsonl"
    os.mkfifo(fifo)
    with deadline(20):
        done = await app.run("import_codex", source=str(fifo))
    assert not done.success and "not a .jsonl file or a folder" in str(done.answer)


def test_a_rollout_over_max_file_bytes_is_reported_and_not_read(tmp_path: Path) -> None:
    folder = tmp_path / "codex" / "sessions" / "2026" / "06" / "03"
    path = rollout(folder, [meta(), said("user", "x" * 5000, "2026-06-03T10:00:01.000Z")])
    read = session_imports._read(path, max_file_bytes=1000)
    assert read.problem == f"{path.stat().st_size} bytes, over max_file_bytes (1000)"
    assert read.entries == []


def test_a_relative_transcript_folder_is_left_out_not_read_against_wherever_the_hook_runs(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "t.jsonl").write_text("{}\n", encoding="utf-8")
    environ = {"HOME": str(home), "REME_TRANSCRIPT_DIRS": f"logs{os.pathsep}{tmp_path / 'abs'}"}
    assert str(tmp_path / "logs") not in transcript_dirs({}, environ)
    assert str(tmp_path / "abs") in transcript_dirs({}, environ)
    with pytest.raises(NotATranscript):
        allowed_transcript("logs/t.jsonl", {}, environ)

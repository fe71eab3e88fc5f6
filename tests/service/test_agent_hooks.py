"""`reme hook <event>` driven exactly as Claude Code drives it: a subprocess, the event's JSON on stdin,
stdout (`hookSpecificOutput.additionalContext`) as the context channel, exit status 0 whatever happens."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.support import REME, reme_env

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agents"
S1 = "4f1c2a9e-8b7d-4c3e-9a10-2b6f0d5e7a11"
S2 = "9d3e5b71-2c4a-4f8e-b6d0-7a1c3e9f2b44"
CODEX = "0199a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b"
HOOK_TIMEOUT = 10  # what `reme install claude-code` gives capture hooks


def hook(
    event: str, payload: dict[str, Any] | str, workspace: Path, *extra: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run one hook; a generous service budget unless the test sets one (this machine is shared)."""
    env = {
        "REME_HOOK_BUDGET": "60",
        "HOME": str(workspace.parent / "home"),
        **env,
    }  # `transcripts` live there
    return subprocess.run(
        [REME, "hook", event, f"workspace_dir={workspace}", *extra],
        input=payload if isinstance(payload, str) else json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env=reme_env(**env),
        cwd=workspace.parent,
    )


def event(name: str, transcript: Path, session_id: str = S1, **fields: Any) -> dict[str, Any]:
    """The common input fields of every Claude Code hook, plus the event's own."""
    return {
        "session_id": session_id,
        "transcript_path": str(transcript),
        "cwd": "/home/dev/solar-api",
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }


@pytest.fixture
def transcripts(tmp_path: Path) -> dict[str, Path]:
    """Copies of the fixture transcripts where Claude Code keeps them."""
    folder = tmp_path / "home" / ".claude" / "projects" / "-home-dev-solar-api"
    folder.mkdir(parents=True)
    return {
        S1: Path(shutil.copy(FIXTURES / "claude_session.jsonl", folder / f"{S1}.jsonl")),
        S2: Path(shutil.copy(FIXTURES / "claude_resumed.jsonl", folder / f"{S2}.jsonl")),
    }


def saved(workspace: Path, session_id: str) -> list[dict[str, Any]]:
    path = workspace / "session" / "dialog" / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def markers(workspace: Path) -> list[str]:
    folder = workspace / "metadata" / "agent" / "captures"
    return sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []


def context_of(result: subprocess.CompletedProcess[str], name: str) -> str:
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == name
    return str(output["hookSpecificOutput"]["additionalContext"])


# with the service running ----------------------------------------------------------------------


@pytest.mark.slow
def test_capture_recall_and_prompt_hooks_with_the_service(tmp_path: Path, reme_service, transcripts) -> None:
    workspace = tmp_path / "ws"
    reme_service(workspace, "service.port=0", "scheduler.cron=false")
    stop = hook("Stop", event("Stop", transcripts[S1], stop_hook_active=False), workspace)
    assert stop.returncode == 0 and stop.stdout == "", stop.stderr
    records = saved(workspace, S1)
    assert len(records) == 10 and "sk-proj-" not in json.dumps(records)
    assert markers(workspace) == []
    before = (workspace / "session" / "dialog" / f"{S1}.jsonl").read_bytes()
    for name, fields in (
        ("PreCompact", {"trigger": "auto", "custom_instructions": ""}),
        ("SessionEnd", {"reason": "exit"}),
    ):
        again = hook(name, event(name, transcripts[S1], **fields), workspace)
        assert again.returncode == 0 and again.stdout == ""
    assert (workspace / "session" / "dialog" / f"{S1}.jsonl").read_bytes() == before  # idempotent

    start = hook("SessionStart", event("SessionStart", transcripts[S2], S2, source="resume"), workspace)
    block = context_of(start, "SessionStart")
    assert block.startswith("<reme-context") and block.endswith("</reme-context>") and len(block) <= 4000
    assert f"daily/2026-06-01/{S1}.md" in block

    prompt = event("UserPromptSubmit", transcripts[S2], S2, prompt="how do the solar retries work?")
    off = hook("UserPromptSubmit", prompt, workspace)
    assert off.returncode == 0 and off.stdout == ""  # off by default
    on = hook("UserPromptSubmit", prompt, workspace, "prompt_recall=true")
    assert len(context_of(on, "UserPromptSubmit")) <= 1500
    by_env = hook("UserPromptSubmit", prompt, workspace, REME_HOOK_PROMPT_RECALL="1")
    assert context_of(by_env, "UserPromptSubmit")


# with the service down ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_capture_with_the_service_down_returns_at_once_and_is_picked_up_next_time(
    tmp_path: Path, reme_service, transcripts
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "metadata").mkdir(parents=True)
    dead = {"host": "127.0.0.1", "port": 9, "backend": "http", "pid": 999999999}  # a service that died
    (workspace / "metadata" / "service.json").write_text(json.dumps(dead))
    began = time.monotonic()
    down = hook("Stop", event("Stop", transcripts[S1]), workspace, REME_HOOK_SPAWN="0")
    assert time.monotonic() - began < HOOK_TIMEOUT
    assert down.returncode == 0 and down.stdout == ""
    assert markers(workspace) == [f"{S1}.json"]
    assert not (workspace / "session" / "dialog" / f"{S1}.jsonl").exists()  # the session is left untouched

    reme_service(workspace, "service.port=0", "scheduler.cron=false")
    up = hook(
        "Stop", event("Stop", transcripts[S2], S2), workspace, REME_HOOK_SPAWN="0", REME_HOOK_BUDGET="60"
    )
    assert up.returncode == 0, up.stderr
    assert len(saved(workspace, S1)) == 10 and len(saved(workspace, S2)) == 4
    assert markers(workspace) == []


@pytest.mark.slow
def test_with_no_service_a_detached_process_saves_the_transcript(tmp_path: Path, transcripts) -> None:
    workspace = tmp_path / "ws"
    began = time.monotonic()
    result = hook("SessionEnd", event("SessionEnd", transcripts[S1], reason="logout"), workspace)
    assert time.monotonic() - began < HOOK_TIMEOUT and result.returncode == 0
    target = workspace / "session" / "dialog" / f"{S1}.jsonl"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (markers(workspace) or not target.exists()):
        time.sleep(0.2)
    log = workspace / "metadata" / "agent" / "drain.log"
    assert target.exists(), log.read_text() if log.exists() else "no drain log"
    assert len(saved(workspace, S1)) == 10 and markers(workspace) == []


@pytest.mark.slow
def test_session_start_without_a_service_recalls_in_process(tmp_path: Path, transcripts) -> None:
    workspace = tmp_path / "ws"
    (workspace / "daily" / "2026-06-01").mkdir(parents=True)
    (workspace / "daily" / "2026-06-01" / "solar.md").write_text(
        "---\nname: solar\ndescription: solar API retries\n---\nRetries with tenacity.\n"
    )
    result = hook("SessionStart", event("SessionStart", transcripts[S1], source="startup"), workspace)
    assert "daily/2026-06-01/solar.md" in context_of(result, "SessionStart")


# never in the way ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("Stop", "this is not json"),
        ("Stop", "[1, 2]"),
        ("Stop", json.dumps({"session_id": S1, "hook_event_name": "Stop"})),  # no transcript_path
        ("Stop", json.dumps({"session_id": S1, "transcript_path": "/nonexistent/x.jsonl"})),
        ("PreCompact", json.dumps({"session_id": "../../etc", "transcript_path": "/dev/null"})),
        ("SessionStart", "{broken"),
    ],
)
def test_bad_input_never_blocks_the_session(tmp_path: Path, name: str, payload: str) -> None:
    result = hook(name, payload, tmp_path / "ws", REME_HOOK_SPAWN="0")
    assert result.returncode == 0 and result.stdout == ""


def doctor_agents(workspace: Path) -> list[dict[str, Any]]:
    """`reme doctor`'s checks of the agent captures of `workspace`."""
    result = subprocess.run(
        [REME, "doctor", f"workspace_dir={workspace}", "probe=false", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=reme_env(),
    )
    return [c for c in json.loads(result.stdout) if c["area"] == "agents"]


@pytest.mark.slow
def test_usage_errors_never_exit_2(tmp_path: Path) -> None:
    result = hook("NoSuchEvent", "{}", tmp_path / "ws")
    assert result.returncode == 1 and "usage" in result.stderr


def hook_in_fresh_python(
    event: str, workspace: Path, payload: str, heavy: tuple[str, ...], **env: str
) -> tuple[list[str], list[str]]:
    """Run one hook in a new interpreter: (its output lines, the modules starting with `heavy` it imported)."""
    code = (
        "import io, json, sys\n"
        "from reme.service import hooks\n"
        f"hooks.main([{event!r}, 'workspace_dir={workspace}'], io.StringIO({payload!r}))\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({heavy!r}))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=reme_env(REME_HOOK_SPAWN="0", **env),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    return lines[:-1], json.loads(lines[-1])


@pytest.mark.slow
def test_a_capture_hook_imports_neither_the_app_nor_the_web_stack(tmp_path: Path, transcripts) -> None:
    heavy = (
        "reme.app.application", "reme.app.jobs", "reme.index", "reme.llm", "reme.pipelines",
        "fastapi", "uvicorn", "mcp", "pydantic", "httpx",
    )  # fmt: skip
    payload = json.dumps(event("Stop", transcripts[S1]))
    _, loaded = hook_in_fresh_python("Stop", tmp_path / "ws", payload, heavy, HOME=str(tmp_path / "home"))
    assert loaded == []


@pytest.mark.slow
def test_codex_notify_and_capture_save_the_rollout(tmp_path: Path, reme_service) -> None:
    workspace = tmp_path / "ws"
    reme_service(workspace, "service.port=0", "scheduler.cron=false")
    codex_home = tmp_path / "codex"
    day = codex_home / "sessions" / "2026" / "06" / "03"
    day.mkdir(parents=True)
    rollout = Path(shutil.copy(next(FIXTURES.glob("rollout-*.jsonl")), day))
    notice = {
        "type": "agent-turn-complete",
        "thread-id": CODEX,
        "turn-id": "1",
        "cwd": "/home/dev/solar-api",
        "input-messages": ["Why does make build fail?"],
        "last-assistant-message": "The build needs the OpenSSL headers",
    }
    result = subprocess.run(
        [REME, "hook", "codex-notify", f"workspace_dir={workspace}", json.dumps(notice)],
        capture_output=True,
        text=True,
        timeout=60,
        env=reme_env(CODEX_HOME=str(codex_home), REME_HOOK_BUDGET="60"),
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0 and result.stdout == "", result.stderr
    records = saved(workspace, CODEX)
    assert len(records) == 4 and "AKIAQ3EGUKLB7XRZ2M4P" not in json.dumps(records)
    before = (workspace / "session" / "dialog" / f"{CODEX}.jsonl").read_bytes()
    again = hook(
        "capture", "", workspace, "source=codex", f"transcript_path={rollout}", CODEX_HOME=str(codex_home)
    )
    assert again.returncode == 0, again.stderr
    assert (workspace / "session" / "dialog" / f"{CODEX}.jsonl").read_bytes() == before
    assert markers(workspace) == []


@pytest.mark.slow
def test_a_session_id_that_is_not_a_plain_name_writes_nothing_anywhere(tmp_path: Path, transcripts) -> None:
    workspace = tmp_path / "ws"
    for bad in ("../../escape", "a/b", ".hidden", "x" * 200):
        result = hook("Stop", event("Stop", transcripts[S1], bad), workspace, REME_HOOK_SPAWN="0")
        assert result.returncode == 0 and "not a plain name" in result.stderr
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json")) == []


def test_each_capture_sends_only_the_lines_added_since_the_last_saved_one(tmp_path: Path) -> None:
    from reme.app.captures import append_params, saved_up_to

    workspace, transcript = tmp_path / "ws", tmp_path / "t.jsonl"
    lines = (FIXTURES / "claude_session.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    half_written = lines[10].rstrip("\n")  # the last one
    transcript.write_text("".join(lines[:10]) + half_written, encoding="utf-8")
    capture = {"session_id": S1, "source": "claude_code", "transcript_path": str(transcript)}
    (workspace / "metadata" / "agent" / "captures").mkdir(parents=True)
    params, part = append_params(str(workspace), capture)
    assert len(params["messages"]) == 10 and part.end == len("".join(lines[:10]).encode())
    again = append_params(str(workspace), capture)[0]["messages"]  # not saved yet: all again
    assert again == params["messages"]
    saved_up_to(str(workspace), capture, part)
    with transcript.open("a", encoding="utf-8") as handle:
        handle.write("\n" + "".join(lines[11:]))
    params, part = append_params(str(workspace), capture)
    assert [e.get("uuid") for e in params["messages"]] == [
        json.loads(line).get("uuid") for line in lines[10:]
    ]
    saved_up_to(str(workspace), capture, part)
    assert append_params(str(workspace), capture)[0]["messages"] == []
    transcript.write_text(lines[0], encoding="utf-8")  # rewritten shorter: read from the start
    assert len(append_params(str(workspace), capture)[0]["messages"]) == 1


@pytest.mark.slow
def test_doctor_names_captures_that_waited_too_long(tmp_path: Path, transcripts) -> None:
    import os

    workspace = tmp_path / "ws"
    assert hook("Stop", event("Stop", transcripts[S1]), workspace, REME_HOOK_SPAWN="0").returncode == 0
    (marker,) = (workspace / "metadata" / "agent" / "captures").glob("*.json")

    assert doctor_agents(workspace) == []  # a fresh marker is a hook at work
    old = time.time() - 3600
    os.utime(marker, (old, old))
    (check,) = doctor_agents(workspace)
    assert check["status"] == "warn" and "1 agent session capture(s) not saved yet" in check["detail"]
    assert "reme hook drain" in check["fix"]
    assert hook("drain", "", workspace).returncode == 0  # the fix it names works
    assert len(saved(workspace, S1)) == 10 and doctor_agents(workspace) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("status", "answer"),
    [(401, "missing or wrong access token"), (500, "internal error"), (200, "Conflict: a dream runs")],
)
def test_a_service_that_does_not_save_keeps_the_capture_queued(
    tmp_path: Path, transcripts, status: int, answer: str
) -> None:
    import http.server
    import os
    import threading

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server name
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = json.dumps({"success": False, "answer": answer, "metadata": {}}).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    workspace = tmp_path / "ws"
    (workspace / "metadata").mkdir(parents=True)
    info = {"host": "127.0.0.1", "port": server.server_address[1], "backend": "http", "pid": os.getpid()}
    (workspace / "metadata" / "service.json").write_text(json.dumps(info))
    try:
        refused = hook("Stop", event("Stop", transcripts[S1]), workspace, REME_HOOK_SPAWN="0")
    finally:
        server.shutdown()
        server.server_close()
    assert refused.returncode == 0, refused.stderr
    assert markers(workspace) == [f"{S1}.json"]  # not lost: it waits for the next try
    (workspace / "metadata" / "service.json").unlink()
    drained = hook("drain", "", workspace)  # what the next capture starts when the service fails
    assert drained.returncode == 0, drained.stderr
    assert len(saved(workspace, S1)) == 10 and markers(workspace) == []


def test_a_background_drain_leaves_the_service_idle_between_parts(tmp_path: Path, monkeypatch) -> None:
    """`reme hook drain` waits after each part as long as the service took for it; a hook's own
    send (within its budget) does not wait."""
    from reme.app import captures
    from reme.service import hooks

    monkeypatch.setattr(captures, "MAX_ENTRIES", 2)
    workspace, transcript = tmp_path / "ws", tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps({"n": n}) + "\n" for n in range(5)), encoding="utf-8")
    sent: list[int] = []

    def service(info, workspace, job, params, timeout):
        sent.append(len(params["messages"]))
        busy_until = time.monotonic() + 0.05  # the service's time for one part (sleep is recorded)
        while time.monotonic() < busy_until:
            pass
        return {"success": True, "status": 200}

    pauses: list[float] = []
    monkeypatch.setattr(hooks, "call_service", service)
    monkeypatch.setattr(hooks.time, "sleep", lambda s: pauses.append(s))
    for session, pace in (("paced", True), ("hook", False)):
        capture = captures.Capture(
            session_id=session,
            transcript_path=str(transcript),
            source="claude_code",
            event="Stop",
            cwd=None,
            at=0,
        )
        marker = captures.write_marker(str(workspace), capture)
        raw = Path(marker).read_text(encoding="utf-8")
        pauses.clear()
        assert hooks._send(None, str(workspace), marker, raw, 60, pace=pace) is True
        assert not Path(marker).exists()
        if pace:  # three parts: a pause after each of the first two, as long as the part took
            assert len(pauses) == 2 and all(0.05 <= p <= hooks.MAX_PACE for p in pauses), pauses
        else:
            assert pauses == []
    assert sent == [2, 2, 1, 2, 2, 1]


def test_a_long_transcript_is_read_in_parts_and_none_is_skipped(tmp_path: Path, monkeypatch) -> None:
    from reme.app import captures as hooks

    monkeypatch.setattr(hooks, "MAX_ENTRIES", 3)
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"n": n}) + "\n" for n in range(7)), encoding="utf-8")
    got, offset = [], 0
    while True:
        part = hooks.read_transcript(str(path), offset)
        offset = part.end
        got += [e["n"] for e in part.entries]
        if not part.more:
            break
    assert got == list(range(7)) and offset == path.stat().st_size


def test_codex_notify_finds_the_rollout_of_an_old_thread(tmp_path: Path) -> None:
    from reme.service.hooks import codex_rollout

    home = tmp_path / "codex"
    old = home / "sessions" / "2025" / "01" / "03"
    old.mkdir(parents=True)
    rollout = old / f"rollout-2025-01-03T10-00-00-{CODEX}.jsonl"
    rollout.write_text("{}\n")
    for day in range(1, 10):  # more recent days than the old search looked at
        (home / "sessions" / "2026" / "02" / f"{day:02d}").mkdir(parents=True)
    assert codex_rollout({"thread-id": CODEX}, str(home)) == (CODEX, str(rollout))
    assert codex_rollout({"thread-id": "0199a2b3-0000-7e6f-8a9b-0c1d2e3f4a5b"}, str(home)) is None


def test_recall_output_is_ascii_json(tmp_path: Path, monkeypatch, capsys) -> None:
    from reme.service import hooks

    monkeypatch.setattr(hooks, "http_service", lambda workspace: None)
    monkeypatch.setattr(hooks, "markers", lambda workspace, first=None: [])
    monkeypatch.setattr(
        hooks,
        "run_in_process",
        lambda *a: {"success": True, "answer": "<reme-context>café ☕</reme-context>"},
    )
    hooks.recall("SessionStart", {"cwd": str(tmp_path)}, {}, str(tmp_path))
    out = capsys.readouterr().out
    assert out.isascii() and "café ☕" in json.loads(out)["hookSpecificOutput"]["additionalContext"]

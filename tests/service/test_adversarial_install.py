"""An adversarial review of `reme install claude-code` and `reme doctor`: the installer edits files the
user owns and must never lose or corrupt their content; the doctor must give every check a status and
a fix on a broken workspace, never a traceback."""

from __future__ import annotations

import json
import multiprocessing
import os
import shlex
import socket
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.service.test_install_claude_code import snapshot
from tests.service.test_service_doctor import run_doctor

from reme.service import install as installer
from reme.service.install import InstallError, Target, install, uninstall

pytestmark = pytest.mark.usefixtures("no_llm_environment")


@pytest.fixture
def no_llm_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No developer's model, service or Claude Code settings; HOME (git reads it) a temporary folder."""
    for name in list(os.environ):
        if name.startswith(("LLM_", "REME_")) and name != "REME_PLUGINS":
            monkeypatch.delenv(name)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "env-home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "env-codex"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    (root / ".claude").mkdir(parents=True)
    return root


def target(home: Path, **assigned: str) -> Target:
    return Target(False, {"home": str(home), "workspace_dir": str(home / "memory"), **assigned})


def settings_of(home: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((home / ".claude" / "settings.json").read_text())
    return loaded


def commands(groups: list[dict[str, Any]]) -> list[str]:
    return [hook["command"] for group in groups for hook in group["hooks"]]


# install: the user's files -----------------------------------------------------------------------


def test_a_second_install_is_byte_identical_and_uninstall_restores_the_first_bytes(home: Path) -> None:
    (home / ".claude" / "settings.json").write_text('{"hooks": {"Stop": [{"hooks": []}]}}')
    before = snapshot(home)
    install(target(home), False, False)
    once = snapshot(home)
    install(target(home), False, False)
    assert snapshot(home) == once
    uninstall(target(home))
    assert snapshot(home) == before


def test_a_symlinked_settings_file_stays_a_link_and_its_target_is_restored(
    home: Path, tmp_path: Path
) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "settings.json"
    real.write_text('{"model": "opus"}\n')
    link = home / ".claude" / "settings.json"
    link.symlink_to(real)
    install(target(home), False, False)
    assert link.is_symlink() and "SessionStart" in json.loads(real.read_text())["hooks"]
    uninstall(target(home))
    assert link.is_symlink() and real.read_text() == '{"model": "opus"}\n'


def test_a_private_file_stays_private(home: Path) -> None:
    config = home / ".claude.json"
    config.write_text('{"mcpServers": {"db": {"env": {"TOKEN": "secret"}}}}')
    config.chmod(0o600)
    install(target(home), False, False)
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    uninstall(target(home))
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_an_earlier_reme_hook_from_another_install_is_replaced_not_doubled(home: Path) -> None:
    old = {
        "hooks": [
            {"type": "command", "command": "/old/venv/bin/reme hook Stop workspace_dir=/old", "timeout": 10}
        ]
    }
    theirs = {"hooks": [{"type": "command", "command": "say done"}]}
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Stop": [theirs, old]}}))
    install(target(home), False, False)
    stop = settings_of(home)["hooks"]["Stop"]
    assert stop[0] == theirs and len(stop) == 2
    assert shlex.split(commands(stop)[1])[1:] == ["hook", "Stop", f"workspace_dir={home / 'memory'}"]


def test_other_tools_hooks_keep_their_order(home: Path) -> None:
    groups = [{"hooks": [{"type": "command", "command": f"tool{i}"}]} for i in range(3)]
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"SessionStart": groups}}))
    install(target(home), False, False)
    assert commands(settings_of(home)["hooks"]["SessionStart"])[:3] == ["tool0", "tool1", "tool2"]


@pytest.mark.parametrize(
    "text",
    [
        '{"model": "opus", // mine\n}',
        '{"model": "opus",}',
        "[1, 2]",
        '"text"',
        b"\xff\xfe{not utf8".decode("latin-1"),
    ],
)
def test_a_file_claude_code_cannot_read_is_refused_and_nothing_is_written(home: Path, text: str) -> None:
    (home / ".claude" / "settings.json").write_bytes(text.encode("latin-1", "replace"))
    before = snapshot(home)
    with pytest.raises(InstallError, match="nothing was written"):
        install(target(home), False, False)
    assert snapshot(home) == before


def test_a_bom_and_crlf_settings_file_comes_back_byte_for_byte(home: Path) -> None:
    raw = b'\xef\xbb\xbf{\r\n  "model": "opus"\r\n}\r\n'
    (home / ".claude" / "settings.json").write_bytes(raw)
    install(target(home), False, False)
    assert settings_of(home)["model"] == "opus"
    uninstall(target(home))
    assert (home / ".claude" / "settings.json").read_bytes() == raw


def test_a_write_failing_midway_is_a_clear_refusal_and_every_file_is_put_back(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / ".claude.json").write_text('{"numStartups": 3}')
    (home / ".claude" / "settings.json").write_text('{"model": "opus"}')
    before = snapshot(home)
    replace = os.replace

    def disk_full_at_the_skill(source: str, destination: str) -> None:
        if str(destination).endswith("SKILL.md"):
            raise OSError(28, "No space left on device")
        replace(source, destination)

    monkeypatch.setattr(installer.os, "replace", disk_full_at_the_skill)
    with pytest.raises(
        InstallError, match=r"cannot write .*SKILL\.md \(No space left on device\); every file"
    ):
        install(target(home), False, False)
    assert snapshot(home) == before  # no half install, no temporary file, no record


def test_a_settings_path_it_cannot_read_is_refused_before_anything_is_written(home: Path) -> None:
    (home / ".claude" / "settings.json").mkdir()
    before = snapshot(home)
    with pytest.raises(InstallError, match=r"cannot read .*settings\.json \(Is a directory\); nothing was"):
        install(target(home), False, False)
    assert snapshot(home) == before


def test_uninstall_it_cannot_finish_keeps_the_record_and_says_to_run_it_again(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(target(home), False, False)
    settings = home / ".claude" / "settings.json"
    settings.write_text('{"hooks": {}}')
    (home / ".claude" / "reme-install.json").rename(home / "record.json")
    settings.unlink()
    settings.mkdir()  # a folder where the file was: restoring it fails
    (home / "record.json").rename(home / ".claude" / "reme-install.json")
    args = ["claude-code", "--uninstall", f"home={home}"]
    assert installer.main(args) == 1
    assert "run it again once the cause is fixed" in capsys.readouterr().err
    settings.rmdir()
    assert installer.main(args) == 0 and not (home / ".claude" / "reme-install.json").exists()


def install_five_times(home: str) -> None:
    for _ in range(5):
        install(target(Path(home)), False, False)


@pytest.mark.slow
def test_two_installs_at_once_leave_one_install_that_uninstalls_cleanly(home: Path) -> None:
    (home / ".claude" / "settings.json").write_text('{"model": "opus"}')
    before = snapshot(home)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(install_five_times, [str(home), str(home)])  # raises what either raised
    assert len(settings_of(home)["hooks"]["Stop"]) == 1
    uninstall(target(home))
    assert snapshot(home) == before


# doctor: a broken workspace ----------------------------------------------------------------------


def doctor_of(
    capsys: pytest.CaptureFixture[str], workspace: Path, **more: str
) -> dict[str, list[dict[str, str]]]:
    _, areas = run_doctor(capsys, workspace_dir=str(workspace), probe=False, **more)
    for checks in areas.values():
        for check in checks:
            assert check["status"] in ("ok", "warn", "fail") and check["detail"]
            assert check["status"] == "ok" or check["fix"], check
    return areas


def test_doctor_on_a_workspace_under_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    areas = doctor_of(capsys, tmp_path / "file" / "ws")
    assert areas["workspace"][0]["status"] == "fail"


def refuse_inside(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Every look inside `folder` fails as for a user without permission (root passes any chmod)."""
    inside = f"{folder}{os.sep}"

    def refusing(real: Any) -> Any:
        def call(path: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(path, str | os.PathLike) and os.fspath(path).startswith(inside):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real(path, *args, **kwargs)

        return call

    for name in ("stat", "lstat", "listdir", "scandir", "open"):
        monkeypatch.setattr(os, name, refusing(getattr(os, name)))


def test_doctor_on_a_workspace_in_a_folder_it_may_not_enter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = tmp_path / "locked"
    (locked / "ws" / "metadata").mkdir(parents=True)
    refuse_inside(monkeypatch, locked)
    areas = doctor_of(capsys, locked / "ws")
    assert areas["workspace"][0]["status"] in ("warn", "fail")


def test_doctor_with_metadata_it_may_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "metadata" / "agent" / "captures").mkdir(parents=True)
    refuse_inside(monkeypatch, workspace / "metadata")
    areas = doctor_of(capsys, workspace)
    assert areas["agents"][0]["status"] == "fail" and "Permission denied" in areas["agents"][0]["detail"]


def test_doctor_with_metadata_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "metadata").write_text("x")
    areas = doctor_of(capsys, workspace)
    assert areas["agents"][0]["status"] == "fail" and "Not a directory" in areas["agents"][0]["detail"]


def test_doctor_with_a_damaged_service_file_and_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "metadata").mkdir(parents=True)
    (workspace / "metadata" / "service.json").write_text("{broken")
    assert doctor_of(capsys, workspace)["service"][0]["status"] == "warn"
    monkeypatch.setenv("REME_SERVICE_INFO", "{broken")
    assert doctor_of(capsys, workspace)["service"][0]["status"] in ("warn", "fail")


def test_doctor_does_not_hang_on_a_service_that_never_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "metadata").mkdir(parents=True)
    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen()
    port = mute.getsockname()[1]
    record = {"host": "127.0.0.1", "port": port, "pid": os.getpid(), "backend": "http"}
    (workspace / "metadata" / "service.json").write_text(json.dumps(record))
    monkeypatch.setattr("reme.service.doctor.SERVICE_TIMEOUT", 0.5)
    try:
        assert doctor_of(capsys, workspace)["service"][0]["status"] == "fail"
    finally:
        mute.close()


@pytest.mark.parametrize(
    "record",
    [
        '{"success": true}',
        '{"success": true, "at": "soon"}',
        '{"success": true, "at": "2026-01-01T00:00:00"}',
        "[]",
    ],
)
def test_doctor_with_a_damaged_last_sync_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], record: str
) -> None:
    workspace = tmp_path / "ws"
    (workspace / "metadata").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    subprocess.run(
        ["git", "-C", str(workspace), "remote", "add", "origin", str(tmp_path / "none")], check=True
    )
    (workspace / "metadata" / "sync.json").write_text(record)
    last = doctor_of(capsys, workspace)["sync"][-1]
    assert last["status"] == "warn" and ("names no time" in last["detail"] or "no sync" in last["detail"])


def test_doctor_on_a_broken_git_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (workspace / ".git" / "HEAD").write_text("garbage")
    areas = doctor_of(capsys, workspace)
    assert areas["sync"]


def test_doctor_with_a_damaged_capture_marker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = tmp_path / "ws"
    captures = workspace / "metadata" / "agent" / "captures"
    captures.mkdir(parents=True)
    (captures / "s1.json").write_bytes(b"\xff\xfe not json")
    (captures / "s1.failed").write_bytes(b"[1, 2")
    (captures / "s2.sent").write_bytes(b'{"skipped": "many"}')
    agents = doctor_of(capsys, workspace)["agents"]
    assert agents[0]["status"] == "warn" and "the marker is damaged" in agents[0]["detail"], agents
    assert "reme hook drop session_id=s1" in agents[0]["fix"]


def test_a_marker_that_is_not_utf8_is_reported_by_the_drain_and_others_still_go(tmp_path: Path) -> None:
    from reme.app.captures import markers

    workspace = tmp_path / "ws"
    captures = workspace / "metadata" / "agent" / "captures"
    captures.mkdir(parents=True)
    (captures / "s1.json").write_bytes(b'{"session_id": "s1\xff"')
    found = markers(str(workspace))  # was UnicodeDecodeError: every later capture waited behind it
    assert [os.path.basename(path) for path, _ in found] == ["s1.json"]


def test_doctor_with_an_llm_whose_host_does_not_resolve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm = {"components.llm.model": "m", "components.llm.base_url": "http://no-such-host.invalid/v1"}
    areas = doctor_of(capsys, tmp_path / "ws", **llm)
    assert areas["llm"][0]["status"] == "fail"

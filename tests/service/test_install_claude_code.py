"""`reme install claude-code` end to end into a temporary home and project: the files it writes parse as
Claude Code reads them, the hooks and the MCP server they name really run, and `--uninstall` puts
every file back byte for byte."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client, StdioServerParameters
from tests.support import REME, reme_env

from reme.service.install import PLUGIN

EVENTS = {"SessionStart", "Stop", "PreCompact", "SessionEnd"}


def install(*args: str, home: Path, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REME, "install", "claude-code", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=reme_env(HOME=str(home), **env),
        cwd=cwd or home,
    )


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes (folders with no files show as empty strings)."""
    files = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    dirs = {str(p.relative_to(root)) + "/": b"" for p in root.rglob("*") if p.is_dir()}
    return {**files, **dirs}


def reme_groups(settings: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {}
    for event, groups in settings["hooks"].items():
        for group in groups:
            for entry in group["hooks"]:
                if " hook " in entry["command"] and entry["command"].startswith("/"):
                    found[event] = group
    return found


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with Claude Code's files already holding the user's own settings."""
    root = tmp_path / "home"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude.json").write_text(
        '{\n  "numStartups": 12,\n  "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp"}},\n'
        '  "projects": {"/home/dev/x": {"allowedTools": []}}\n}\n'
    )
    (root / ".claude" / "settings.json").write_text(
        '{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],'
        ' "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh"}]}]}}'
    )
    return root


@pytest.mark.slow
def test_user_install_writes_what_claude_code_reads_and_uninstall_restores_it(
    home: Path, tmp_path: Path
) -> None:
    before = snapshot(home)
    workspace = tmp_path / "memory"
    result = install(f"workspace_dir={workspace}", home=home)
    assert result.returncode == 0, result.stderr
    for path in (
        home / ".claude.json",
        home / ".claude" / "settings.json",
        home / ".claude/skills/reme-memory/SKILL.md",
    ):
        assert f"wrote {path}" in result.stdout
    assert f"workspace: {workspace}" in result.stdout

    config = json.loads((home / ".claude.json").read_text())
    assert config["numStartups"] == 12 and config["projects"] == {"/home/dev/x": {"allowedTools": []}}
    assert config["mcpServers"]["github"] == {"type": "stdio", "command": "gh-mcp"}
    server = config["mcpServers"]["reme"]
    assert (
        server["type"] == "stdio"
        and Path(server["command"]).is_absolute()
        and Path(server["command"]).exists()
    )
    assert server["args"] == [
        "start",
        "service.backend=mcp",
        "service.transport=stdio",
        f"workspace_dir={workspace}",
    ]

    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus"
    assert settings["hooks"]["PreToolUse"] == [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh"}]}
    ]
    assert settings["hooks"]["Stop"][0] == {
        "hooks": [{"type": "command", "command": "say done"}]
    }  # theirs stays first
    ours = reme_groups(settings)
    assert set(ours) == EVENTS  # UserPromptSubmit only with --prompt-recall
    assert ours["SessionStart"]["matcher"] == "startup|resume|clear|compact"
    for event, group in ours.items():
        (entry,) = group["hooks"]
        assert entry["type"] == "command" and isinstance(entry["timeout"], int) and entry["timeout"] <= 30
        assert shlex.split(entry["command"]) == [
            server["command"],
            "hook",
            event,
            f"workspace_dir={workspace}",
        ]

    skill = (home / ".claude/skills/reme-memory/SKILL.md").read_text()
    front = yaml.safe_load(skill.split("---\n", 2)[1])
    assert front["name"] == "reme-memory" and len(front["description"]) < 1024
    assert (
        "digest_write" in skill and "digest_edit" in skill and "traverse" in skill and "cite" in skill.lower()
    )

    # the hook it wrote runs as Claude Code would run it
    start = json.loads((home / ".claude" / "settings.json").read_text())
    command = reme_groups(start)["SessionStart"]["hooks"][0]["command"]
    ran = subprocess.run(
        command,
        shell=True,
        input=json.dumps(
            {
                "session_id": "s",
                "hook_event_name": "SessionStart",
                "source": "startup",
                "cwd": str(tmp_path),
                "transcript_path": str(tmp_path / "t.jsonl"),
            }
        ),
        capture_output=True,
        text=True,
        timeout=60,
        env=reme_env(HOME=str(home)),
    )
    assert ran.returncode == 0, ran.stderr

    undone = install("--uninstall", home=home)
    assert undone.returncode == 0, undone.stderr
    assert snapshot(home) == before


@pytest.mark.slow
def test_project_install_into_an_empty_project_leaves_nothing_behind(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (project / "main.py").write_text("print('hi')\n")
    before = snapshot(project)
    result = install("--project", "--prompt-recall", home=home, cwd=project)
    assert result.returncode == 0, result.stderr
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["reme"]
    assert f"workspace_dir={project / '.reme'}" in server["args"]  # absolute, inside the project
    ours = reme_groups(json.loads((project / ".claude" / "settings.local.json").read_text()))
    assert set(ours) == EVENTS | {"UserPromptSubmit"}
    assert shlex.split(ours["UserPromptSubmit"]["hooks"][0]["command"])[-1] == "prompt_recall=true"
    assert (project / ".claude/skills/reme-memory/SKILL.md").exists()
    assert not (home / ".claude").exists()  # the user scope is not touched
    assert install("--project", "--uninstall", home=home, cwd=project).returncode == 0
    assert snapshot(project) == before


@pytest.mark.slow
def test_installing_twice_adds_reme_once_and_uninstall_still_restores(home: Path) -> None:
    before = snapshot(home)
    assert install(home=home).returncode == 0
    assert install("--read-only", home=home).returncode == 0
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    counts = {event: len(groups) for event, groups in settings["hooks"].items()}
    assert counts == {"Stop": 2, "PreToolUse": 1, "SessionStart": 1, "PreCompact": 1, "SessionEnd": 1}
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["reme"]
    assert server["args"][-1] == "service.mcp_profile=read_only"
    assert install("--uninstall", home=home).returncode == 0
    assert snapshot(home) == before


@pytest.mark.slow
def test_files_edited_after_the_install_lose_only_reme_s_entries(home: Path) -> None:
    assert install(home=home).returncode == 0
    config = json.loads((home / ".claude.json").read_text())
    config["numStartups"] = 13  # Claude Code rewrites this file all the time
    (home / ".claude.json").write_text(json.dumps(config, indent=2))
    result = install("--uninstall", home=home)
    assert result.returncode == 0 and "edited since the install" in result.stdout
    after = json.loads((home / ".claude.json").read_text())
    assert after["numStartups"] == 13 and set(after["mcpServers"]) == {"github"}


@pytest.mark.slow
def test_a_broken_settings_file_is_refused_and_nothing_is_written(home: Path) -> None:
    (home / ".claude" / "settings.json").write_text("{not json")
    before = snapshot(home)
    result = install(home=home)
    assert result.returncode == 1 and "not valid JSON" in result.stderr
    assert snapshot(home) == before
    assert install("--uninstall", home=home).returncode == 1  # nothing recorded, nothing removed


@pytest.mark.slow
def test_claude_config_dir_is_respected(tmp_path: Path) -> None:
    home, config = tmp_path / "home", tmp_path / "cc"
    home.mkdir()
    result = install(home=home, CLAUDE_CONFIG_DIR=str(config))
    assert result.returncode == 0, result.stderr
    assert (config / "settings.json").exists() and (config / ".claude.json").exists()
    assert (config / "skills/reme-memory/SKILL.md").exists() and not (home / ".claude").exists()
    assert install("--uninstall", home=home, CLAUDE_CONFIG_DIR=str(config)).returncode == 0
    assert not config.exists() or snapshot(config) == {}


@pytest.mark.slow
def test_usage_errors_say_how_to_call_it(home: Path) -> None:
    for args in (("cursor",), ("claude-code", "--bogus"), ("claude-code", "colour=red")):
        result = subprocess.run(
            [REME, "install", *args], capture_output=True, text=True, env=reme_env(HOME=str(home))
        )
        assert result.returncode == 2 and "usage: reme install claude-code" in result.stderr


def test_the_packaged_plugin_is_a_valid_claude_code_plugin() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "reme" and manifest["version"]
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == EVENTS | {"UserPromptSubmit"}
    for event, groups in hooks.items():
        for group in groups:
            assert set(group) <= {"matcher", "hooks"}
            assert [shlex.split(h["command"])[:3] for h in group["hooks"]] == [["reme", "hook", event]]
    servers = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]
    assert servers["reme"]["args"][:3] == ["start", "service.backend=mcp", "service.transport=stdio"]
    # without REME_WORKSPACE_DIR Claude Code would pass the literal `${REME_WORKSPACE_DIR}`
    assert servers["reme"]["args"][3] == "workspace_dir=${REME_WORKSPACE_DIR:-~/.reme}"


@pytest.mark.slow
def test_the_plugin_hooks_default_to_the_home_workspace(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    stop = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    assert stop["command"] == 'reme hook Stop workspace_dir="${REME_WORKSPACE_DIR:-$HOME/.reme}"'
    expanded = subprocess.run(  # as Claude Code runs a hook command: through the shell
        ["bash", "-c", stop["command"].replace("reme hook Stop", "printf %s", 1)],
        capture_output=True,
        text=True,
        env=reme_env(HOME=str(home)),
        check=True,
    ).stdout
    assert expanded == f"workspace_dir={home}/.reme"


@pytest.mark.slow
def test_a_hook_with_no_workspace_does_nothing_in_the_open_project(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    payload = {"session_id": "abc", "transcript_path": str(transcript), "hook_event_name": "Stop"}
    result = subprocess.run(
        [REME, "hook", "Stop"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env=reme_env(REME_HOOK_SPAWN="0"),
        cwd=tmp_path,
    )
    assert result.returncode == 0 and result.stdout == ""
    assert "no workspace_dir" in result.stderr
    assert not (tmp_path / ".reme").exists()
    skill = (PLUGIN / "skills" / "reme-memory" / "SKILL.md").read_text()
    assert yaml.safe_load(skill.split("---\n", 2)[1])["name"] == "reme-memory"


# the MCP server entry it writes -----------------------------------------------------------------


async def tools_of(entry: dict[str, Any], cwd: Path) -> tuple[dict[str, Any], Any]:
    params = StdioServerParameters(
        command=entry["command"], args=[*entry["args"], "scheduler.cron=false"], cwd=str(cwd)
    )
    async with Client(params) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        refused = (
            await client.call_tool("write", {"path": "daily/x.md", "content": "x"})
            if "write" not in tools
            else None
        )
        return tools, refused


@pytest.mark.slow
async def test_the_installed_server_runs_with_annotations_and_a_read_only_profile(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert install(f"workspace_dir={tmp_path / 'ws'}", home=home).returncode == 0
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["reme"]
    tools, _ = await tools_of(entry, tmp_path)
    assert tools["search"].annotations.read_only_hint is True
    assert tools["agent_memory_recall"].annotations.read_only_hint is True
    delete = tools["delete"].annotations
    assert delete.read_only_hint is False and delete.destructive_hint is True
    append = tools["agent_session_append"].annotations
    assert (append.read_only_hint, append.destructive_hint, append.idempotent_hint) == (False, False, True)

    read_only = {**entry, "args": [*entry["args"], "service.mcp_profile=read_only"]}
    limited, refused = await tools_of(read_only, tmp_path)
    assert limited and all(tool.annotations.read_only_hint for tool in limited.values())
    assert {"search", "read", "traverse", "agent_memory_recall"} <= set(limited)
    assert not {"write", "delete", "digest_write", "agent_session_append"} & set(limited)
    assert refused.is_error and "read_only" in refused.content[0].text


@pytest.mark.slow
def test_a_reinstall_refused_for_a_broken_file_keeps_the_earlier_install(home: Path) -> None:
    assert install(home=home).returncode == 0
    installed = snapshot(home)
    (home / ".claude.json").write_text("{broken")
    result = install("--read-only", home=home)
    assert result.returncode == 1 and "not valid JSON" in result.stderr
    assert snapshot(home) == {**installed, ".claude.json": b"{broken"}


def test_a_damaged_install_record_is_refused_before_any_file_is_restored(home: Path) -> None:
    assert install(home=home).returncode == 0
    record = home / ".claude" / "reme-install.json"
    manifest = json.loads(record.read_text())
    manifest["files"].append({"path": 7})  # the last entry is unusable: the first ones must not go back
    record.write_text(json.dumps(manifest))
    before = snapshot(home)
    result = install("--uninstall", home=home)
    assert result.returncode == 1 and "is damaged (a file entry has no path" in result.stderr
    assert snapshot(home) == before

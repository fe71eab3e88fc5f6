"""`reme install claude-code` tells the user every file it writes or changes, its own install record
included, and a `--project` install suggests the .gitignore lines for them (issue 23.10)."""

from __future__ import annotations

from pathlib import Path

from tests.service.test_install_claude_code import install, snapshot


def changed_files(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return {path for path, raw in after.items() if not path.endswith("/") and before.get(path) != raw}


def test_every_written_file_is_printed_and_a_project_install_suggests_gitignore_lines(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    (project / ".claude").mkdir(parents=True)
    (project / ".gitignore").write_text("node_modules/\n/.mcp.json\n")
    (project / ".claude" / "settings.local.json").write_text('{"model": "opus"}\n')
    before = snapshot(project)
    result = install("--project", home=home, cwd=project)
    assert result.returncode == 0, result.stderr
    written = changed_files(before, snapshot(project))
    assert written == {
        ".mcp.json",
        ".claude/settings.local.json",
        ".claude/skills/reme-memory/SKILL.md",
        ".claude/reme-install.json",
    }
    lines = result.stdout.splitlines()
    for path in written:
        assert any(line.startswith(f"wrote {project / path}: ") for line in lines), (path, result.stdout)
    assert f"wrote {project / '.claude/reme-install.json'}: the install record" in result.stdout
    assert f"wrote {project / '.claude/settings.local.json'}: hooks.SessionStart" in result.stdout
    assert "(changed; its other entries kept)" in result.stdout and "(new file)" in result.stdout

    suggested = [line.strip() for line in lines if line.startswith("  /")]
    assert suggested == [
        "/.claude/reme-install.json",
        "/.claude/settings.local.json",
        "/.claude/skills/reme-memory/",
        "/.reme/",
    ]  # /.mcp.json is ignored already
    (project / ".gitignore").write_text("\n".join(["/.mcp.json", *suggested]) + "\n")
    again = install("--project", home=home, cwd=project)
    assert again.returncode == 0 and "already ignores everything it wrote" in again.stdout


def test_a_user_install_prints_its_record_and_suggests_no_gitignore(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = install(f"workspace_dir={tmp_path / 'memory'}", home=home)
    assert result.returncode == 0, result.stderr
    assert f"wrote {home / '.claude' / 'reme-install.json'}: the install record" in result.stdout
    assert ".gitignore" not in result.stdout
    undone = install("--uninstall", home=home)
    assert f"removed {home / '.claude' / 'reme-install.json'} (the install record)" in undone.stdout

"""Config values of the wrong type or shape are refused at load, naming the key and the fix.

A section nothing reads (`logging`) is an unknown key; a text setting written as a YAML number, boolean
or date (`auth_token: 0123` is the octal 83) is refused with a hint to quote it; `sync.remote` and
`sync.author` are checked before git ever sees them (docs/spec.md §18, docs/sync.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reme.app.config import ConfigError, load_config
from reme.jsontypes import JSONValue
from reme.service import cli
from reme.service.settings import service_settings


def config_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "reme.yaml"
    path.write_text("imports: [default.yaml]\n" + text, encoding="utf-8")
    return str(path)


def load(config: str | None = None, **overrides: JSONValue) -> dict[str, object]:
    return load_config(config, overrides, load_env_file=False)


@pytest.fixture
def start(tmp_path, monkeypatch, capsys):
    """`reme start job=version …` in-process: (exit code, stderr)."""
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str]:
        base = ["start", "job=version", f"workspace_dir={tmp_path / 'ws'}", "scheduler.cron=false"]
        code = cli.main([*base, *args])
        return code, capsys.readouterr().err

    return run


def test_a_logging_section_is_an_unknown_key_not_silently_ignored(tmp_path):
    """Nothing reads `logging` (docs/spec.md §6.1 defines no such section): accepting it would promise
    a log level that never takes effect."""
    with pytest.raises(ConfigError, match="unknown config key 'logging'"):
        load(config_file(tmp_path, "logging:\n  level: DEBUG\n"))


@pytest.mark.parametrize(
    ("written", "kind"),
    [
        ("123", "number"),
        ("0123", "number"),
        ("1_000", "number"),
        ("1.50", "number"),
        ("yes", "boolean"),
        ("2026-01-02", "date"),
    ],
)
def test_an_unquoted_token_is_refused_with_a_hint_to_quote_it(tmp_path, written, kind):
    with pytest.raises(ConfigError) as caught:
        load(config_file(tmp_path, f"service:\n  auth_token: {written}\n"))
    message = str(caught.value)
    assert "service.auth_token" in message and "quote it" in message and f"got a {kind}" in message
    assert "83" not in message and "1000" not in message  # a secret (even misread) is never echoed


def test_a_quoted_token_is_kept_as_written(tmp_path):
    config = load(config_file(tmp_path, 'service:\n  auth_token: "0123"\n'))
    assert service_settings(config).token == "0123"


def test_a_number_token_on_the_command_line_is_refused_and_a_quoted_one_runs(start):
    code, err = start("service.auth_token=123456")
    assert code == 2 and "service.auth_token" in err and "quote it" in err, err
    code, err = start('service.auth_token="123456"')
    assert code == 0, err


@pytest.mark.parametrize(
    ("key", "written"),
    [("host", "10"), ("path", "5"), ("backend", "1"), ("transport", "1.5"), ("mcp_profile", "no")],
)
def test_other_service_text_settings_refuse_numbers_and_booleans(tmp_path, key, written):
    with pytest.raises(ConfigError, match=rf"'service\.{key}' must be text, got .*quote it"):
        load(config_file(tmp_path, f"service:\n  {key}: {written}\n"))


@pytest.mark.parametrize(
    ("written", "match"),
    [
        ("[git@a:x.git, git@b:y.git]", "'sync.remote' must be one repository URL or path, got a list"),
        ("{url: git@a:x.git}", "'sync.remote' must be one repository URL or path, got a mapping"),
        ("42", "'sync.remote' must be one repository URL or path, got 42: quote it"),
        ('"/srv/x\\0.git"', "'sync.remote' must be one line without control characters"),
    ],
)
def test_a_sync_remote_that_is_not_one_url_is_refused(tmp_path, written, match):
    with pytest.raises(ConfigError, match=match):
        load(config_file(tmp_path, f"sync:\n  remote: {written}\n"))


@pytest.mark.parametrize(
    ("written", "match"),
    [
        ("[Ana, ana@example.org]", "'sync.author' must be text of the form 'Name <email>', got a list"),
        ("42", "'sync.author' must be text of the form 'Name <email>', got 42: quote it"),
        ("Ana", "'sync.author' must look like 'Name <email>'"),
        ("ana@example.org", "'sync.author' must look like 'Name <email>'"),
        ("Ana <ana at example.org>", "'sync.author' must look like 'Name <email>'"),
        ('"Ana\\0 <ana@example.org>"', "'sync.author' must be one line without control characters"),
    ],
)
def test_a_sync_author_not_of_the_form_name_email_is_refused(tmp_path, written, match):
    with pytest.raises(ConfigError, match=match):
        load(config_file(tmp_path, f"sync:\n  author: {written}\n"))


def test_good_sync_settings_load_as_written(tmp_path):
    text = "sync:\n  remote: git@github.com:me/memory.git\n  author: Ana Lima <ana@example.org>\n"
    sync = load(config_file(tmp_path, text))["sync"]
    assert sync["remote"] == "git@github.com:me/memory.git"
    assert sync["author"] == "Ana Lima <ana@example.org>"


def test_a_bad_author_from_the_environment_stops_the_start_naming_the_key(start, monkeypatch):
    """Found at load, not at the first commit: a bad author used to turn the scheduled sync off silently."""
    monkeypatch.setenv("REME_SYNC_AUTHOR", "nobody")
    code, err = start()
    assert code == 2 and "sync.author" in err and "Name <email>" in err, err


def test_a_wrong_llm_setting_still_does_not_stop_the_start(start):
    code, err = start("components.llm.max_tokens=0", "sync.author=Ana <ana@example.org>")
    assert code == 0, err


@pytest.mark.parametrize("value", [0, False, 2026])
def test_a_timezone_that_is_no_name_is_refused_not_read_as_local_time(
    tmp_path: Path, value: JSONValue
) -> None:
    """`timezone: 0` or `false` was falsy and silently meant the machine's local time."""
    with pytest.raises(ConfigError, match="'timezone' must be an IANA name"):
        load(workspace_dir=str(tmp_path), timezone=value)


def test_a_workspace_dir_yaml_reads_as_a_number_says_to_quote_it() -> None:
    with pytest.raises(ConfigError, match=r"'workspace_dir' must be a path, got 2026: quote it"):
        load(workspace_dir=2026)

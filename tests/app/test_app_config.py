from __future__ import annotations

from pathlib import Path

import pytest

from reme.app.config import ConfigError, deep_merge, expand_env, load_config, redact
from reme.app.values import parse_assignments, parse_value


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_default_config_declares_service_and_system_jobs():
    config = load_config(load_env_file=False)
    assert config["service"]["host"] == "127.0.0.1"
    assert config["service"]["port"] == 2333
    assert {"version", "help", "health_check", "status", "app_config"} <= set(config["jobs"])


def test_dot_overrides_are_applied_and_typed():
    config = load_config(overrides={"service.port": 8090, "workspace_dir": "/tmp/x"}, load_env_file=False)
    assert config["service"]["port"] == 8090
    assert config["workspace_dir"] == "/tmp/x"


def test_unknown_keys_are_named_in_the_error():
    with pytest.raises(ConfigError, match="'servce'"):
        load_config(overrides={"servce.port": 1}, load_env_file=False)
    with pytest.raises(ConfigError, match="service.prot"):
        load_config(overrides={"service.prot": 1}, load_env_file=False)
    with pytest.raises(ConfigError, match="service.port"):
        load_config(overrides={"service.port": "eighty"}, load_env_file=False)


def test_env_expansion_with_defaults_and_typing(monkeypatch):
    monkeypatch.setenv("REME_TEST_PORT", "9001")
    monkeypatch.delenv("REME_TEST_MISSING", raising=False)
    data = expand_env(
        {
            "port": "${REME_TEST_PORT:-1}",
            "name": "x-${REME_TEST_MISSING:-fallback}-y",
            "empty": "${REME_TEST_MISSING}",
        }
    )
    assert data == {"port": 9001, "name": "x-fallback-y", "empty": ""}


def test_env_values_stay_strings_where_the_default_is_a_string(monkeypatch):
    """A token `0123` is not the octal 83, nor a folder `2026` a number: only typed defaults re-type."""
    monkeypatch.setenv("REME_API_TOKEN", "0123")
    monkeypatch.setenv("REME_WORKSPACE_DIR", "2026")
    config = load_config(load_env_file=False)
    assert config["service"]["auth_token"] == "0123"
    assert config["workspace_dir"] == "2026"
    monkeypatch.setenv("REME_TEST_TIMEOUT", "0755")
    assert expand_env({"timeout": "${REME_TEST_TIMEOUT:-60}"}) == {"timeout": "0755"}


def test_deep_merge_merges_dicts_and_replaces_lists():
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    merged = deep_merge(base, {"a": {"c": [3]}, "e": 2})
    assert merged == {"a": {"b": 1, "c": [3]}, "d": 1, "e": 2}
    assert base["a"]["c"] == [1, 2]


def test_config_file_imports_and_overrides(tmp_path):
    write(tmp_path / "base.yaml", "service: {port: 1000, host: 127.0.0.1}\njobs: {}\n")
    cfg = write(tmp_path / "mine.yaml", "imports: [base.yaml]\nservice: {port: 2000}\n")
    config = load_config(cfg, {"service": {"host": "localhost"}}, load_env_file=False)
    assert config["service"] == {"port": 2000, "host": "localhost"}


def test_dotenv_file_in_working_directory_is_loaded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REME_WORKSPACE_DIR", raising=False)
    write(tmp_path / ".env", "REME_WORKSPACE_DIR=from-dotenv\n")
    try:
        assert load_config()["workspace_dir"] == "from-dotenv"
    finally:
        monkeypatch.delenv("REME_WORKSPACE_DIR", raising=False)


def test_missing_config_and_bad_yaml_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="neither a file nor a packaged config"):
        load_config("no-such-config", load_env_file=False)
    bad = write(tmp_path / "bad.yaml", "service: [unclosed\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(bad, load_env_file=False)


def test_redact_hides_secrets_only():
    config = {
        "llm": {"api_key": "sk-123", "model": "m", "max_tokens": 512, "accessToken": "a"},
        "index": {"tokenizer": "jieba"},
        "service": {"auth_token": "t", "port": 1},
        "x": {"token": ""},
    }
    assert redact(config) == {
        "llm": {"api_key": "***", "model": "m", "max_tokens": 512, "accessToken": "***"},
        "index": {"tokenizer": "jieba"},
        "service": {"auth_token": "***", "port": 1},
        "x": {"token": ""},
    }


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        ("-2.5", -2.5),
        ("true", True),
        ("null", "null"),
        ("007", "007"),
        ("[1, 2]", [1, 2]),
        ('{"a": 1}', {"a": 1}),
        ("hello world", "hello world"),
        ("2026-06-01", "2026-06-01"),
        ("[oops", "[oops"),
    ],
)
def test_parse_value_types(text, value):
    assert parse_value(text) == value


def test_parse_assignments_refuses_bare_words():
    assert parse_assignments(["a=1", "b.c=x=y"]) == {"a": 1, "b.c": "x=y"}
    with pytest.raises(ValueError, match="key=value"):
        parse_assignments(["oops"])


def test_packaged_job_schemas_have_no_stray_null_keys():
    """An unquoted comma in a flow mapping silently adds a key with a null value to a schema."""
    config = load_config(load_env_file=False)

    def nulls(value, where):
        if isinstance(value, dict):
            for key, child in value.items():
                if child is None:
                    yield f"{where}.{key}"
                yield from nulls(child, f"{where}.{key}")
        elif isinstance(value, list):
            for i, child in enumerate(value):
                yield from nulls(child, f"{where}[{i}]")

    assert list(nulls(config["jobs"], "jobs")) == []

"""Adversarial configuration: every bad file, key, value or environment variable is a ConfigError at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme.app.config import ConfigError, load_config
from reme.app.settings import Setting
from reme.app.values import parse_value
from reme.service import cli


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def load(config: str | None = None, **overrides: object) -> dict[str, object]:
    return load_config(config, overrides, load_env_file=False)  # type: ignore[arg-type]


@pytest.fixture
def start(tmp_path, monkeypatch, capsys):
    """`reme start job=version …` in-process: (exit code, stderr)."""
    monkeypatch.chdir(tmp_path)
    for name in ("LLM_TIMEOUT", "LLM_MODEL", "LLM_BASE_URL", "LLM_MAX_TOKENS", "LLM_RUN_BUDGET"):
        monkeypatch.delenv(name, raising=False)

    def run(*args: str) -> tuple[int, str]:
        base = ["start", "job=version", f"workspace_dir={tmp_path / 'ws'}", "scheduler.cron=false"]
        code = cli.main([*base, *args])
        return code, capsys.readouterr().err

    return run


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("a: [1, 2\n", "invalid YAML"),
        ("- a\n- b\n", "top level must be a mapping"),
        ("hello\n", "top level must be a mapping"),
        ("workspace_dir: !!python/object/apply:os.system ['true']\n", "invalid YAML"),
        ("service:\n  port: 1\nservice:\n  port: 2\n", "duplicate key 'service'"),
        ("service:\n  port: 1\n  port: 2\n", "duplicate key 'port'"),
    ],
)
def test_malformed_config_files_are_config_errors(tmp_path, text, match):
    with pytest.raises(ConfigError, match=match):
        load(write(tmp_path / "c.yaml", text))


def test_non_utf8_config_file_is_a_config_error(tmp_path):
    path = tmp_path / "latin.yaml"
    path.write_bytes("workspace_dir: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="UTF-8"):
        load(str(path))


def test_config_path_that_is_a_folder_or_missing_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="neither a file"):
        load(str(tmp_path))
    with pytest.raises(ConfigError, match="neither a file"):
        load(str(tmp_path / "missing.yaml"))


def test_alias_bomb_is_refused_quickly(tmp_path):
    lines = ["logging:", "  l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(ConfigError, match="aliases"):
        load(write(tmp_path / "bomb.yaml", "\n".join(lines) + "\n"))


def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path):
    text = "logging: " + "{a: " * 900 + "1" + "}" * 900 + "\n"
    with pytest.raises(ConfigError, match="nested deeper"):
        load(write(tmp_path / "deep.yaml", text))
    with pytest.raises(ConfigError, match="nested deeper"):
        load(logging=parse_value("[" * 900 + "]" * 900))


def test_deeply_nested_json_override_stays_text():
    assert parse_value("[" * 100_000) == "[" * 100_000
    assert parse_value("[" * 100_000 + "]" * 100_000) == "[" * 100_000 + "]" * 100_000


def test_good_config_with_anchors_and_empty_file_still_load(tmp_path):
    text = "service: &s\n  host: 127.0.0.1\n  port: 8091\nsync: {}\n"
    assert load(write(tmp_path / "good.yaml", text))["service"]["port"] == 8091
    assert load(write(tmp_path / "empty.yaml", ""))["components"] == {}


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"servce.port": 1}, "did you mean 'service'"),
        ({"service.prot": 1}, "did you mean 'port'"),
        ({"scheduler.corn": True}, "did you mean 'cron'"),
        ({"a..b": 1}, "unknown config key 'a'"),
        ({".a": 1}, "unknown config key ''"),
        ({"service..port": 1}, "unknown config key 'service.'"),
        ({"service": 5}, "'service' must be a mapping"),
        ({"components.llm": 5}, "'components.llm' must be a mapping"),
        ({"timezone": 5}, "'timezone' must be"),
        ({"components.embedding.enabled": "yes"}, "'components.embedding.enabled' must be true or false"),
        ({"components.embedding.enabled": 0}, "'components.embedding.enabled' must be true or false"),
    ],
)
def test_bad_keys_and_shapes_are_named(overrides, match):
    with pytest.raises(ConfigError, match=match):
        load(**overrides)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_settings_refuse_non_finite_numbers(value):
    with pytest.raises(ConfigError, match="components.x.timeout"):
        Setting("timeout", float, 30.0, "seconds").check("components.x.timeout", value)


@pytest.mark.parametrize(
    "override",
    [
        "components.embedding.timeout=-5",
        "components.embedding.query_timeout=0",
        "components.embedding.timeout=1e400",
    ],
)
def test_openai_embedding_timeouts_must_be_positive(start, override):
    code, err = start(
        "components.embedding.enabled=true",
        "components.embedding.backend=openai_embedding",
        "components.embedding.model=m",
        override,
    )
    assert code == 2 and "timeout" in err and "Traceback" not in err


def test_component_setting_typo_suggests_the_name(start):
    code, err = start("components.index.debounce=5")
    assert code == 2 and "did you mean 'debounce_ms'" in err


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("components.llm.timeout=abc", "components.llm.timeout"),
        ("components.llm.timeout=-5", "components.llm.timeout"),
        ("components.llm.timeout=nan", "components.llm.timeout"),
        ("components.llm.run_budget=inf", "components.llm.run_budget"),
        ("components.llm.max_tokens=0", "components.llm.max_tokens"),
        ("components.llm.max_tokens=1.5", "components.llm.max_tokens"),
        ("components.llm.output_mode=x", "components.llm.output_mode"),
        ("components.llm.memory=5", "components.llm.memory"),
        ("components.llm.memory.timeout=abc", "components.llm.memory.timeout"),
        ("components.llm.memory.modle=x", "did you mean 'model'"),
        ("components.llm.modelx=a", "did you mean 'model'"),
        ("components.llm.api_key=[1]", "components.llm.api_key"),
    ],
)
def test_bad_llm_settings_are_named_by_health_and_do_not_stop_the_start(start, override, key):
    """Captures, search and every job without a model keep working (test_auto_memory_pending: the
    LLM jobs name the key and leave the card pending)."""
    code, err = start(override)
    assert code == 0, err
    code, err = start("job=health_check", override)
    assert code == 1 and key in err and "Traceback" not in err, err


@pytest.mark.parametrize("value", ["abc", "-5", "nan", "inf", "0", "1e400"])
def test_junk_llm_timeout_env_is_named_by_health(start, monkeypatch, value):
    monkeypatch.setenv("LLM_TIMEOUT", value)
    code, err = start("job=health_check")
    assert code == 1 and "components.llm.timeout" in err, err


def test_llm_without_a_model_still_starts(start, monkeypatch):
    """Missing credentials are reported by the LLM jobs, not refused at start (docs/llm.md)."""
    monkeypatch.setenv("LLM_TIMEOUT", "12.5")
    code, err = start("components.llm.model=")
    assert code == 0, err

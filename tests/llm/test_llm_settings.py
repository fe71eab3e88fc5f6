"""Which setting is missing, per backend and role; secrets never reported."""

from __future__ import annotations

import re

import pytest

from reme.llm.providers import LLMNotConfigured, build_model
from reme.llm.settings import OLLAMA_DEFAULT_URL, resolve_settings


@pytest.mark.parametrize(
    ("settings", "missing"),
    [
        ({}, "LLM_MODEL"),
        ({"model": "gpt-x"}, "LLM_API_KEY (or LLM_BASE_URL for a local OpenAI-compatible server)"),
        ({"model": "gpt-x", "api_key": "sk"}, None),
        ({"model": "qwen", "base_url": "http://127.0.0.1:8000/v1"}, None),
        ({"backend": "anthropic", "model": "claude"}, "LLM_API_KEY"),
        ({"backend": "ollama", "model": "llama3"}, None),
        ({"backend": "scripted"}, None),
    ],
)
def test_missing_setting_is_named(settings: dict, missing: str | None) -> None:
    assert resolve_settings(settings).missing() == missing


def test_unknown_backend_is_reported() -> None:
    assert "unknown backend 'gpt'" in (resolve_settings({"backend": "gpt", "model": "m"}).missing() or "")


def test_ollama_defaults_to_local_server() -> None:
    assert resolve_settings({"backend": "ollama", "model": "llama3"}).base_url == OLLAMA_DEFAULT_URL


def test_memory_role_overrides_only_what_it_sets() -> None:
    settings = {"model": "big", "api_key": "sk", "timeout": 30, "memory": {"model": "small", "base_url": ""}}
    memory = resolve_settings(settings, "memory")
    chat = resolve_settings(settings, "chat")
    assert (memory.model, memory.api_key, memory.timeout, memory.base_url) == ("small", "sk", 30.0, "")
    assert chat.model == "big"


def test_describe_never_contains_the_key() -> None:
    settings = resolve_settings({"model": "m", "api_key": "sk-secret-123"})
    assert "sk-secret-123" not in repr(settings.describe()) + repr(settings)
    assert settings.describe()["api_key_set"] is True


def test_build_model_names_the_missing_setting() -> None:
    with pytest.raises(LLMNotConfigured, match="set LLM_MODEL"):
        build_model(resolve_settings({}))


@pytest.mark.parametrize("backend", ["openai", "anthropic", "ollama"])
def test_build_model_per_backend(backend: str) -> None:
    model = build_model(
        resolve_settings(
            {"backend": backend, "model": "m1", "api_key": "k", "base_url": "http://127.0.0.1:9/v1"}
        )
    )
    assert model.model_name == "m1"


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"timeout": "soon"}, "components.llm.timeout must be a number of at least 0.001, not 'soon'"),
        ({"max_steps": 0}, "components.llm.max_steps must be a number of at least 1, not 0"),
        ({"max_retries": -1}, "components.llm.max_retries"),
        ({"memory": {"timeout": "x"}}, "components.llm.memory.timeout"),
    ],
)
def test_invalid_numbers_name_the_setting(settings: dict, named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        resolve_settings({"model": "m", **settings}, "memory")


def test_unset_numbers_take_the_defaults() -> None:
    settings = resolve_settings({"timeout": "", "max_steps": None})
    assert (settings.timeout, settings.max_steps, settings.max_retries) == (60.0, 20, 2)


def test_output_mode_is_checked_and_per_role() -> None:
    assert resolve_settings({"model": "m"}).output_mode == "tool"
    memory = resolve_settings(
        {"model": "m", "output_mode": "native", "memory": {"output_mode": "prompted"}}, "memory"
    )
    assert memory.output_mode == "prompted"
    with pytest.raises(
        ValueError, match=r"components.llm.output_mode must be one of tool, native, prompted, not 'json'"
    ):
        resolve_settings({"model": "m", "output_mode": "json"})
    with pytest.raises(ValueError, match="components.llm.memory.output_mode"):
        resolve_settings({"model": "m", "memory": {"output_mode": "x"}}, "memory")


def test_max_tokens_per_role_with_defaults_that_fit_their_output() -> None:
    assert resolve_settings({"model": "m"}, "chat").max_tokens == 2048
    assert resolve_settings({"model": "m"}, "memory").max_tokens == 4096
    shared = {"model": "m", "max_tokens": 1000, "memory": {"max_tokens": 3000}}
    assert resolve_settings(shared, "chat").max_tokens == 1000
    assert resolve_settings(shared, "memory").max_tokens == 3000
    with pytest.raises(ValueError, match="components.llm.memory.max_tokens must be a number of at least 1"):
        resolve_settings({"model": "m", "memory": {"max_tokens": 0}}, "memory")
    with pytest.raises(ValueError, match="components.llm.run_budget"):
        resolve_settings({"model": "m", "run_budget": "soon"})


def test_a_pipeline_may_lower_the_limits_never_raise_them() -> None:
    settings = resolve_settings({"model": "m", "timeout": 30, "max_tokens": 500})
    assert settings.lowered(timeout=300, max_tokens=9000) == settings
    lower = settings.lowered(timeout=5, max_tokens=100)
    assert (lower.timeout, lower.max_tokens) == (5.0, 100)


def test_every_request_carries_the_output_limit() -> None:
    from reme.llm.providers import request_settings

    settings = resolve_settings(
        {"model": "m", "base_url": "http://x/v1", "memory": {"max_tokens": 777}}, "memory"
    )
    assert request_settings(settings)["max_tokens"] == 777

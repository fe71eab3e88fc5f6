"""The `llm` component in a real application: backends from config, roles, health without secrets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reme import ReMe
from reme.llm.providers import LLMNotConfigured

ENV = ("LLM_API_KEY", "LLM_BASE_URL", "LLM_MODEL", "LLM_BACKEND", "LLM_MEMORY_MODEL")


@pytest.fixture(autouse=True)
def no_llm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


async def test_environment_configures_the_openai_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_API_KEY", "sk-very-secret")
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_MODEL", "big-model")
    monkeypatch.setenv("LLM_MEMORY_MODEL", "small-model")
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC") as app:
        llm = app.component("llm")
        assert llm.settings_for("chat").model == "big-model"
        assert llm.settings_for("memory").model == "small-model"
        assert llm.model("memory").model_name == "small-model"
        model = llm.model("memory")
        assert llm.model("memory") is model  # built once, reused
        health = (await app.run("health_check")).to_dict()
        config = (await app.run("app_config")).to_dict()
    assert "sk-very-secret" not in repr(health) + repr(config)
    assert llm.health()["chat"]["api_key_set"] is True and llm.health()["status"] == "ok"
    assert llm.model("memory") is not model  # closing the app released the models (and their HTTP clients)


async def test_without_settings_the_app_starts_and_reports_what_is_missing(tmp_path: Path) -> None:
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC") as app:
        llm = app.component("llm")
        assert llm.health()["status"] == "unconfigured" and llm.missing() == "LLM_MODEL"
        with pytest.raises(LLMNotConfigured, match="set LLM_MODEL"):
            llm.model()
        assert (await app.run("version")).success  # non-LLM jobs are unaffected


async def test_scripted_backend_is_selected_in_config(tmp_path: Path) -> None:
    overrides = {"components.llm.backend": "scripted", "components.llm.script": [{"text": "hi"}]}
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **overrides) as app:
        llm = app.component("llm")
        assert llm.missing() is None and llm.model().model_name == "scripted"
        llm.script = []
        assert "components.llm.script" in (llm.missing() or "")


@pytest.mark.slow
def test_import_reme_does_not_load_pydantic_ai() -> None:
    code = "import sys, reme, reme.llm, reme.llm.settings; print('pydantic_ai' in sys.modules, 'openai' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "False"]


async def test_health_check_probes_the_endpoint_and_says_why(tmp_path: Path, fake_server) -> None:
    """An unreachable LLM_BASE_URL used to report `llm: ok`."""
    dead = {"components.llm.model": "m", "components.llm.base_url": "http://127.0.0.1:9/v1"}
    async with ReMe(workspace_dir=tmp_path / "dead", timezone="UTC", **dead) as app:
        health = await app.run("health_check")
    assert not health.success
    assert "llm: error (cannot reach http://127.0.0.1:9/v1 (ConnectError" in health.answer
    live = {"components.llm.model": "m", "components.llm.base_url": fake_server.base_url}
    async with ReMe(workspace_dir=tmp_path / "live", timezone="UTC", **live) as app:
        health = await app.run("health_check")
    assert health.success and "llm: ok" in health.answer.splitlines()
    async with ReMe(workspace_dir=tmp_path / "none", timezone="UTC") as app:
        health = await app.run("health_check")
    assert health.success and "llm: unconfigured (set LLM_MODEL)" in health.answer.splitlines()

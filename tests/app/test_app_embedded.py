"""The embedded Python API shares the host's event loop; the sync wrapper runs its own."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

import reme
from reme import ReMe, ReMeSync
from reme.app.application import ComponentError
from reme.app.config import ConfigError
from reme.app.jobs import build_job
from reme.errors import ReMeError


async def test_async_context_manager_runs_jobs_on_the_callers_loop(workspace_dir):
    loop = asyncio.get_running_loop()
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC") as app:
        assert workspace_dir.is_dir()
        response = await app.run("version")
        assert response.success and response.metadata["version"] == reme.__version__
        assert asyncio.get_running_loop() is loop
        results = await asyncio.gather(*(app.run("version") for _ in range(5)))
        assert all(r.success for r in results)


async def test_overrides_reach_the_config(workspace_dir):
    async with ReMe(workspace_dir=workspace_dir, **{"service.port": 9999}, timezone="Europe/Paris") as app:
        assert app.config["service"]["port"] == 9999
        assert str(app.tz) == "Europe/Paris"


def test_sync_wrapper(workspace_dir):
    with ReMeSync(workspace_dir=workspace_dir) as app:
        assert app.run("version").answer == reme.__version__
        assert not app.run("version", unexpected=True).success


def test_sync_wrapper_that_fails_to_start_leaves_no_thread_behind(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "daily").write_text("a file where the daily folder belongs")
    before = set(threading.enumerate())
    with pytest.raises(ComponentError, match="daily"), ReMeSync(workspace_dir=tmp_path / "ws"):
        pass
    assert [t.name for t in set(threading.enumerate()) - before if t.is_alive()] == []


async def test_system_jobs(app):
    help_response = await app.run("help")
    names = {job["name"] for job in help_response.metadata["jobs"]}
    assert {"version", "help", "health_check", "status", "app_config"} <= names
    assert all(
        {"name", "kind", "description", "parameters"} <= set(job) for job in help_response.metadata["jobs"]
    )
    one = await app.run("help", job="version")
    assert [job["name"] for job in one.metadata["jobs"]] == ["version"]
    assert not (await app.run("help", job="nope")).success
    health = await app.run("health_check")
    assert health.success and set(health.metadata["components"]) == set(app.components)
    status = await app.run("status")
    assert status.success and status.metadata["rss_bytes"] > 0
    config = await app.run("app_config")
    assert config.metadata["config"]["workspace_dir"] == str(app.workspace_dir)


async def test_app_config_redacts_secrets(workspace_dir):
    async with ReMe(workspace_dir=workspace_dir, **{"service.auth_token": "s3cret-token"}) as app:
        response = await app.run("app_config")
        assert response.metadata["config"]["service"]["auth_token"] == "***"
        assert "s3cret-token" not in response.answer


@pytest.mark.slow
def test_import_reme_stays_light():
    import subprocess
    import sys

    code = "import sys, reme; heavy = [m for m in ('fastapi', 'pydantic_ai', 'mcp', 'uvicorn', 'jsonschema') if m in sys.modules]; print(heavy)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_sync_run_before_start_or_after_close_raises_instead_of_hanging(workspace_dir):
    app = ReMeSync(workspace_dir=workspace_dir)
    with pytest.raises(ReMeError, match="not started"):
        app.run("version")
    with pytest.raises(ReMeError, match="not started"):
        app.stream("chat", query="hi")
    with app:
        assert app.run("version").success
    with pytest.raises(ReMeError, match="closed"):
        app.run("version")
    with pytest.raises(ReMeError, match="closed"):
        app.start()


SCRIPTED_CHAT = {
    "components.llm.backend": "scripted",
    "components.llm.script": [{"text": "Solar panels turn light into power."}],
}


def test_sync_stream_yields_chunks_then_done(workspace_dir):
    with ReMeSync(workspace_dir=workspace_dir, **SCRIPTED_CHAT) as app:
        chunks = list(app.stream("chat", query="what are solar panels?"))
        assert "".join(c.get("text", "") for c in chunks) == "Solar panels turn light into power."
        assert chunks[-1]["type"] == "done" and chunks[-1]["success"] is True
        first = next(iter(app.stream("chat", query="again?")))  # left early: the job is closed too
        assert first["type"] == "text"
        assert app.run("version").success


README = Path(__file__).parents[2] / "README.md"


def readme_python_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(readme_python_blocks())))
def test_readme_python_examples_run_as_scripts(tmp_path, index):
    script = tmp_path / "example.py"
    script.write_text(readme_python_blocks()[index], encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REME_", "LLM_"))}
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "True" in result.stdout


async def test_a_job_switched_off_in_config_is_gone_everywhere(workspace_dir):
    async with ReMe(
        workspace_dir=workspace_dir, **{"jobs.dream_cron.enabled": False, "jobs.traverse.enabled": False}
    ) as app:
        assert "traverse" not in app.jobs and "dream_cron" not in app.jobs
        response = await app.run("traverse", path="daily/x.md")
        assert not response.success and "unknown job 'traverse'" in response.answer
        listed = await app.run("help")
        assert "traverse" not in {job["name"] for job in listed.metadata["jobs"]}
        assert (await app.run("search", query="anything")).success


async def test_a_job_enabled_flag_must_be_a_boolean(workspace_dir):
    with pytest.raises(ConfigError, match=r"jobs\.traverse\.enabled: expected true or false"):
        async with ReMe(workspace_dir=workspace_dir, **{"jobs.traverse.enabled": "sometimes"}):
            pass


def test_an_unquoted_comma_in_a_parameter_description_is_a_config_error():
    raw = yaml.safe_load(
        "parameters:\n"
        "  properties:\n"
        "    n: {type: integer, description: how many, at most ten}\n"
        "steps: [{backend: version}]\n"
    )
    with pytest.raises(
        ConfigError, match=r"jobs\.echo\.parameters\.properties\.n: key 'at most ten' has no value"
    ):
        build_job("echo", raw)

"""An adversarial review of the LLM layer (SPEC §9, §6.1 "secrets never appear in logs"): credentials
in the endpoint URL or echoed by a server never reach a log, an answer or the workspace; settings that
can never work are named before any request; an Anthropic reply is bounded by the request timeout as
an OpenAI one is; a model's refusal is called one; a wrong key or URL is not asked twice.

Server faults already covered by `tests/pipelines/test_adversarial_model_servers.py` are not repeated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.pipelines.test_adversarial_model_servers import SUMMARY, Summary
from tests.pipelines.test_adversarial_model_servers import run as run_on
from tests.pipelines.test_adversarial_model_servers import settings_for as settings_on

from reme.llm import output_modes, probe
from reme.llm.providers import LLMNotConfigured, build_model
from reme.llm.runner import AgentFailed, AgentResult
from reme.llm.settings import ModelSettings, resolve_settings
from reme.llm.testing.fake_openai import FakeOpenAI

KEY = "sk-test-KEY-0123456789abcdef"
PASSWORD = "URL-PASSWORD-4242"


def settings_for(server: FakeOpenAI, **changes: Any) -> ModelSettings:
    """The model-server tests' settings, with a key long enough to be seen if it leaked."""
    return settings_on(server, **{"api_key": KEY, **changes})


async def run(settings: ModelSettings) -> AgentResult[Any]:
    return await run_on(None, settings)


async def failure(settings: ModelSettings) -> str:
    with pytest.raises(AgentFailed) as failed:
        await run(settings)
    return failed.value.message


def with_password(url: str) -> str:
    return url.replace("http://", f"http://alice:{PASSWORD}@")


# -- secrets ---------------------------------------------------------------------------------------


async def test_credentials_in_the_base_url_never_reach_a_log_an_answer_or_the_workspace(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Was: the URL with its password in every warning of `reme.llm.wire`, in `health_check`
    (`describe`), in `reme doctor` (`endpoint`) and in `metadata/llm_output_modes.json`."""
    server = FakeOpenAI([SUMMARY], refuse_tool_choice=True)  # a refusal logs the URL, a fallback keeps it
    modes = tmp_path / "metadata/llm_output_modes.json"
    try:
        settings = settings_for(server, base_url=with_password(server.base_url), modes_file=str(modes))
        result = await run(settings)
        assert result.output == Summary(name="n", description="d") and result.output_mode == "prompted"
        assert "answered HTTP 500" in caplog.text  # the warning was logged, without the password
        shown = [caplog.text, modes.read_text(encoding="utf-8"), json.dumps(settings.describe())]
        shown.append(probe.endpoint(settings))
        closed = replace_port(settings, 9)
        shown.append(await probe.unreachable(closed) or "")
        assert all(PASSWORD not in text for text in shown), shown
        assert "alice:" not in probe.endpoint(settings) and "***@" in probe.endpoint(settings)
        output_modes.forget()
        assert output_modes.mode_for(settings) == "prompted"  # the file still names this endpoint
    finally:
        output_modes.forget()
        server.close()


def replace_port(settings: ModelSettings, port: int) -> ModelSettings:
    from dataclasses import replace
    from urllib.parse import urlsplit

    url = urlsplit(settings.base_url)
    return replace(settings, base_url=url._replace(netloc=f"alice:{PASSWORD}@127.0.0.1:{port}").geturl())


async def test_credentials_in_the_base_url_are_not_in_app_config_or_health_check(tmp_path: Path) -> None:
    """SPEC §6.1: secrets never appear in `app_config` output. Was: the URL with its password in both."""
    from reme import ReMe

    url = f"http://alice:{PASSWORD}@127.0.0.1:9/v1"
    overrides = {"components.llm.base_url": url, "components.llm.model": "m"}
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **overrides) as app:
        config = await app.run("app_config")
        health = await app.run("health_check")
    assert config.success and config.metadata["config"]["components"]["llm"]["base_url"] == (
        "http://***@127.0.0.1:9/v1"
    )
    shown = [config.answer, json.dumps(config.metadata), str(health.answer), json.dumps(health.metadata)]
    assert all(PASSWORD not in text for text in shown), shown


async def test_a_key_the_server_echoes_is_masked_in_the_answer_the_log_and_the_doctor_report(
    fake_server: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """Was: `... HTTP 401 (1 request sent): Incorrect API key provided: sk-test-KEY-...` in the answer."""
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}. Check your key."}})
    fake_server.set_script([{"fault": "raw", "body": body, "status": 401}])
    settings = settings_for(fake_server)
    message = await failure(settings)
    assert "Incorrect API key provided: ***" in message and KEY not in message, message
    reports = await probe.probe_output_modes(build_model(settings), settings)
    said = [r.error or "" for r in reports]
    assert all("Incorrect API key provided: ***" in text for text in said), said
    assert KEY not in caplog.text + " ".join(said)


# -- settings that can never work ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_url", "why"),
    [
        ("localhost:11434/v1", "http:// or https://"),
        ("ftp://127.0.0.1:8000/v1", "http:// or https://"),
        ("http://", "http:// or https://"),
        (f"http://bob:{PASSWORD}@127.0.0.1:8000/v1?key={PASSWORD}", "query"),
    ],
)
def test_a_base_url_that_can_never_work_is_named_before_any_request(base_url: str, why: str) -> None:
    """Was: three requests "sent" (none reached a server) and "Connection error."; a query string was
    sent as part of the path (`/v1/?key=...chat/completions`)."""
    settings = resolve_settings({"model": "m", "base_url": base_url})
    missing = settings.missing() or ""
    assert missing.startswith("LLM_BASE_URL (") and why in missing and PASSWORD not in missing, missing
    with pytest.raises(LLMNotConfigured, match="set LLM_BASE_URL"):
        build_model(settings)


def test_surrounding_whitespace_is_dropped_and_a_key_that_cannot_be_sent_is_named() -> None:
    """Was: a key ending in `\\r` (a .env saved on Windows) failed as "Connection error.; check
    LLM_BASE_URL" after every retry; a key pasted with `…` as a raw UnicodeEncodeError."""
    clean = resolve_settings({"model": "m", "api_key": f" {KEY}\r\n", "base_url": " http://127.0.0.1:1/v1 "})
    assert (clean.api_key, clean.base_url, clean.missing()) == (KEY, "http://127.0.0.1:1/v1", None)
    for bad in (f"{KEY[:10]} {KEY[10:]}", f"{KEY}\u2026", f"{KEY}\nx"):
        missing = resolve_settings({"model": "m", "api_key": bad}).missing() or ""
        assert missing.startswith("LLM_API_KEY (") and KEY[:10] not in missing, missing


# -- bounds ----------------------------------------------------------------------------------------


async def test_an_anthropic_reply_that_trickles_times_out_like_an_openai_one(fake_server: FakeOpenAI) -> None:
    """Was: only `/chat/completions` replies had to arrive whole within the timeout; an Anthropic reply
    a byte at a time held the run until its whole budget was spent, and was never retried."""
    fake_server.set_script([{"fault": "trickle", "seconds": 0.05, "then": SUMMARY}])
    settings = settings_for(
        fake_server,
        backend="anthropic",
        base_url=fake_server.base_url[: -len("/v1")],
        timeout=0.5,
        run_budget=6,
    )
    message = await failure(settings)
    assert "no answer within 0.5 s (2 requests sent)" in message, message
    assert len(fake_server.requests) == 2


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
@pytest.mark.parametrize("retry_after", ["36000", "Wed, 21 Oct 2099 07:28:00 GMT"])
async def test_a_retry_after_of_hours_fails_at_once_quoting_the_server(
    fake_server: FakeOpenAI, backend: str, retry_after: str
) -> None:
    """Was (Anthropic): the client slept as long as the server said, so the run waited out its whole
    budget (600 s by default) and then blamed the budget."""
    fake_server.set_script([{"fault": "http", "status": 429, "retry_after": retry_after}])
    base_url = fake_server.base_url if backend == "openai" else fake_server.base_url[: -len("/v1")]
    settings = settings_for(fake_server, backend=backend, base_url=base_url, max_retries=2, run_budget=4)
    message = await failure(settings)
    assert "HTTP 429 (1 request sent)" in message and "budget" not in message, message


# -- what a failure says ---------------------------------------------------------------------------


def completion(message: dict[str, Any], finish: str) -> str:
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return json.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [choice]})


def anthropic_message(content: list[dict[str, Any]], stop: str) -> str:
    return json.dumps(
        {
            "id": "msg_x",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": content,
            "stop_reason": stop,
            "usage": {"input_tokens": 5, "output_tokens": 3},
        }
    )


REFUSALS = {
    "openai_content_filter": ("openai", completion({"role": "assistant", "content": None}, "content_filter")),
    "openai_refusal_field": (
        "openai",
        completion({"role": "assistant", "content": None, "refusal": "I cannot assist with that."}, "stop"),
    ),
    "openai_text_then_filter": (
        "openai",
        completion({"role": "assistant", "content": "Sorry."}, "content_filter"),
    ),
    "anthropic_refusal": ("anthropic", anthropic_message([], "refusal")),
}


@pytest.mark.parametrize("name", list(REFUSALS))
async def test_a_model_that_refuses_is_said_to_refuse(fake_server: FakeOpenAI, name: str) -> None:
    """Was: `LLM reply stayed invalid (1 request sent, 1 output retries): Content filter triggered ...,
    body: [ { "parts": [], "usage": ...` and the hint to try another output mode, which cannot help."""
    backend, body = REFUSALS[name]
    fake_server.set_script([{"fault": "raw", "body": body}])
    base_url = fake_server.base_url if backend == "openai" else fake_server.base_url[: -len("/v1")]
    message = await failure(settings_for(fake_server, backend=backend, base_url=base_url))
    assert message.startswith("the model refused to answer (") and "another model" in message, message
    assert "output_mode" not in message and '"parts"' not in message and "usage" not in message, message
    if name == "openai_refusal_field":
        assert "I cannot assist with that." in message


@pytest.mark.parametrize(
    ("status", "hint"), [(401, "LLM_API_KEY"), (403, "LLM_API_KEY"), (404, "LLM_BASE_URL")]
)
async def test_a_wrong_key_or_url_is_asked_once_and_named(
    fake_server: FakeOpenAI, caplog: pytest.LogCaptureFixture, status: int, hint: str
) -> None:
    """Was: asked again in `prompted` output mode (two requests, "refused output mode 'tool'" in the
    log), then "the server refuses this request; run `reme doctor`"."""
    body = json.dumps({"error": {"message": "no such key, model or route"}})
    fake_server.set_script([{"fault": "raw", "body": body, "status": status}])
    message = await failure(settings_for(fake_server))
    assert f"HTTP {status} (1 request sent)" in message and hint in message, message
    assert len(fake_server.requests) == 1 and "refused output mode" not in caplog.text

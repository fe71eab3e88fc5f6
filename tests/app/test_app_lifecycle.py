"""Components start in dependency order and roll back on failure; jobs of every kind run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reme.app.application import Application, ComponentError
from reme.app.component import Component
from reme.app.config import ConfigError, load_config
from reme.app.jobs import JobContext, JobError
from reme.app.registry import STEPS, register_component

EVENTS: list[str] = []
CRASHES = {"left": 0}


@register_component("test_recorder")
class Recorder(Component):
    kind = "test"

    async def start(self) -> None:
        if self.settings.get("fail"):
            raise RuntimeError("boom at start")
        EVENTS.append(f"start:{self.name}")

    async def close(self) -> None:
        EVENTS.append(f"close:{self.name}")


@register_component("test_needs_store")
class NeedsStore(Recorder):
    requires = ("store",)


@register_component("test_strict")
class Strict(Recorder):
    """Accepts only the settings it names: anything else is a config error at build time."""

    def __init__(self, app, name: str, size: int = 1) -> None:
        super().__init__(app, name, size=size)


def echo(ctx: JobContext, prefix: str = "") -> None:
    ctx.response.answer = prefix + str(ctx.params.get("text", ""))
    ctx.response.metadata["params"] = ctx.params


def fail(ctx: JobContext, user: bool = True) -> None:
    if user:
        raise JobError("nothing to do: give text=...", {"hint": 1})
    raise ZeroDivisionError("division by zero")


async def stream(ctx: JobContext) -> None:
    for word in ctx.params["text"].split():
        await ctx.emit({"type": "text", "text": word + " "})
    if ctx.params.get("fail"):
        raise RuntimeError("stream broke")
    ctx.add_usage({"input_tokens": 3, "output_tokens": 2})
    ctx.add_usage({"input_tokens": 1})


def cron_tick(ctx: JobContext) -> None:
    EVENTS.append("tick")


async def crash_then_run(ctx: JobContext) -> None:
    EVENTS.append("background-start")
    if CRASHES["left"] > 0:
        CRASHES["left"] -= 1
        raise RuntimeError("background crashed")
    await asyncio.sleep(3600)


@pytest.fixture(autouse=True, scope="module")
def _test_steps():
    """The test doubles are steps only while this module's tests run."""
    steps = {
        "test_echo": echo,
        "test_fail": fail,
        "test_stream": stream,
        "test_cron_tick": cron_tick,
        "test_crash_then_run": crash_then_run,
    }
    with STEPS.registered(steps):
        yield


async def until(condition, seconds: float = 20.0) -> None:
    """Poll `condition` until it holds or `seconds` pass: generous, as the test machine may be busy."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)


def make_app(tmp_path: Path, text: str, **overrides) -> Application:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return Application(
        load_config(path, {"workspace_dir": str(tmp_path / "ws"), **overrides}, load_env_file=False)
    )


JOBS = """
jobs:
  echo:
    description: Echo text.
    parameters:
      properties:
        text: {type: string}
        count: {type: integer, default: 2}
        day: {type: string, format: date}
      required: [text]
    steps: [{backend: test_echo, prefix: "> "}]
  fail_user: {steps: [{backend: test_fail}]}
  fail_internal: {steps: [{backend: test_fail, user: false}]}
  talk:
    kind: stream
    parameters: {properties: {text: {type: string}, fail: {type: boolean}}, required: [text]}
    steps: [{backend: test_stream}]
  hidden: {enable_serve: false, steps: [{backend: test_echo}]}
"""


async def test_components_start_in_dependency_order_and_close_in_reverse(tmp_path):
    EVENTS.clear()
    app = make_app(
        tmp_path, "components:\n  index: {backend: test_needs_store}\n  store: {backend: test_recorder}\n"
    )
    async with app:
        assert list(app.components) == ["store", "index"]
        assert app.component("index").app is app
    assert EVENTS == ["start:store", "start:index", "close:index", "close:store"]


async def test_failing_component_closes_what_already_started(tmp_path):
    EVENTS.clear()
    app = make_app(
        tmp_path,
        "components:\n  store: {backend: test_recorder}\n  index: {backend: test_needs_store, fail: true}\n",
    )
    with pytest.raises(ComponentError, match="'index' failed to start: boom at start"):
        await app.start()
    assert EVENTS == ["start:store", "close:store"]
    assert app.components == {}


async def test_a_bad_setting_of_a_later_component_closes_what_already_started(tmp_path):
    EVENTS.clear()
    app = make_app(
        tmp_path,
        "components:\n  store: {backend: test_recorder}\n"
        "  index: {backend: test_strict, requires: [store], colour: red}\n",
    )
    with pytest.raises(ConfigError, match="components.index: .*colour"):
        await app.start()
    assert EVENTS == ["start:store", "close:store"]
    assert app.components == {}


async def test_a_workspace_dir_that_is_a_file_is_a_config_error(tmp_path):
    (tmp_path / "notes").write_text("not a folder")
    app = make_app(tmp_path, "jobs: {}\n", workspace_dir=str(tmp_path / "notes"))
    with pytest.raises(ConfigError, match="workspace_dir.*notes.*not a folder"):
        await app.start()
    assert (tmp_path / "notes").read_text() == "not a folder"


async def test_missing_dependency_names_both_components(tmp_path):
    app = make_app(tmp_path, "components:\n  index: {backend: test_needs_store}\n")
    with pytest.raises(ComponentError, match="'index' requires 'store'"):
        await app.start()


async def test_unknown_backend_and_bad_job_config_name_the_key(tmp_path):
    with pytest.raises(ConfigError, match="components.x.backend: unknown component backend 'nope'"):
        await make_app(tmp_path, "components:\n  x: {backend: nope}\n").start()
    with pytest.raises(ConfigError, match=r"jobs.j.steps\[0\].backend: unknown step 'nope'"):
        await make_app(tmp_path, "jobs:\n  j: {steps: [{backend: nope}]}\n").start()
    with pytest.raises(
        ConfigError, match=r"unknown config key 'jobs.j.steps\[0\].prefx': step 'test_echo' takes prefix"
    ):
        await make_app(tmp_path, "jobs:\n  j: {steps: [{backend: test_echo, prefx: '> '}]}\n").start()
    with pytest.raises(
        ConfigError, match=r"'jobs.j.steps\[0\].page_line': step 'read' takes max_text_bytes, page_lines"
    ):
        await make_app(tmp_path, "jobs:\n  j: {steps: [{backend: read, page_line: 3}]}\n").start()
    with pytest.raises(ConfigError, match=r"'jobs.j.steps\[0\].x': step 'test_stream' takes no settings"):
        await make_app(
            tmp_path, "jobs:\n  j: {kind: stream, steps: [{backend: test_stream, x: 1}]}\n"
        ).start()
    with pytest.raises(ConfigError, match="jobs.j.kind"):
        await make_app(tmp_path, "jobs:\n  j: {kind: weird, steps: [{backend: test_echo}]}\n").start()
    with pytest.raises(ConfigError, match="jobs.j.cron"):
        await make_app(
            tmp_path, "jobs:\n  j: {kind: cron, cron: 'every day', steps: [{backend: test_echo}]}\n"
        ).start()


async def test_parameters_are_validated_before_any_step(tmp_path):
    async with make_app(tmp_path, JOBS) as app:
        ok = await app.run("echo", text="hi")
        assert ok.success and ok.answer == "> hi"
        assert ok.metadata["params"] == {"text": "hi", "count": 2}
        cases = {
            "unknown parameter 'bogus'": {"text": "x", "bogus": 1},
            "missing required parameter 'text'": {},
            "parameter 'count' must be of type integer": {"text": "x", "count": "3"},
            "'2026-13-45' is not a valid date": {"text": "x", "day": "2026-13-45"},
        }
        for message, params in cases.items():
            response = await app.run("echo", **params)
            assert not response.success
            assert message in response.answer


async def test_step_errors_become_failed_responses(tmp_path, caplog):
    async with make_app(tmp_path, JOBS) as app:
        user = await app.run("fail_user")
        assert (user.success, user.answer, user.metadata) == (
            False,
            "nothing to do: give text=...",
            {"hint": 1},
        )
        assert user.error == "user" and not [r for r in caplog.records if r.exc_info]
        internal = await app.run("fail_internal")
        assert not internal.success and internal.error == "bug"
        assert internal.answer.endswith("ZeroDivisionError: division by zero") and "a bug" in internal.answer
        logged = [record for record in caplog.records if record.exc_info]  # a bug leaves its traceback
        assert len(logged) == 1 and logged[0].exc_info[0] is ZeroDivisionError
        assert (await app.run("echo", text="still alive")).success
        assert not (await app.run("missing")).success


async def test_stream_job_chunks_end_with_done_marker(tmp_path):
    async with make_app(tmp_path, JOBS) as app:
        chunks = [chunk async for chunk in app.stream("talk", text="a b")]
        assert chunks[:2] == [{"type": "text", "text": "a "}, {"type": "text", "text": "b "}]
        assert chunks[-1]["type"] == "done" and chunks[-1]["success"] is True
        assert chunks[-1]["metadata"]["usage"] == {"input_tokens": 4, "output_tokens": 2}
        failed = [chunk async for chunk in app.stream("talk", text="x", fail=True)]
        assert [c["type"] for c in failed] == ["text", "error", "done"]
        assert "stream broke" in failed[1]["message"]
        invalid = [chunk async for chunk in app.stream("talk")]
        assert [c["type"] for c in invalid] == ["error", "done"]
        collected = await app.run("talk", text="a b")
        assert collected.answer == "a b "


async def test_served_jobs_exclude_hidden_background_and_cron(tmp_path):
    text = JOBS + (
        "  loop: {kind: background, steps: [{backend: test_echo}]}\n"
        "  nightly: {kind: cron, cron: '0 23 * * *', steps: [{backend: test_echo}]}\n"
    )
    async with make_app(tmp_path, text) as app:
        assert {job.name for job in app.served_jobs()} == {"echo", "fail_user", "fail_internal", "talk"}
        assert (await app.run("hidden")).success


async def test_cron_job_fires_on_its_schedule(tmp_path):
    EVENTS.clear()
    text = "jobs:\n  tick: {kind: cron, cron: '* * * * * *', steps: [{backend: test_cron_tick}]}\n"
    async with make_app(tmp_path, text, timezone="Asia/Shanghai") as app:
        app.start_background()
        await until(lambda: EVENTS.count("tick") >= 2)
    assert EVENTS.count("tick") >= 2


async def test_background_job_is_restarted_after_a_crash(tmp_path):
    EVENTS.clear()
    CRASHES["left"] = 2
    text = (
        "jobs:\n  loop: {kind: background, restart_delay: 0.05, max_restart_delay: 0.1,"
        " steps: [{backend: test_crash_then_run}]}\n"
    )
    async with make_app(tmp_path, text) as app:
        app.start_background()
        await until(lambda: EVENTS.count("background-start") >= 3)
        crashes = [r for name, r in app.job_runs if name == "loop"]
    assert EVENTS.count("background-start") == 3
    assert [r.answer.split(": ", 1)[-1] for r in crashes] == ["RuntimeError: background crashed"] * 2
    assert [r.error for r in crashes] == ["bug"] * 2

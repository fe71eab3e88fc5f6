"""What a person sees from the CLI (issue 23.3, 23.4): local-only jobs are marked in `reme help` and a
service asked for one answers with the exact command that runs it; every answer reads as text
(`--json` keeps the whole Response); recall never shows reme's own markup."""

from __future__ import annotations

import json
import shlex
import subprocess

import httpx
import pytest
from tests.pipelines.proactive_helpers import found, reply
from tests.service.test_service_cli import run_in_terminal
from tests.support import REME, reme_env, run_reme_process, scripted_overrides

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


@pytest.fixture(scope="module")
def service(module_services, tmp_path_factory):
    workspace = tmp_path_factory.mktemp("readable") / "ws"
    service = module_services(workspace, "service.port=0", "scheduler.cron=false")
    for args in (
        (
            "write",
            "path=digest/wiki/solar.md",
            "content=Solar panels, see [[pv]].",
            "name=solar",
            "description=PV",
        ),
        ("daily_create", "date=2026-06-20", "name=solar-plans", "description=solar panel plans for the roof"),
        ("daily_reindex", "date=2026-06-20"),
    ):
        assert service.cli(*args).returncode == 0
    return service


def command_in(text: str) -> str:
    """The first `...` command quoted in a message."""
    return text.split("`")[1]


def test_help_marks_local_jobs_with_the_command_that_runs_them(service):
    listed = service.cli("help").stdout
    ws = service.workspace.resolve()
    assert "proactive_refresh (local: not served) [date=]" in listed
    assert f"    run it here with `reme start job=proactive_refresh workspace_dir={ws}`" in listed
    assert f"run it here with `reme import obsidian SOURCE workspace_dir={ws}`" in listed
    assert "search query=" in listed and "search (local" not in listed  # served jobs are not marked
    entry = json.loads(service.cli("help", "job=proactive_refresh", "--json").stdout)["metadata"]["jobs"][0]
    assert entry["served"] is False
    assert entry["local_command"] == f"reme start job=proactive_refresh workspace_dir={ws}"


def test_asking_the_service_for_a_local_job_answers_the_command_and_that_command_runs(service):
    ws = service.workspace.resolve()
    over_http = httpx.post(f"{service.url}/proactive_refresh", json={"date": "2026-06-20"}, timeout=30)
    assert over_http.status_code == 404
    expected = f"reme start job=proactive_refresh date=2026-06-20 workspace_dir={ws}"
    assert over_http.json()["answer"] == (
        f"job 'proactive_refresh' is not served over HTTP (a local job); run it here with `{expected}`"
    )
    through_cli = service.cli("proactive_refresh", "date=2026-06-20")
    assert through_cli.returncode == 1 and f"`{expected}`" in through_cli.stderr
    command = shlex.split(command_in(through_cli.stderr))
    assert command[0] == "reme"
    model = scripted_overrides([{"output": reply([found("Roof", "daily/2026-06-20/solar-plans.md")])}])
    ran = run_reme_process(*command[1:], *model, "scheduler.cron=false", cwd=service.workspace.parent)
    assert ran.returncode == 0, ran.stderr  # it ran, with the date asked for
    assert (service.workspace / "daily/2026-06-20/interests.yaml").is_file()
    imported = httpx.post(f"{service.url}/import_obsidian", json={"source": "/tmp/my vault", "dry_run": True})
    assert (
        f"run it here with `reme import obsidian '/tmp/my vault' dry_run=true workspace_dir={ws}`"
        in (imported.json()["answer"])
    )


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_stat_and_front_matter_read_as_text_and_json_keeps_the_response(service, terminal):
    where = f"workspace_dir={service.workspace}"
    for job, expected in (
        (
            "stat",
            [
                "digest/wiki/solar.md — file,",
                "bytes, modified 20",
                "1 outlink(s), 0 inlink(s)",
                "  name: solar",
            ],
        ),
        ("frontmatter_read", ["name: solar", "description: PV"]),
    ):
        args = [job, "path=digest/wiki/solar.md", where]
        if terminal:
            status, shown = run_in_terminal([REME, *args], reme_env(TERM="xterm-256color", COLUMNS="120"))
        else:
            result = run_reme_process(*args)
            status, shown = result.returncode, result.stdout
        assert status == 0, shown
        for piece in expected:
            assert piece in shown, (job, shown)
        assert "{" not in shown and '"' not in shown, shown  # no JSON
        whole = json.loads(run_reme_process(*args, "--json").stdout)
        assert whole["success"] is True and whole["metadata"]["path"] == "digest/wiki/solar.md"


def hook(event: str, payload: dict[str, object], workspace, *extra: str) -> str:
    """Run `reme hook EVENT` as Claude Code does; the additionalContext it prints."""
    result = subprocess.run(
        [REME, "hook", event, f"workspace_dir={workspace}", *extra],
        input=json.dumps({"session_id": "s1", "hook_event_name": event, **payload}),
        capture_output=True,
        text=True,
        timeout=60,
        env=reme_env(REME_HOOK_BUDGET="60"),
        cwd=workspace.parent,
    )
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"])


def test_recall_and_the_session_start_context_show_no_internal_markup(service):
    recalled = service.cli("agent_memory_recall", "query=solar panel plans")
    assert recalled.returncode == 0 and "daily/2026-06-20.md" in recalled.stdout, recalled.stdout
    started = hook("SessionStart", {"cwd": "/home/dev/solar-plans", "source": "startup"}, service.workspace)
    prompted = hook(
        "UserPromptSubmit",
        {"prompt": "solar panel plans", "cwd": "/x"},
        service.workspace,
        "prompt_recall=true",
    )
    for shown in (recalled.stdout, started, prompted):
        assert "daily/2026-06-20.md" in shown and "solar panel plans for the roof" in shown, shown
        assert "<!--" not in shown and "-->" not in shown and "notes:auto" not in shown, shown


# parameters that give each job with required ones a successful run on the module's workspace
EXAMPLES: dict[str, list[str]] = {
    "read": ["path=digest/wiki/solar.md"],
    "stat": ["path=digest/wiki/solar.md"],
    "frontmatter_read": ["path=digest/wiki/solar.md"],
    "frontmatter_update": ["path=daily/2026-06-20/solar-plans.md", 'metadata={"mood": "sunny"}'],
    "frontmatter_delete": ["path=daily/2026-06-20/solar-plans.md", 'keys=["mood"]'],
    "load": ["path=digest/wiki/solar.md"],
    "search": ["query=solar"],
    "node_search": ["query=solar"],
    "traverse": ["path=digest/wiki/solar.md"],
    "list": ["path=digest", "recursive=true"],
    "daily_list": ["date=2026-06-20"],
    "agent_memory_recall": ["query=solar"],
    "proactive_read": ["date=2026-06-20"],
    "export_digest": ["format=markdown"],
}
NOT_HERE = {"chat": "a stream job that needs a model", "reindex": "rebuilds the module's index"}


def test_no_successful_answer_of_any_job_prints_as_json(service):
    """Issue 23.4: every served job's answer, piped, is text (an export in format=json is data, not here)."""
    jobs = json.loads(service.cli("help", "--json").stdout)["metadata"]["jobs"]
    shown = 0
    for job in jobs:
        name, required = job["name"], job["parameters"].get("required", [])
        if not job["served"] or name in NOT_HERE or (required and name not in EXAMPLES):
            continue
        result = service.cli(name, *EXAMPLES.get(name, []))
        if result.returncode != 0:
            continue  # a failure (no model, nothing to do) is a sentence on stderr
        text = result.stdout.strip()
        shown += 1
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        assert not isinstance(parsed, (dict, list)), f"{name} printed JSON:\n{text[:300]}"
    assert shown >= 25

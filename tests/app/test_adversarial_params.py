"""Adversarial job parameters through the embedded API (docs/spec.md §6.2, §14).

The rule: every job validates its parameters; a failure is `success=false` with a message that says
what to fix, leaves files as they were, and nothing a caller sends can make a job unboundedly
expensive. Each test below sends one input that broke that rule when it was written.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from reme import ReMe

BUG = "internal error"
MEM0 = Path(__file__).parents[1] / "pipelines" / "imports_data" / "mem0.json"


@pytest.fixture(autouse=True)
def _no_llm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LLM_API_KEY", "LLM_BASE_URL", "LLM_MODEL", "LLM_BACKEND", "LLM_MEMORY_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[ReMe]:
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **{"scheduler.cron": False}) as started:
        ws = started.workspace_dir
        (ws / "daily" / "2026-01-01.md").write_text("hello [[digest/wiki/solar]]\n", encoding="utf-8")
        (ws / "digest" / "wiki").mkdir(parents=True, exist_ok=True)
        (ws / "digest" / "wiki" / "solar.md").write_text(
            "---\nname: solar\ndescription: Solar power\n---\nSolar power.\n\n## Sources\n\n"
            "- derived_from:: [[daily/2026-01-01]]\n",
            encoding="utf-8",
        )
        await started.run("reindex")
        yield started


def _files(root: Path) -> dict[str, bytes | None]:
    """Every entry of the workspace but derived state, with file bytes."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in root.rglob("*")
        if not p.relative_to(root).as_posix().startswith("metadata")
    }


async def _refused(app: ReMe, job: str, params: dict[str, Any]) -> None:
    """The job answers success=false with a user's error, and no file changed."""
    before = _files(app.workspace_dir)
    response = await app.run(job, **params)
    assert not response.success
    assert BUG not in response.answer, response.answer
    assert _files(app.workspace_dir) == before


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    cursor = value
    for _ in range(depth):
        cursor["a"] = {}
        cursor = cursor["a"]
    return value


# --- validation itself -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "params"),
    [
        ("read", {"path": _nested(5000)}),
        ("search", {"query": _nested(5000)}),
        ("agent_session_append", {"session_id": "s1", "messages": [], "skipped": _nested(5000)}),
    ],
)
async def test_a_deeply_nested_value_is_refused_not_raised(
    app: ReMe, job: str, params: dict[str, Any]
) -> None:
    """jsonschema's error message reprs the instance: a RecursionError escaped `app.run` itself."""
    response = await app.run(job, **params)
    assert not response.success
    assert BUG not in response.answer


@pytest.mark.parametrize(
    ("job", "params"),
    [
        ("read", {"path": "daily/2026-01-01.md", "start_line": 1.0}),
        ("list", {"path": "", "limit": 1.0}),
        ("search", {"query": "hello", "limit": 5.0}),
        ("search", {"query": "hello", "max_links_per_direction": 2.0}),
        ("node_search", {"query": "solar", "limit": 5.0}),
        ("traverse", {"path": "daily/2026-01-01.md", "depth": 1.0}),
        ("recent_errors", {"limit": 5.0}),
        ("auto_dream", {"scan_days": 2.0}),
    ],
)
async def test_an_integral_float_for_an_integer_parameter_is_not_a_bug(
    app: ReMe, job: str, params: dict[str, Any]
) -> None:
    """JSON Schema counts 1.0 as an integer, so it passes validation and reaches the step as a float
    (a JSON client sending `5.0` gets the same): the job must take it as 5 or refuse it clearly."""
    response = await app.run(job, **params)
    assert BUG not in str(response.answer), response.answer


@pytest.mark.parametrize(
    ("job", "params"),
    [
        ("search", {"query": "hello", "min_score": math.nan}),
        ("proactive_read", {"min_confidence": math.nan}),
    ],
)
async def test_nan_is_refused(app: ReMe, job: str, params: dict[str, Any]) -> None:
    """NaN passes `minimum`/`maximum` (every comparison is false) and silently changes the answer."""
    response = await app.run(job, **params)
    assert not response.success
    assert "nan" in response.answer.lower()


async def test_an_out_of_range_number_is_a_user_error(app: ReMe) -> None:
    """`expected_mtime` is a JSON number; one too large for a float was a bug (OverflowError)."""
    note = app.workspace_dir / "daily" / "2026-01-01.md"
    before = note.read_bytes()
    response = await app.run("save", path="daily/2026-01-01.md", content="x", expected_mtime=10**400)
    assert not response.success
    assert BUG not in response.answer, response.answer
    assert note.read_bytes() == before


# --- paths -------------------------------------------------------------------------------------

LONE = "\ud800"  # a lone surrogate: what `json.loads('"\\ud800"')` hands a service


@pytest.mark.parametrize(
    ("job", "params"),
    [
        ("read", {"path": LONE}),
        ("stat", {"path": LONE}),
        ("list", {"path": LONE}),
        ("write", {"path": LONE, "content": "x"}),
        ("delete", {"path": LONE}),
        ("move", {"src": "daily/2026-01-01.md", "dst": LONE}),
        ("traverse", {"path": LONE}),
        ("search", {"query": "hello", "path_prefix": LONE}),
        ("export_digest", {"bucket": LONE}),
        ("daily_create", {"name": LONE}),
        ("import_mem0", {"source": str(MEM0), "folder": LONE}),
    ],
)
async def test_a_lone_surrogate_in_a_path_is_a_user_error(
    app: ReMe, job: str, params: dict[str, Any]
) -> None:
    """A path with a lone surrogate is refused with a message, like `content` with one."""
    await _refused(app, job, params)


@pytest.mark.parametrize("source", ["a\x00b", "/tmp/a\x00b/CLAUDE.md", LONE])
async def test_import_claude_code_refuses_an_unusable_source_path(app: ReMe, source: str) -> None:
    """import_mem0/chatgpt/obsidian answer "... does not exist"; import_claude_code raised."""
    response = await app.run("import_claude_code", source=source)
    assert not response.success
    assert BUG not in response.answer, response.answer


# --- bounds ------------------------------------------------------------------------------------


async def test_edit_with_an_enormous_result_is_a_user_error(app: ReMe) -> None:
    """`body.replace(old, new)` was built before the size check: 10^12 bytes was a MemoryError (a bug)."""
    note = app.workspace_dir / "daily" / "spaces.md"
    note.write_text(" " * 1_000_000, encoding="utf-8")
    huge = await app.run("edit", path="daily/spaces.md", old=" ", new="x" * 1_000_000)
    assert not huge.success
    assert BUG not in huge.answer, huge.answer
    assert note.read_text(encoding="utf-8") == " " * 1_000_000


async def _peak_mib(app: ReMe, job: str, **params: Any) -> tuple[Any, float]:
    """The job's response and the most memory (MiB) Python held while it ran."""
    tracemalloc.start()
    try:
        response = await app.run(job, **params)
        return response, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


async def test_edit_refuses_an_oversized_result_before_building_it(app: ReMe) -> None:
    """`body.replace(old, new)` was built in full and only then checked against max_text_bytes."""
    note = app.workspace_dir / "daily" / "spaces.md"
    note.write_text(" " * 100_000, encoding="utf-8")
    refused, peak = await _peak_mib(app, "edit", path="daily/spaces.md", old=" ", new="x" * 2000)  # 200 MB
    assert not refused.success and "cap" in refused.answer
    assert peak < 64, f"edit allocated {peak:.0f} MiB to refuse a result over its 16 MiB cap"
    assert note.read_text(encoding="utf-8") == " " * 100_000


def _tilde_node(app: ReMe) -> Path:
    """A digest node whose body holds 100,000 `~`: replacing them can ask for a huge result."""
    node = app.workspace_dir / "digest" / "wiki" / "solar.md"
    node.write_text(
        "---\nname: solar\ndescription: Solar power\n---\nSolar "
        + "~" * 100_000
        + "\n\n## Sources\n\n- derived_from:: [[daily/2026-01-01]]\n",
        encoding="utf-8",
    )
    return node


async def test_digest_edit_with_an_enormous_result_is_a_user_error(app: ReMe) -> None:
    node = _tilde_node(app)
    before = node.read_bytes()
    huge = await app.run("digest_edit", path="digest/wiki/solar.md", old="~", new="y" * 1_000_000)
    assert not huge.success
    assert BUG not in huge.answer, huge.answer
    assert node.read_bytes() == before


async def test_digest_edit_refuses_an_oversized_result_before_parsing_it(app: ReMe) -> None:
    """The 100 MB draft was parsed and link-checked (2.5 s, ~400 MB) before the 1 MiB cap refused it."""
    node = _tilde_node(app)
    before = node.read_bytes()
    refused, peak = await _peak_mib(
        app, "digest_edit", path="digest/wiki/solar.md", old="~", new="y" * 1000
    )  # 100 MB
    assert not refused.success and "cap" in refused.answer
    assert peak < 64, f"digest_edit allocated {peak:.0f} MiB to refuse a result over its 1 MiB cap"
    assert node.read_bytes() == before


async def test_traverse_bounds_the_number_of_start_paths(app: ReMe) -> None:
    """`max_nodes: 1000` caps the walk, but every seed became a node: 5000 seeds, 5000 nodes."""
    response = await app.run("traverse", path=[f"daily/p{i}.md" for i in range(5000)], depth=1)
    if response.success:
        assert len(response.metadata["nodes"]) <= 1000
    else:
        assert BUG not in response.answer


@pytest.mark.parametrize(
    ("job", "params", "name"),
    [
        ("chat", {"query": "q" * 1_000_000}, "query"),
        ("chat", {"query": "hi", "history": [{"role": "user", "content": "x"}] * 200_000}, "history"),
        (
            "auto_memory",
            {
                "session_id": "s1",
                "messages": [{"role": "user", "content": "hi"}],
                "memory_hint": "h" * 1_000_000,
            },
            "memory_hint",
        ),
    ],
)
async def test_llm_job_inputs_are_bounded_before_any_model_call(
    tmp_path: Path, job: str, params: dict[str, Any], name: str
) -> None:
    """search caps `query` at 8192 characters and auto_dream caps `hint` at 2000; chat's query and
    history and auto_memory's memory_hint went to the model whole (a 3 MB request per call)."""
    overrides = {
        "components.llm.backend": "scripted",
        "components.llm.script": [{"text": "ok"}] * 5,
        "scheduler.cron": False,
    }
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **overrides) as app:
        response = await app.run(job, **params)
        assert not response.success
        assert name in response.answer
        assert response.metadata.get("usage", {}).get("requests", 0) == 0  # no model call
        assert not (app.workspace_dir / "session" / "dialog" / "s1.jsonl").exists()


# --- files left as they were ------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("branch", ["a..b", "x.lock", "topic/", "main\n"])
async def test_sync_init_with_an_invalid_branch_changes_nothing(tmp_path: Path, branch: str) -> None:
    """The schema's pattern lets git-invalid names through (and `$` matches before a final newline):
    git's own check refuses them before a `.git` folder is made."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **{"scheduler.cron": False}) as app:
        before = _files(app.workspace_dir)
        response = await app.run("sync_init", remote=str(remote), branch=branch)
        assert not response.success
        assert "branch" in response.answer
        assert _files(app.workspace_dir) == before


# --- already correct: coverage the suite did not have ------------------------------------------


@pytest.mark.parametrize(
    ("job", "params"),
    [
        ("write", {"path": "daily/2026-01-01.md", "content": LONE}),
        ("save", {"path": "daily/2026-01-01.md", "content": LONE}),
        ("edit", {"path": "daily/2026-01-01.md", "old": "hello", "new": LONE}),
        ("write", {"path": "daily/2026-01-01.md", "content": "x", "metadata": _nested(2000)}),
        ("frontmatter_update", {"path": "daily/2026-01-01.md", "metadata": _nested(2000)}),
        ("frontmatter_update", {"path": "daily/2026-01-01.md", "metadata": {"a": math.nan}}),
        ("frontmatter_update", {"path": "daily/2026-01-01.md", "metadata": {"k": list(range(20_000))}}),
    ],
)
async def test_unwritable_text_and_metadata_are_refused_and_change_nothing(
    app: ReMe, job: str, params: dict[str, Any]
) -> None:
    await _refused(app, job, params)

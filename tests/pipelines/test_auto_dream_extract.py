"""Dream extraction and scanning (docs/spec.md §12.2): validated units, bounds, the window and the catalog."""

from __future__ import annotations

from tests.pipelines.conftest import MakeApp, MakePipes, scripted
from tests.pipelines.dream_support import (
    CARD,
    CARD_TEXT,
    DAY,
    catalog,
    create_turns,
    extract_run,
    integrate_run,
    put,
    unit,
)

from reme.pipelines.dream.extract import Extraction, Unit, validate

SHOWN = [CARD, f"daily/{DAY}.md"]


def test_units_are_made_safe_unknown_bucket_foreign_evidence_and_too_many() -> None:
    reply = Extraction(
        units=[
            Unit(
                name=" A ",
                summary="s",
                bucket="astrology",
                evidence_paths=[f"[[{CARD}]]", "digest/wiki/x.md"],
            ),
            Unit(name="B", summary="s", bucket="wiki", evidence_paths=[CARD]),
            Unit(name="C", summary="s", bucket="wiki", evidence_paths=[CARD]),
        ]
    )
    units, notes, problem = validate(reply, SHOWN, ["wiki", "unknown"], max_units=2)
    assert problem is None
    assert [(u.name, u.bucket, u.evidence_paths) for u in units] == [
        ("A", "unknown", [CARD]),
        ("B", "wiki", [CARD]),
    ]
    assert any("digest/wiki/x.md" in note for note in notes) and any("max_units 2" in note for note in notes)


def test_a_unit_citing_no_changed_file_makes_the_reply_unusable() -> None:
    reply = Extraction(
        units=[Unit(name="A", summary="s", bucket="wiki", evidence_paths=["daily/2020-01-01/x.md"])]
    )
    assert validate(reply, SHOWN, ["wiki"], 5)[2] is not None


async def test_unusable_reply_is_asked_again_once_with_the_reason(make_pipes: MakePipes) -> None:
    bad = {"output": {"units": [unit("Ghost", "daily/1999-01-01/none.md")]}}
    script = [
        {"run": "extract", "turns": [bad]},  # every extraction run plays this: both attempts are bad
    ]
    app = make_pipes(script)
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.dream()
    assert not response.success and "unusable twice" in response.answer and "cites none" in response.answer
    assert response.metadata["usage"]["extract"]["requests"] == 2 and catalog(app.workspace_dir) == {}


async def test_window_skips_interests_and_other_days_and_a_vanished_file_leaves_the_catalog(
    make_pipes: MakePipes,
) -> None:
    app = make_pipes([extract_run(), integrate_run(create_turns())])
    ws = app.workspace_dir
    put(ws, CARD, CARD_TEXT)
    put(ws, f"daily/{DAY}/interests.yaml", "version: 2\n")
    put(ws, "daily/2026-06-18/old.md", "# too old\n")
    put(ws, "daily/2026-06-19/yesterday.md", "# yesterday\n")
    response = await app.dream(scan_days=2)
    assert response.success, response.answer
    assert response.metadata["scanned"] == ["daily/2026-06-19/yesterday.md", CARD]
    assert set(catalog(ws)) == {"daily/2026-06-19/yesterday.md", CARD}
    (ws / "daily/2026-06-19/yesterday.md").unlink()
    put(ws, CARD, CARD_TEXT + "\nMore.\n")
    again = await app.dream()
    assert again.success and again.metadata["changed"] == [CARD] and set(catalog(ws)) == {CARD}


async def test_files_beyond_the_total_bound_wait_for_the_next_run(make_app: MakeApp) -> None:
    first, second = f"daily/{DAY}/a.md", f"daily/{DAY}/b.md"
    overrides = scripted([extract_run()])
    overrides["jobs.auto_dream.steps"] = [
        {"backend": "auto_dream", "max_chars_per_file": 500, "max_total_chars": 600}
    ]
    app = await make_app(**overrides)
    put(app.workspace_dir, first, "x" * 1000)
    put(app.workspace_dir, second, "y" * 1000)
    response = await app.run("auto_dream", date=DAY)
    assert response.success, response.answer
    assert response.metadata["checkpointed"] == [first] and set(catalog(app.workspace_dir)) == {first}
    assert any(second in note for note in response.metadata["notes"])
    again = await app.run("auto_dream", date=DAY)
    assert again.metadata["changed"] == [second] and again.metadata["checkpointed"] == [second]


async def test_bad_input_is_refused_before_anything_is_written(make_app: MakeApp) -> None:
    app = await make_app(**scripted([extract_run()]))
    put(app.workspace_dir, CARD, CARD_TEXT)
    for params in (
        {"date": "2026-13-01"},
        {"scan_days": 0},
        {"max_units": "3"},
        {"hint": 3},
        {"colour": "red"},
    ):
        response = await app.run("auto_dream", **params)
        assert not response.success, params
    assert catalog(app.workspace_dir) == {} and not (app.workspace_dir / "journal").exists()


async def test_without_a_model_the_run_says_what_to_set_and_checkpoints_nothing(make_app: MakeApp) -> None:
    app = await make_app()
    put(app.workspace_dir, CARD, CARD_TEXT)
    response = await app.run("auto_dream", date=DAY)
    assert not response.success and "LLM_MODEL" in response.answer
    assert response.metadata["changed"] == [CARD] and response.metadata["checkpointed"] == []
    assert catalog(app.workspace_dir) == {} and not (app.workspace_dir / "journal").exists()


async def test_units_follow_the_configured_buckets(make_app: MakeApp) -> None:
    buckets = [{"name": "recipes", "description": "how we cook"}]
    script = [extract_run(unit("Soup", bucket="recipes"), unit("Weekly releases", bucket="wiki"))]
    app = await make_app(**scripted(script), **{"digest.buckets": buckets})
    put(app.workspace_dir, CARD, CARD_TEXT)
    app.component("llm").script = [*script, integrate_run([])]  # type: ignore[attr-defined]
    response = await app.run("auto_dream", date=DAY)
    assert [(u["name"], u["bucket"]) for u in response.metadata["units"]] == [
        ("Soup", "recipes"),
        ("Weekly releases", "unknown"),
    ]
    assert "`recipes`: how we cook" in (app.workspace_dir / "digest/_buckets.md").read_text(encoding="utf-8")

"""`reme.app.diagnostics`: the typed answers `reme doctor` words, read without a service or a model."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme.app.diagnostics import ModelSettingsError, conflict_files, role_models, workspace_layout
from reme.service.doctor import Check, index_report, mode_checks


def test_each_model_is_listed_once_whatever_roles_share_it() -> None:
    shared = {
        "backend": "openai",
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "memory": {"max_tokens": 9},
    }
    assert [m.role for m in role_models(shared)] == ["chat"]  # a role's own limit is no other model
    split = {**shared, "memory": {"model": "small"}}
    models = role_models(split, modes_file="/tmp/modes.json")
    assert [(m.role, m.settings.model, m.settings.modes_file) for m in models] == [
        ("chat", "m", "/tmp/modes.json"),
        ("memory", "small", "/tmp/modes.json"),
    ]
    assert models[1].name() == "memory model small (openai at http://127.0.0.1:9/v1)"


def test_a_bad_model_setting_is_one_error_naming_it() -> None:
    with pytest.raises(ModelSettingsError, match=r"components\.llm\.timeout"):
        role_models({"backend": "openai", "model": "m", "timeout": "soon"})


def test_the_layout_names_missing_folders_but_not_those_made_on_first_write(tmp_path: Path) -> None:
    layout = workspace_layout(tmp_path, {"daily": "days"})
    assert layout.folders["daily"] == "days" and "days" in layout.missing
    assert layout.folders["journal"] not in layout.missing  # created by its first write
    for name in layout.folders.values():
        (tmp_path / name).mkdir(exist_ok=True)
    assert workspace_layout(tmp_path, {"daily": "days"}).missing == []


def test_conflict_copies_are_found_outside_git_only(tmp_path: Path) -> None:
    copy = tmp_path / "notes" / "a.conflict-laptop-20260101T120000.md"
    copy.parent.mkdir()
    copy.write_text("x")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "b.conflict-laptop-20260101T120000.md").write_text("x")
    (tmp_path / "notes" / "c.conflict-of-interest.md").write_text("x")  # a name, not a sync's copy
    assert conflict_files(tmp_path) == [copy]


def test_the_doctor_words_typed_findings() -> None:
    from reme.app.diagnostics import IndexState, ModeReport

    behind = IndexState(files=3, chunks=9, tokenizer="t", rebuild_due=False, added=1, changed=0, gone=2)
    assert index_report(behind)[0].detail.endswith("behind the files: 1 new, 0 changed, 2 deleted")
    reports = [ModeReport("tool", False, "refused"), ModeReport("prompted", True)]
    assert mode_checks("chat", "tool", reports) == [
        Check(
            "llm",
            "warn",
            "chat: output modes that work: prompted; tool failed (refused)",
            "set LLM_OUTPUT_MODE=prompted (else reme falls back to prompted after one refused request)",
        )
    ]

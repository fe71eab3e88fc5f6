"""Statements with validity (docs/spec.md §17.2): reading, validity on a day, and what a superseding edit keeps."""

from __future__ import annotations

from datetime import date

import pytest

from reme.workspace.validity import StatementDropped, check_kept, dropped_statements, problems, statements

OLD = "# Home\n\n- Lives in Berlin [valid_from:: 2021-03]\n- Likes tea.\n\n## Sources\n- derived_from:: [[daily/a.md]] — x\n"
SUPERSEDED = OLD.replace(
    "- Lives in Berlin [valid_from:: 2021-03]\n",
    "- Lives in Berlin [valid_from:: 2021-03] [valid_to:: 2026-11-20]\n- Lives in Paris [valid_from:: 2026-11-20]\n",
)


def test_statements_and_their_validity_on_a_day() -> None:
    old, new = statements(SUPERSEDED)
    assert (old.claim, old.valid_from, old.valid_to, old.range) == (
        "Lives in Berlin",
        "2021-03",
        "2026-11-20",
        "2021-03/2026-11-20",
    )
    assert old.superseded and not new.superseded
    assert old.valid_on(date(2021, 3, 1)) and not old.valid_on(date(2021, 2, 28))
    assert old.valid_on(date(2026, 11, 19)) and not old.valid_on(date(2026, 11, 20))
    assert new.valid_on(date(2026, 11, 20)) and not new.valid_on(date(2026, 11, 19))


def test_fenced_lines_are_no_statements() -> None:
    assert statements("```\n- x [valid_from:: 2020]\n```\n- y [valid_to:: 2021]\n")[0].claim == "y"


def test_a_superseding_edit_that_keeps_the_old_statement_passes() -> None:
    assert dropped_statements(OLD, SUPERSEDED) == []
    check_kept("digest/personal/home.md", OLD, SUPERSEDED)


def test_a_superseding_edit_that_replaces_the_old_statement_is_refused() -> None:
    replaced = OLD.replace(
        "- Lives in Berlin [valid_from:: 2021-03]", "- Lives in Paris [valid_from:: 2026-11-20]"
    )
    assert dropped_statements(OLD, replaced) == ["- Lives in Berlin [valid_from:: 2021-03]"]
    with pytest.raises(StatementDropped) as caught:
        check_kept("digest/personal/home.md", OLD, replaced)
    assert caught.value.metadata["dropped_statements"] == ["- Lives in Berlin [valid_from:: 2021-03]"]


def test_adding_validity_while_dropping_a_plain_line_is_refused() -> None:
    plain = "# Home\n\n- Lives in Berlin.\n\n## Sources\n- derived_from:: [[daily/a.md]] — x\n"
    dropped = plain.replace("- Lives in Berlin.", "- Lives in Paris [valid_from:: 2026-11]")
    assert dropped_statements(plain, dropped) == ["Lives in Berlin."]
    kept = plain.replace(
        "- Lives in Berlin.",
        "- Lives in Berlin. [valid_to:: 2026-11]\n- Lives in Paris [valid_from:: 2026-11]",
    )
    assert dropped_statements(plain, kept) == []


def test_an_edit_without_validity_may_rewrite_lines_as_before() -> None:
    plain = "# Home\n\nLikes tea.\n"
    assert dropped_statements(plain, "# Home\n\nLikes green tea.\n") == []


def test_changing_a_superseded_statements_end_is_refused() -> None:
    moved = SUPERSEDED.replace("[valid_to:: 2026-11-20]", "[valid_to:: 2025-01]")
    assert dropped_statements(SUPERSEDED, moved) == [
        "- Lives in Berlin [valid_from:: 2021-03] [valid_to:: 2026-11-20]"
    ]


def test_problems_find_contradictions_and_overlaps() -> None:
    assert list(problems(SUPERSEDED)) == []
    backwards = "- A [valid_from:: 2024] [valid_to:: 2023-05]\n- B [valid_from:: someday]\n"
    assert [kind for kind, _ in problems(backwards)] == ["contradictory_validity", "contradictory_validity"]
    overlap = "- A [valid_from:: 2022] [valid_to:: 2024-06]\n- B [valid_from:: 2024-01]\n"
    assert list(problems(overlap)) == [
        ("overlapping_validity", "line 2 starts 2024-01, before line 1 ends 2024-06")
    ]

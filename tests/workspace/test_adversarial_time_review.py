"""Adversarial review of time (docs/spec.md §17): what a resolved date, a validity field or `as_of`
must never get wrong, and the bytes `annotate_dates` leaves on disk."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest
from tests.pipelines.dream_support import put
from tests.pipelines.port_jobs import MakePortApp, port_app_fixture  # noqa: F401  (the fixture)

from reme.index.as_of import mark, node_validity
from reme.index.search import Hit
from reme.pipelines.port import FileText
from reme.workspace.relative_dates import annotate
from reme.workspace.validity import dropped_statements, problems, statements

MONDAY = date(2023, 5, 8)
RESOLUTION = re.compile(r" \(\d{4}(?:-\d{2}(?:-\d{2})?)?(?:/\d{4}(?:-\d{2}(?:-\d{2})?)?)?\)")


@pytest.mark.parametrize(
    "ref,text",
    [
        (date(1, 1, 1), "yesterday, last week, last month, 去年"),
        (date(1, 1, 3), "last year, two years ago, 前年"),
        (date(9999, 12, 31), "tomorrow, next week, next month, next year, 明年, 下个月"),
    ],
)
def test_a_day_past_the_ends_of_the_calendar_is_not_written(ref: date, text: str) -> None:
    """`tomorrow` on 9999-12-31 or `last year` in year 1 has no ISO date: nothing is written, no crash."""
    assert annotate(text, ref) == text


async def test_annotate_dates_on_the_first_day_of_the_calendar_fails_nothing(
    tmp_path: Path, make_port_app: MakePortApp
) -> None:
    note = put(tmp_path / "ws", "notes/old.md", "Yesterday we met.\n")
    response = await make_port_app().run("annotate_dates", path="notes/old.md", date="0001-01-01")
    assert response.success, response.answer
    assert note.read_text() == "Yesterday we met.\n"


@pytest.mark.parametrize(
    "text,expected",
    [
        ("上上个月", "上上个月 (2023-03)"),
        ("下下个月", "下下个月 (2023-07)"),
        ("大前年", "大前年 (2020)"),
        ("大后年", "大后年 (2026)"),
    ],
)
def test_chinese_two_and_three_steps_away_are_not_read_as_one(text: str, expected: str) -> None:
    assert annotate(text, MONDAY) == expected


@pytest.mark.parametrize(
    "text", ["1.5 years ago", "It was 2.5 weeks ago.", "1 1/2 years ago", "1.5年前", "一点五年前"]
)
def test_a_fraction_is_not_read_as_its_last_digit(text: str) -> None:
    assert annotate(text, MONDAY) == text


@pytest.mark.parametrize(
    "text",
    [
        "下周一起去吧",
        "这周一定要完成",
        "上周一直在下雨",
        "下周三天都在出差",
        "这周天气很好",
        "下周日程安排",
        "这周天天加班",
    ],
)
def test_a_chinese_word_after_a_week_is_no_weekday(text: str) -> None:
    """下周一起 is "together next week", not "next Monday": no date, and the word is not split."""
    assert annotate(text, MONDAY) == text


def test_weekdays_before_a_time_of_day_still_resolve() -> None:
    assert annotate("下周三下午开会，上周五晚上吃饭。", MONDAY) == (
        "下周三 (2023-05-17)下午开会，上周五 (2023-05-05)晚上吃饭。"
    )


@pytest.mark.parametrize(
    "text",
    [
        "see notes/yesterday.md",
        "open today.txt",
        "#today list",
        "ref ^yesterday",
        "@today bot",
        "a/tomorrow/b",
    ],
)
def test_paths_file_names_tags_and_block_ids_keep_their_words(text: str) -> None:
    assert annotate(text, MONDAY) == text


def test_a_longer_fence_showing_a_shorter_one_stays_code() -> None:
    text = "````markdown\n```\nrun it yesterday\n```\n````\nYesterday we met.\n```\nx\n```py\ntomorrow\n```\n"
    assert annotate(text, MONDAY) == text.replace("Yesterday we", "Yesterday (2023-05-07) we")


def test_validity_inside_a_longer_fence_is_code_and_after_it_counts() -> None:
    body = (
        "````markdown\n```\n- example [valid_to:: 2020]\n```\n````\n"
        "- The user lives in Berlin [valid_from:: 2021] [valid_to:: 2024]\n"
    )
    found = statements(body)
    assert [(s.line, s.claim) for s in found] == [(6, "The user lives in Berlin")]
    # so dropping the real statement is refused, as §17.2 requires
    new = "````markdown\n```\n- example [valid_to:: 2020]\n```\n````\n- The user lives in Paris [valid_from:: 2024]\n"
    assert dropped_statements(body, new) == [
        "- The user lives in Berlin [valid_from:: 2021] [valid_to:: 2024]"
    ]


@pytest.mark.parametrize(
    "line",
    [
        "- Lives in Berlin [valid_from:: 2021] `[valid_to:: 2024]`",
        "- Lives in Berlin [valid_from:: 2021] <!-- [valid_to:: 2024] -->",
        "- Lives in Berlin [valid_from:: 2021] \\[valid_to:: 2024\\]",
        "- Lives in Berlin [valid_from:: 2021] [[valid_to:: 2024]]",
    ],
)
def test_a_field_in_code_a_comment_an_escape_or_a_link_does_not_end_a_statement(line: str) -> None:
    (found,) = statements(line)
    assert (found.valid_from, found.valid_to) == ("2021", None)
    assert found.valid_on(date(2025, 1, 1))


def test_a_field_given_twice_with_different_values_is_a_contradiction_not_a_silent_pick() -> None:
    body = "- Lives in Berlin [valid_from:: 2021] [valid_to:: 2020] [valid_to:: 2024]\n"
    assert [kind for kind, _ in problems(body)] == ["contradictory_validity"]
    (found,) = statements(body)
    assert "valid_to given 2 times" in (found.error() or "")


def test_a_statement_not_started_yet_is_not_called_superseded() -> None:
    body = "- Lives in Berlin [valid_from:: 2021] [valid_to:: 2024]\n- Moves to Paris [valid_from:: 2027]\n"
    now = node_validity(body, date(2025, 6, 1), explicit=False)
    assert [s["statement"] for s in now["superseded"]] == ["Lives in Berlin"]
    assert now["statements"] == [] and now["left_out"] == 1


def test_a_passage_of_a_future_range_is_not_valid_then_rather_than_superseded() -> None:
    text = "- Works at Acme [valid_from:: 2027-01] [valid_to:: 2028-01]\n"
    (marked,) = mark([Hit("digest/job.md", 1, 1, 1.0, text, None, None)], date(2025, 6, 1), explicit=True)
    assert marked.validity["valid"] is False and marked.validity["reason"] == "not valid then"


async def test_annotate_dates_only_adds_resolutions_and_a_rerun_changes_nothing(
    tmp_path: Path, make_port_app: MakePortApp
) -> None:
    """The bytes on disk: BOM, CRLF, front matter, code and links as they were; only ` (…)` added."""
    ws = tmp_path / "ws"
    original = (
        "\ufeff---\r\ndate: 2024-03-14T23:30:00+09:00\r\ntitle: yesterday\r\n---\r\n"
        "Yesterday we met; 下周一起去. See notes/yesterday.md and [[daily/yesterday]].\r\n"
        "````\r\n```\r\ntomorrow\r\n```\r\n````\r\nLast week (2024-03-04/2024-03-10) was wet; next month we go.\r\n"
    )
    note = ws / "notes/trip.md"
    note.parent.mkdir(parents=True)
    note.write_bytes(original.encode("utf-8"))
    app = make_port_app()

    done = await app.run("annotate_dates", path="notes")
    assert done.success, done.answer
    after = note.read_bytes().decode("utf-8")
    assert after == original.replace("Yesterday we", "Yesterday (2024-03-13) we").replace(
        "next month we", "next month (2024-04) we"
    )
    assert RESOLUTION.sub("", after) == RESOLUTION.sub("", original)  # nothing but resolutions added

    again = await app.run("annotate_dates", path="notes")
    assert again.success and again.metadata["changed"] == []
    assert note.read_bytes().decode("utf-8") == after


async def test_a_note_edited_during_the_run_is_not_overwritten(
    tmp_path: Path, make_port_app: MakePortApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    note = put(ws, "daily/2023-05-08/walk.md", "Yesterday we walked.\n")
    app = make_port_app()
    load = app.port.load

    async def load_then_edit(path: str) -> FileText | None:
        read = await load(path)
        note.write_text("Yesterday we walked. Edited meanwhile.\n")
        return read

    monkeypatch.setattr(app.port, "load", load_then_edit)
    response = await app.run("annotate_dates", path="daily")
    assert not response.success and "changed since it was read" in response.answer
    assert note.read_text() == "Yesterday we walked. Edited meanwhile.\n"
    assert not (ws / "journal").exists()

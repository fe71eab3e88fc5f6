"""Message normalisation, transcript merging, card names and relative dates as plain functions."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

import pytest

from reme.pipelines.capture.messages import normalise_messages, parse_time, strip_base64
from reme.pipelines.capture.transcript_merge import merge, parse_transcript
from reme.pipelines.memory.card_names import slugify
from reme.workspace.relative_dates import annotate as annotate_relative_dates
from reme.workspace.transcript import render_records as render

UTC = ZoneInfo("UTC")
SHANGHAI = ZoneInfo("Asia/Shanghai")


def test_anthropic_blocks_keep_text_and_note_tool_use() -> None:
    [record] = normalise_messages(
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "private reasoning"},
                    {"type": "text", "text": "Checking the weather."},
                    {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Kyoto"}},
                ],
            }
        ],
        UTC,
    )
    assert record["content"] == 'Checking the weather.\n[tool call weather: {"city": "Kyoto"}]'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-06-01T23:30:00Z", "2026-06-02T07:30:00+08:00"),
        ("2026-06-01 23:30:00", "2026-06-01T23:30:00+08:00"),  # naive: app timezone
        (1780356600, "2026-06-02T07:30:00+08:00"),  # epoch seconds
        (1780356600000, "2026-06-02T07:30:00+08:00"),  # epoch milliseconds
        ("1780356600", "2026-06-02T07:30:00+08:00"),
    ],
)
def test_timestamps_are_read_in_every_form(value: object, expected: str) -> None:
    assert parse_time(value, SHANGHAI).astimezone(SHANGHAI).isoformat() == expected


@pytest.mark.parametrize("key", ["created_at", "timestamp", "time_created", "createdAt", "created_time"])
def test_timestamp_aliases_on_the_message_and_in_metadata(key: str) -> None:
    top = normalise_messages([{"role": "user", "content": "x", key: "2026-06-01T08:00:00Z"}], UTC)
    nested = normalise_messages(
        [{"role": "user", "content": "x", "metadata": {key: "2026-06-01T08:00:00Z", "lang": "en"}}], UTC
    )
    assert top[0]["created_at"] == nested[0]["created_at"] == "2026-06-01T08:00:00+00:00"
    assert nested[0]["metadata"] == {"lang": "en"}


def test_invalid_timestamps_and_content_are_refused_with_the_message_index() -> None:
    with pytest.raises(ValueError, match=r"messages\[1\]: timestamp 'soon' is not ISO 8601"):
        normalise_messages(
            [{"role": "user", "content": "a"}, {"role": "user", "content": "b", "timestamp": "soon"}], UTC
        )
    with pytest.raises(ValueError, match=r"messages\[0\]: content must be a string"):
        normalise_messages([{"role": "user", "content": 42}], UTC)


def test_base64_is_stripped_everywhere_but_ordinary_text_is_kept() -> None:
    blob = "A" * 500
    assert strip_base64(f"see data:image/png;base64,{blob}= ok") == "see [base64 data removed] ok"
    assert strip_base64(f"raw {blob} end") == "raw [base64 data removed] end"
    assert (
        strip_base64("commit 3f2a9c1e and https://example.org/a/b")
        == "commit 3f2a9c1e and https://example.org/a/b"
    )
    [record] = normalise_messages(
        [{"role": "user", "content": "hi", "metadata": {"thumb": f"data:image/jpeg;base64,{blob}"}}], UTC
    )
    assert record["metadata"] == {"thumb": "[base64 data removed]"}


def test_repeated_identical_messages_keep_distinct_stable_ids() -> None:
    messages = [{"role": "user", "content": "ok"}, {"role": "user", "content": "ok"}]
    first = [r["id"] for r in normalise_messages(messages, UTC)]
    again = [r["id"] for r in normalise_messages([*messages, {"role": "user", "content": "ok"}], UTC)]
    assert len(set(first)) == 2 and again[:2] == first


def test_merge_replaces_by_id_and_orders_by_time_keeping_undated_messages_in_place() -> None:
    stored = [
        {
            "id": "a",
            "role": "user",
            "name": None,
            "content": "first",
            "created_at": "2026-06-01T08:00:00+00:00",
        },
        {"id": "b", "role": "assistant", "name": None, "content": "undated reply", "created_at": None},
        {
            "id": "c",
            "role": "user",
            "name": None,
            "content": "third",
            "created_at": "2026-06-01T10:00:00+00:00",
        },
    ]
    incoming = [
        {
            "id": "d",
            "role": "user",
            "name": None,
            "content": "second",
            "created_at": "2026-06-01T09:00:00+08:00",
        },
        {
            "id": "a",
            "role": "user",
            "name": None,
            "content": "first (edited)",
            "created_at": "2026-06-01T08:00:00+00:00",
        },
    ]
    merged = merge(stored, incoming, UTC)
    assert [r["content"] for r in merged] == ["second", "first (edited)", "undated reply", "third"]
    assert parse_transcript(render(merged), UTC) == merged


def test_reme_0_4_block_content_is_read_as_text() -> None:
    line = '{"id": "x", "role": "user", "content": [{"type": "text", "text": "hello"}], "created_at": null}\n'
    assert parse_transcript(line, UTC)[0]["content"] == "hello"
    with pytest.raises(ValueError, match="line 1 is not JSON"):
        parse_transcript("{oops\n", UTC)


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Kyoto trip: plan / budget", "kyoto-trip-plan-budget"),
        ("光伏 产业链 研究", "光伏-产业链-研究"),
        ("  ..CON..  ", ""),
        ("a" * 200, "a" * 80),
        ("What? *Really*", "what-really"),
        ("Con. Edison bill", ""),  # `con.` is a Windows device name: the card keeps its name
        ("a\x7fb", "a-b"),
    ],
)
def test_slugify_makes_safe_readable_names(title: str, slug: str) -> None:
    assert slugify(title) == slug


def test_relative_day_words_are_pinned_once() -> None:
    text = "Yesterday's call moved to tomorrow; tomorrow (2026-06-03) stays. 后天 too."
    assert annotate_relative_dates(text, date(2026, 6, 2)) == (
        "Yesterday's call moved to tomorrow (2026-06-03); tomorrow (2026-06-03) stays. 后天 (2026-06-04) too."
    )


def test_generated_ids_do_not_depend_on_the_app_timezone() -> None:
    messages = [
        {"role": "user", "content": "ok", "created_at": "2026-06-01T08:00:00Z"},
        {"role": "user", "content": "epoch", "timestamp": 1780356600},
    ]
    in_utc = [r["id"] for r in normalise_messages(messages, UTC)]
    in_shanghai = [r["id"] for r in normalise_messages(messages, SHANGHAI)]
    assert in_utc == in_shanghai


def test_stored_naive_and_reme_0_4_times_are_read_in_the_app_timezone() -> None:
    stored = (
        '{"id": "a", "role": "user", "content": "naive", "created_at": "2026-06-01T08:00:00"}\n'
        '{"id": "b", "role": "user", "content": "agentscope", "timestamp": "2026-06-01 07:00:00.000"}\n'
    )
    incoming = [
        {"id": "c", "role": "user", "content": "new", "created_at": "2026-06-01T08:30:00+08:00"},
    ]
    merged = merge(parse_transcript(stored, SHANGHAI), incoming, SHANGHAI)
    assert [(r["id"], r["created_at"]) for r in merged] == [
        ("b", "2026-06-01T07:00:00+08:00"),
        ("a", "2026-06-01T08:00:00+08:00"),
        ("c", "2026-06-01T08:30:00+08:00"),
    ]

"""Ordering of search hits: the pieces of one long line yield to other text; the file-level stage."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from reme.index.diversify import piece_relative
from reme.index.grouping import Grouping, group, order_hits
from reme.index.speakers import users_first


@dataclass(frozen=True)
class H:
    path: str
    start_line: int
    end_line: int
    score: float


def test_notes_without_repeated_spans_keep_score_order() -> None:
    hits = [H("daily/a.md", 1, 3, 9.0), H("daily/a.md", 4, 6, 8.0), H("daily/b.md", 1, 2, 7.0)]
    assert order_hits(hits) == hits
    assert order_hits([]) == []
    assert piece_relative(hits) == [1.0, 8.0 / 9.0, 7.0 / 9.0]


def test_further_pieces_of_one_line_yield_to_other_text() -> None:
    pieces = [H("notes/long.md", 7, 7, score) for score in (10.0, 9.5, 9.0)]
    other = H("notes/short.md", 2, 4, 6.0)
    result = order_hits([*pieces, other])
    assert result[0] == pieces[0]
    assert result[1] == other  # 6.0 beats 9.5 × 0.5
    assert result[2:] == pieces[1:]
    assert [h.score for h in result] == [10.0, 6.0, 9.5, 9.0]  # scores are reported unchanged
    assert piece_relative(pieces, 0.5) == [1.0, 0.95 * 0.5, 0.9 * 0.25]


def test_transcripts_are_ordered_by_their_hits_alone() -> None:
    """The session boost (a transcript's first hit + 0.1 × its next matches) did not hold out of
    sample (benchmarks/README.md, "Leave-one-out"): a session's own best hit decides."""
    lone = H("session/dialog/a.jsonl", 3, 3, 10.0)
    many = [H("session/dialog/b.jsonl", line, line, score) for line, score in ((1, 9.6), (5, 8.0), (9, 8.0))]
    assert order_hits([lone, *many]) == [lone, *many]


def test_scale_free_and_zero_scores() -> None:
    small = [H("session/dialog/a.jsonl", 1, 1, 0.010), H("session/dialog/a.jsonl", 1, 1, 0.0099)]
    small += [H("session/dialog/b.jsonl", n, n, 0.008) for n in (2, 3)]
    large = [H(h.path, h.start_line, h.end_line, h.score * 1000) for h in small]
    assert [(h.path, h.start_line, h.score) for h in order_hits(small)][1] == (
        "session/dialog/b.jsonl",
        2,
        0.008,
    )
    assert [(h.path, h.start_line) for h in order_hits(small)] == [
        (h.path, h.start_line) for h in order_hits(large)
    ]
    zeros = [H("a.md", 1, 1, 0.0), H("a.md", 1, 1, 0.0)]
    assert order_hits(zeros) == zeros


# The user's lines first within a session (reme.index.speakers): sessions keep their places.


def test_a_users_line_takes_its_sessions_first_place_and_sessions_keep_theirs() -> None:
    reply = H("session/dialog/a.jsonl", 4, 4, 10.0)
    other = H("session/dialog/b.jsonl", 2, 2, 9.0)
    said = H("session/dialog/a.jsonl", 3, 3, 6.0)
    note = H("daily/2026-06-01/x.md", 1, 3, 5.0)
    hits = [reply, other, said, note]
    roles = ["assistant", "user", "user", ""]
    result = order_hits(hits, roles)
    assert result == [said, other, reply, note]  # 6.0 > 10.0 × 0.2: a's place 1 goes to the user's line
    assert [h.path for h in result] == [h.path for h in hits]  # every file keeps its places
    assert [h.score for h in result] == [6.0, 9.0, 10.0, 5.0]  # scores are reported unchanged


def test_a_weak_user_line_stays_behind_a_strong_reply() -> None:
    reply = H("session/dialog/a.jsonl", 4, 4, 10.0)
    said = H("session/dialog/a.jsonl", 1, 1, 1.0)  # 1.0 < 10.0 × 0.2
    assert users_first([reply, said], [1.0, 0.1], ["assistant", "user"], 0.2) == [reply, said]
    assert users_first([reply, said], [1.0, 0.1], ["assistant", "user"], 0.0) == [said, reply]


def test_without_roles_or_replies_the_order_is_fusions() -> None:
    hits = [H("session/dialog/a.jsonl", 4, 4, 10.0), H("session/dialog/a.jsonl", 1, 1, 6.0)]
    assert order_hits(hits) == hits
    assert order_hits(hits, ["user", "user"]) == hits
    assert order_hits(hits, ["", ""]) == hits  # mixed chunks have no role and keep their score
    assert order_hits([], []) == []


def test_pieces_of_a_long_reply_still_yield_after_the_users_line() -> None:
    pieces = [H("session/dialog/a.jsonl", 2, 2, s) for s in (10.0, 9.8, 9.6)]
    said = H("session/dialog/a.jsonl", 1, 1, 5.0)
    other = H("session/dialog/b.jsonl", 1, 1, 7.0)
    result = order_hits([*pieces, said, other], ["assistant"] * 3 + ["user", "user"])
    # fused: piece 1.0, other 0.7, said 0.5, piece 0.98 × 0.5, piece 0.96 × 0.25; a's places refilled
    assert result == [said, other, *pieces]


def test_a_reply_is_lowered_whatever_the_sign_of_its_score() -> None:
    reply = H("session/dialog/a.jsonl", 4, 4, -1.0)
    said = H("session/dialog/a.jsonl", 1, 1, -1.5)
    # -0.5 lowered to -0.9 falls below the user's -0.75 (× 0.2 would have raised it to -0.1)
    assert users_first([reply, said], [-0.5, -0.75], ["assistant", "user"], 0.2) == [said, reply]
    assert users_first([said, reply], [-0.75, -0.5], ["user", "assistant"], 0.2) == [said, reply]


def test_roles_must_match_the_hits() -> None:
    hits = [H("session/dialog/a.jsonl", 1, 1, 1.0), H("session/dialog/a.jsonl", 2, 2, 0.5)]
    with pytest.raises(ValueError, match="one role per hit"):
        order_hits(hits, ["assistant"])
    with pytest.raises(ValueError, match="one relative score and one role per hit"):
        users_first(hits, [1.0, 0.5], ["assistant", "user", "user"])


# Ranking above the chunk (reme.index.grouping): measured, off by default in the search job.


def ranked(hits: list[H], grouping: Grouping) -> list[H]:
    return group(hits, piece_relative(hits, 0.5), grouping)


def test_neutral_grouping_keeps_score_order_and_ties() -> None:
    hits = [H("a.md", 1, 1, 9.0), H("b.md", 1, 1, 9.0), H("a.md", 5, 5, 8.0), H("c.md", 2, 2, 1.0)]
    assert ranked(hits, Grouping()) == hits
    assert ranked([], Grouping(weight=0.2, per_file=3)) == []


def test_a_file_with_several_strong_passages_outranks_a_single_match() -> None:
    lone = H("session/a.jsonl", 3, 3, 10.0)
    many = [H("session/b.jsonl", line, line, score) for line, score in ((1, 9.6), (5, 8.0), (9, 8.0))]
    result = ranked([lone, *many], Grouping(weight=0.1, depth=5, threshold=0.5))
    assert result[0] == many[0]  # 0.96 + 0.1 × (0.8 + 0.8) > 1.0
    assert result[1] == lone
    assert result[2:] == many[1:]  # later hits keep their own score


def test_weak_further_passages_do_not_count() -> None:
    lone = H("a.md", 3, 3, 10.0)
    weak = [H("b.md", line, line, score) for line, score in ((1, 9.6), (5, 4.0), (9, 4.0), (11, 4.0))]
    result = ranked([lone, *weak], Grouping(weight=0.3, depth=5, threshold=0.5))
    assert result[0] == lone  # 0.4 < 0.5: a long file's many weak matches gain nothing


def test_depth_caps_the_credit() -> None:
    lone = H("a.md", 1, 1, 10.0)
    many = [H("b.md", line, line, score) for line, score in ((1, 9.0), (2, 8.0), (3, 8.0), (4, 8.0))]
    deep = ranked([lone, *many], Grouping(weight=0.05, depth=5, threshold=0.5))
    shallow = ranked([lone, *many], Grouping(weight=0.05, depth=2, threshold=0.5))
    assert deep[0] == many[0]  # 0.9 + 0.05 × 2.4 = 1.02
    assert shallow[0] == lone  # 0.9 + 0.05 × 0.8 = 0.94


def test_pieces_of_one_line_count_once_for_their_file() -> None:
    lone = H("a.md", 1, 1, 10.0)
    pieces = [H("b.md", 7, 7, score) for score in (9.6, 9.5, 9.4)]
    result = ranked([lone, *pieces], Grouping(weight=0.2, depth=5, threshold=0.0))
    assert result[0] == lone


def test_strong_hits_of_a_file_are_read_together_in_line_order() -> None:
    first = H("daily/a.md", 20, 22, 10.0)
    other = H("daily/b.md", 1, 3, 9.0)
    earlier = H("daily/a.md", 4, 6, 8.0)
    weak = H("daily/a.md", 30, 31, 2.0)
    result = ranked([first, other, earlier, weak], Grouping(threshold=0.5, per_file=3))
    assert result == [earlier, first, other, weak]  # a's strong hits in reading order; the weak one stays


def test_scale_free() -> None:
    hits = [H("a.md", 1, 1, 0.01), H("b.md", 1, 1, 0.0096), H("b.md", 2, 2, 0.008)]
    large = [H(h.path, h.start_line, h.end_line, h.score * 1000) for h in hits]
    setting = Grouping(weight=0.1, depth=3, threshold=0.5, per_file=2)
    assert [(h.path, h.start_line) for h in ranked(hits, setting)] == [
        (h.path, h.start_line) for h in ranked(large, setting)
    ]


@pytest.mark.parametrize("settings", [{"weight": -0.1}, {"depth": 0}, {"per_file": 0}, {"threshold": 1.5}])
def test_bad_settings_are_refused(settings: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="grouping needs"):
        Grouping(**settings)


def _message(index: int, role: str, content: str) -> str:
    record = {"id": f"m{index}", "role": role, "name": role, "content": content}
    return json.dumps({**record, "created_at": f"2026-06-0{index % 9 + 1}T10:00:00"})


async def test_search_job_shows_the_user_message_before_more_pieces_of_a_long_reply(app) -> None:
    root: Path = app.workspace_dir
    reply = " ".join(f"Sourdough starter tip {n}: feed the starter flour and water daily." for n in range(40))
    lines = [
        _message(0, "user", "My sourdough starter smells of acetone, what should I do?"),
        _message(1, "assistant", reply),
    ]
    target = root / "session/dialog/bread.jsonl"
    target.parent.mkdir(parents=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    await app.run("reindex")
    response = await app.run("search", query="sourdough starter", limit=3, expand_links=False)
    assert response.success, response.answer
    rows = response.metadata["results"]
    spans = [(row["start_line"], row["end_line"]) for row in rows]
    assert len(rows) == 3
    assert (1, 1) in spans  # without diversification three pieces of line 2 fill the top 3
    assert spans.count((2, 2)) == 2

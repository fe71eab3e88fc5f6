"""Ranking above the chunk: file scores from strong passages, a file's strong hits read together."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from reme.index.diversify import piece_relative
from reme.index.grouping import Grouping, group


@dataclass(frozen=True)
class H:
    path: str
    start_line: int
    end_line: int
    score: float


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

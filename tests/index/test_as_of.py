"""`as_of` marks on search hits and node summaries (docs/spec.md §17.3), without the app around them."""

from __future__ import annotations

from datetime import date

from reme.index.as_of import mark, node_validity, render_marks
from reme.index.search import Hit

OLD = "- Prefers vim [valid_from:: 2019] [valid_to:: 2024-02]"
NEW = "- Prefers helix [valid_from:: 2024-02]"


def hit(path: str, text: str, start: int = 1) -> Hit:
    return Hit(path, start, start + text.count("\n"), 1.0, text, None, None)


def test_text_without_validity_keeps_its_place_and_gets_no_marks() -> None:
    hits = [hit("daily/2026-01-01/a.md", "plain"), hit("digest/wiki/b.md", "also plain")]
    marked = mark(hits, date(2026, 1, 1), explicit=False)
    assert [m.hit for m in marked] == hits and all(m.validity == {} for m in marked)
    assert render_marks(marked, date(2026, 1, 1), False) == ""


def test_stale_passages_go_below_marked_with_their_range() -> None:
    hits = [hit("digest/a.md", OLD, 3), hit("digest/b.md", NEW), hit("digest/c.md", "plain")]
    now = mark(hits, date(2026, 1, 1), explicit=False)
    assert [m.hit.path for m in now] == ["digest/b.md", "digest/c.md", "digest/a.md"]
    assert now[-1].to_dict() | {} == {
        **hits[0].to_dict(),
        "valid": False,
        "valid_range": "2019/2024-02",
        "reason": "superseded",
        "not_valid_lines": [3],
    }
    past = mark(hits, date(2023, 1, 1), explicit=True)
    assert [m.hit.path for m in past] == ["digest/a.md", "digest/c.md", "digest/b.md"]
    assert past[-1].validity["reason"] == "not valid then" and past[-1].validity["valid_range"] == "2024-02/"
    assert "[3] digest/b.md: not valid on 2023-01-01 (not valid then; valid 2024-02/)" in render_marks(
        past, date(2023, 1, 1), True
    )


def test_a_passage_with_a_valid_statement_stays_and_lists_the_stale_lines() -> None:
    [both] = mark([hit("digest/a.md", f"{OLD}\n{NEW}", 5)], date(2026, 1, 1), explicit=False)
    assert both.validity == {"valid": True, "not_valid_lines": [5]}


def test_notes_written_after_as_of_are_not_valid_then() -> None:
    hits = [hit("daily/2026-06-02/late.md", "moved"), hit("daily/2026-05-01/early.md", "moved")]
    marked = mark(hits, date(2026, 6, 1), explicit=True)
    assert [m.hit.path for m in marked] == ["daily/2026-05-01/early.md", "daily/2026-06-02/late.md"]
    assert marked[-1].validity == {"valid": False, "valid_range": "2026-06-02/", "reason": "written later"}
    assert mark(hits, date(2026, 6, 1), explicit=False)[0].hit.path == "daily/2026-06-02/late.md"


def test_node_summaries_keep_what_held_on_the_day() -> None:
    body = f"# Editor\n\n{OLD}\n{NEW}\n"
    assert node_validity("# plain\n", date(2026, 1, 1), explicit=True) == {}
    then = node_validity(body, date(2023, 1, 1), explicit=True)
    assert [s["statement"] for s in then["statements"]] == ["Prefers vim"] and then["left_out"] == 1
    now = node_validity(body, date(2026, 1, 1), explicit=False)
    assert [s["statement"] for s in now["statements"]] == ["Prefers helix"]
    assert now["superseded"] == [{"statement": "Prefers vim", "valid_range": "2019/2024-02", "line": 3}]

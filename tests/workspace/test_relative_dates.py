"""The relative date annotator (docs/spec.md §17.1) against a hand-labelled set, plus its protected regions."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from reme.workspace.relative_dates import annotate, find, unresolved

FIXTURE = Path(__file__).parent / "data" / "relative_dates.txt"


def labelled() -> list[tuple[date, str, str | None]]:
    """(reference day, text, expected `expr (value)` or None) for each labelled line."""
    cases = []
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        ref, text, expected = (part.strip() for part in line.split(" | "))
        cases.append((date.fromisoformat(ref), text, None if expected == "-" else expected))
    return cases


def written(text: str, ref: date) -> list[str]:
    """The annotations `annotate` adds to `text`, as `expr (value)`."""
    return [
        f"{f.text} ({f.value})" for f in find(text, ref) if f.value and f"{f.text} ({f.value})" not in text
    ]


def test_labelled_set_precision_and_recall() -> None:
    cases = labelled()
    assert len(cases) >= 200
    assert sum(expected is None for _, _, expected in cases) >= 50  # ambiguous ones must stay untouched
    produced = correct = expected_total = 0
    wrong = []
    for ref, text, expected in cases:
        made = written(text, ref)
        produced += len(made)
        expected_total += expected is not None
        hits = [m for m in made if m == expected]
        correct += len(hits)
        wrong += [(ref.isoformat(), text, m) for m in made if m != expected]
        if made == ([expected] if expected else []):
            want = text.replace(expected.split(" (")[0], expected, 1) if expected else text
            assert annotate(text, ref) == want
    precision = correct / produced
    recall = correct / expected_total
    print(f"relative dates: {len(cases)} cases, precision {precision:.3f}, recall {recall:.3f}")
    assert precision >= 0.98, wrong
    assert recall >= 0.9


@pytest.mark.parametrize("ref,text,expected", labelled()[::7])
def test_idempotent(ref: date, text: str, expected: str | None) -> None:
    once = annotate(text, ref)
    assert annotate(once, ref) == once
    if expected is not None:  # an annotated expression keeps its resolution under any later reference
        assert annotate(once, date(2030, 1, 1)) == once


def test_protected_regions_stay_as_written() -> None:
    ref = date(2023, 5, 8)
    text = (
        "---\nwhen: yesterday\n---\n"
        "Yesterday we met.\n\n```\nrun it tomorrow\n```\n"
        "Inline `last week` and [[daily/yesterday]] and [x](https://a.b/today) and <!-- today -->.\n"
        "~~~python\nprint('next month')\n~~~\nnext month we go.\n"
    )
    out = annotate(text, ref)
    assert out == text.replace("Yesterday we", "Yesterday (2023-05-07) we").replace(
        "next month we", "next month (2023-06) we"
    )


def test_unresolved_lists_what_is_left() -> None:
    text = "Next Friday (2024-01-05) we go; last week we met; next Friday too; `yesterday`."
    assert list(unresolved(text)) == ["last week", "next Friday"]


def test_huge_text_is_left_alone() -> None:
    text = "yesterday " * 150_000
    assert annotate(text, date(2023, 5, 8)) == text


@pytest.mark.parametrize("unit", ["`", "[[", "](x ", "<!-- ", "<a:", "```x\n", "http://", "a``b`c "])
def test_unclosed_openers_cost_linear_time(unit: str) -> None:
    """Runs in well under a second each (a quadratic pattern took minutes on these)."""
    text = "a " + unit * (60_000 // len(unit)) + " yesterday"
    out = annotate(text, date(2023, 5, 8))
    assert out in (text, text + " (2023-05-07)") and annotate(out, date(2023, 5, 8)) == out


def test_code_spans_close_on_a_run_of_the_same_length() -> None:
    text = "run `yesterday` and ``a ` yesterday`` then yesterday"
    assert annotate(text, date(2023, 5, 8)) == text + " (2023-05-07)"

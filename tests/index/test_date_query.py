"""Dates named in a query also asked in ISO form (what resolved dates look like in notes)."""

from __future__ import annotations

import pytest

from reme.index.date_query import iso_dates, with_iso_dates


@pytest.mark.parametrize(
    "query,expected",
    [
        ("When was it, May 7 2023?", ["2023-05-07"]),
        ("7 May 2023", ["2023-05-07"]),
        ("on the 7th of May, 2023", ["2023-05-07"]),
        ("Sept. 21st 2024 and June 2023", ["2024-09-21", "2023-06"]),
        ("2023年5月7日发生了什么", ["2023-05-07"]),
        ("2023年5月的事", ["2023-05"]),
        ("Feb 30 2023", []),
        ("what do you like", []),
    ],
)
def test_iso_dates(query: str, expected: list[str]) -> None:
    assert iso_dates(query) == expected


def test_a_query_without_dates_is_unchanged() -> None:
    assert with_iso_dates("support group") == "support group"
    assert with_iso_dates("May 7 2023 2023-05-07") == "May 7 2023 2023-05-07"

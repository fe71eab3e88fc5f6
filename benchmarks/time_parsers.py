"""Relative date parsers on the hand-labelled set (tests/workspace/data/relative_dates.txt).

Compares reme's rules (`reme.workspace.relative_dates`) with `dateparser` (search_dates) and
Microsoft's `recognizers-text-date-time`, on English and Chinese: precision (an output counts as
correct when it overlaps the labelled expression and its date or range lies inside the labelled
period: lenient to parsers that only return a day), recall, and time per sentence. The two
outside parsers are not reme dependencies; install them in a scratch environment:

    python -m venv /tmp/parsers && /tmp/parsers/bin/pip install dateparser recognizers-text-date-time 'emoji<1'
    PYTHONPATH=src /tmp/parsers/bin/python benchmarks/time_parsers.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path

from reme.workspace.relative_dates import find

FIXTURE = Path(__file__).parents[1] / "tests" / "workspace" / "data" / "relative_dates.txt"
Output = tuple[str, date, date]  # matched text, first day, last day
Parser = Callable[[str, date, str], list[Output]]


def cases() -> list[tuple[date, str, str | None, str]]:
    out = []
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            ref, text, expected = (part.strip() for part in line.split(" | "))
            lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"
            out.append((date.fromisoformat(ref), text, None if expected == "-" else expected, lang))
    return out


def period(value: str) -> tuple[date, date]:
    """First and last day of an annotation value: a day, `start/end`, a month or a year."""
    if "/" in value:
        start, end = value.split("/")
        return period(start)[0], period(end)[1]
    if len(value) == 4:
        return date(int(value), 1, 1), date(int(value), 12, 31)
    if len(value) == 7:
        first = date(int(value[:4]), int(value[5:]), 1)
        return first, (first + timedelta(days=32)).replace(day=1) - timedelta(days=1)
    day = date.fromisoformat(value)
    return day, day


def reme_rules(text: str, ref: date, lang: str) -> list[Output]:
    return [
        (f.text, *period(f.value)) for f in find(text, ref) if f.value and f"{f.text} ({f.value})" not in text
    ]


def dateparser_search(text: str, ref: date, lang: str) -> list[Output]:
    from dateparser.search import search_dates

    base = datetime(ref.year, ref.month, ref.day, 12)
    found = search_dates(text, languages=[lang], settings={"RELATIVE_BASE": base}) or []
    return [(span, moment.date(), moment.date()) for span, moment in found]


_MODELS: dict[str, object] = {}


def recognizers(text: str, ref: date, lang: str) -> list[Output]:
    from recognizers_date_time import DateTimeRecognizer
    from recognizers_text import Culture

    culture = Culture.Chinese if lang == "zh" else Culture.English
    model = _MODELS.setdefault(lang, DateTimeRecognizer(culture).get_datetime_model())
    out = []
    for result in model.parse(text, datetime(ref.year, ref.month, ref.day, 12)):  # type: ignore[attr-defined]
        values = (result.resolution or {}).get("values", [])
        if len({str(v) for v in values}) != 1:
            continue  # several readings offered: the parser itself says ambiguous
        value = values[0]
        try:
            if "value" in value:
                day = date.fromisoformat(value["value"][:10])
                out.append((result.text, day, day))
            elif "start" in value and "end" in value:
                out.append(
                    (
                        result.text,
                        date.fromisoformat(value["start"][:10]),
                        date.fromisoformat(value["end"][:10]) - timedelta(days=1),
                    )
                )
        except ValueError:
            continue
    return out


def score(parser: Parser, data: list[tuple[date, str, str | None, str]]) -> dict[str, float]:
    produced = correct = 0
    expected_total = sum(expected is not None for _, _, expected, _ in data)
    times = []
    for ref, text, expected, lang in data:
        started = time.perf_counter()
        outputs = parser(text, ref, lang)
        times.append((time.perf_counter() - started) * 1000)
        for span, first, last in outputs:
            if expected is None and any(ch.isdigit() for ch in span):
                continue  # an absolute date found on an untouched line is not a relative annotation
            produced += 1
            if expected is None:
                continue
            words, value = expected.rsplit(" (", 1)
            low, high = period(value.rstrip(")"))
            if (
                span.lower() in words.lower() or words.lower() in span.lower()
            ) and low <= first <= last <= high:
                correct += 1
    return {
        "produced": produced,
        "precision": correct / produced if produced else 0.0,
        "recall": correct / expected_total,
        "ms_median": statistics.median(times),
        "ms_p95": sorted(times)[int(len(times) * 0.95)],
    }


def main() -> None:
    data = cases()
    parsers: dict[str, Parser] = {"reme rules": reme_rules}
    for name, parser, module in (
        ("dateparser", dateparser_search, "dateparser"),
        ("recognizers-text", recognizers, "recognizers_date_time"),
    ):
        try:
            __import__(module)
            parsers[name] = parser
        except ImportError:
            print(f"({name} not installed: skipped)", file=sys.stderr)
    print(f"{len(data)} labelled sentences")
    print(
        f"{'parser':>18} {'lang':>4} {'cases':>5} {'out':>4} {'precision':>9} {'recall':>6} {'median ms':>9} {'p95 ms':>7}"
    )
    for name, parser in parsers.items():
        parser(data[0][1], data[0][0], data[0][3])  # warm-up: model loading is not per-sentence cost
        for lang in ("en", "zh"):
            part = [case for case in data if case[3] == lang]
            row = score(parser, part)
            print(
                f"{name:>18} {lang:>4} {len(part):5d} {row['produced']:4.0f} {row['precision']:9.3f} "
                f"{row['recall']:6.3f} {row['ms_median']:8.3f} {row['ms_p95']:7.3f}"
            )


if __name__ == "__main__":
    main()

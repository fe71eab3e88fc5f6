"""Relative date expressions resolved in code (docs/spec.md §17.1): `yesterday` → `yesterday (2023-05-07)`.

Rules of our own, English and Chinese, chosen over general date parsers because those guess where a
reading is ambiguous and are orders of magnitude slower (figures: benchmarks/time_annotate.py).
Each rule resolves at the precision the expression has: a day (`2023-05-07`), a week as an ISO
interval Monday–Sunday (`2023-04-24/2023-04-30`), a month (`2023-06`) or a year (`2021`). A rule
answers None where the words have two readings ("next Friday" on a Wednesday, "the last week of"),
and then nothing is written. Code spans, fenced code, link targets, URLs and front matter are never
touched; an expression already followed by its resolution is left alone, so annotating is
idempotent.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import MAXYEAR, MINYEAR, date, timedelta

from reme.workspace.fmsplit import split

MAX_TEXT_CHARS = 1_000_000  # one note; past this nothing is annotated (bounded work per write)
ANNOTATION = r"\d{4}(?:-\d{2}(?:-\d{2})?)?(?:/\d{4}(?:-\d{2}(?:-\d{2})?)?)?"
_ANNOTATED = re.compile(r"[ \t]*\(" + ANNOTATION + r"\)")


@dataclass(frozen=True)
class Found:
    """One relative expression at `text[start:end]`; `value` its resolution, None when ambiguous."""

    start: int
    end: int
    text: str
    value: str | None


Resolver = Callable[[re.Match[str], date, str], "str | None"]

# ---- calendar helpers -------------------------------------------------------------------------


def _day(d: date) -> str:
    return d.isoformat()


def _week(d: date, offset: int = 0) -> str:
    monday = d - timedelta(days=d.weekday()) + timedelta(weeks=offset)
    return f"{monday.isoformat()}/{(monday + timedelta(days=6)).isoformat()}"


def _weekend(d: date, offset: int) -> str:
    saturday = d - timedelta(days=d.weekday()) + timedelta(weeks=offset, days=5)
    return f"{saturday.isoformat()}/{(saturday + timedelta(days=1)).isoformat()}"


def _month(d: date, offset: int) -> str:
    index = d.year * 12 + d.month - 1 + offset
    return f"{_in_calendar(index // 12):04d}-{index % 12 + 1:02d}"


def _year(d: date, offset: int) -> str:
    return f"{_in_calendar(d.year + offset):04d}"


def _in_calendar(year: int) -> int:
    """`year`, or OverflowError past the years ISO 8601 writes in four digits (as `date` does for days)."""
    if not MINYEAR <= year <= MAXYEAR:
        raise OverflowError(f"year {year} is out of range")
    return year


def _shift(d: date, unit: str, n: int) -> str:
    """The period `n` units away from `d` (negative: back), at the unit's precision."""
    if unit == "day":
        return _day(d + timedelta(days=n))
    if unit == "week":
        return _week(d, n)
    if unit == "month":
        return _month(d, n)
    return _year(d, n)


# ---- English ----------------------------------------------------------------------------------

_EN_DAYS = {
    "the day before yesterday": -2,
    "day before yesterday": -2,
    "the day after tomorrow": 2,
    "day after tomorrow": 2,
    "yesterday": -1,
    "last night": -1,
    "today": 0,
    "tonight": 0,
    "this morning": 0,
    "this afternoon": 0,
    "this evening": 0,
    "tomorrow": 1,
}
_EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_EN_UNITS = {"day": "day", "week": "week", "month": "month", "year": "year"}
_STEP = {"last": -1, "this": 0, "next": 1}
# Words before a count that make it approximate, a bound or a range ("two or three days ago", "at
# least three days ago", "maybe 3 days ago").
_VAGUE_BEFORE = re.compile(
    r"(?:\b(?:about|around|roughly|approximately|nearly|almost|over|under|least|most|some|or|to|and|than"
    r"|like|maybe|probably|perhaps|possibly)|[-–])\s*\Z",
    re.IGNORECASE,
)
_END = r"(?![\w'’-])"  # a whole word, not a possessive ("today's") nor a compound
_FIGURATIVE = re.compile(
    r"\b(?:like|as\s+if|as\s+though)\s+(?:it\s+was\s+)?(?:just\s+|only\s+)?\Z", re.IGNORECASE
)


def _en_day(m: re.Match[str], ref: date, before: str) -> str | None:
    if re.search(r"\bthe\s*\Z", before, re.IGNORECASE) and not m.group(0).lower().startswith("the"):
        return None  # "the today show", "the tomorrow people"
    if _FIGURATIVE.search(before):
        return None  # "feels like just yesterday": no day meant
    return _day(ref + timedelta(days=_EN_DAYS[m.group(0).lower()]))


def _en_period(m: re.Match[str], ref: date, before: str) -> str | None:
    if re.search(r"\b(?:the|that|every|each)\s*\Z", before, re.IGNORECASE):
        return None  # "the last week" (of what?), "the next month" after a past event
    step = _STEP[m.group(1).lower()]
    unit = m.group(2).lower()
    if unit == "weekend":
        return _weekend(ref, step)
    return _shift(ref, unit, step)


def _en_weekday(m: re.Match[str], ref: date, before: str) -> str | None:
    if re.search(r"\bthe\s*\Z", before, re.IGNORECASE):
        return None
    word = m.group(1).lower()
    target = _EN_WEEKDAYS.index(m.group(2).lower())
    today = ref.weekday()
    if word == "last":
        if target < today:
            return None  # earlier this week or the week before: two readings
        back = (today - target) % 7 or 7
        return _day(ref - timedelta(days=back))
    if word == "next":
        if target > today:
            return None  # later this week or the week after: two readings
        return _day(ref + timedelta(days=(target - today) % 7 or 7))
    if target < today:
        return None  # "this Monday" said on a Thursday: passed, or the coming one?
    return _day(ref + timedelta(days=target - today))


def _count(word: str) -> int | None:
    word = word.lower()
    if word.isdigit():
        return int(word) if 0 < int(word) < 1000 else None
    return _EN_NUMBERS.get(word)


def _en_ago(m: re.Match[str], ref: date, before: str) -> str | None:
    n = _count(m.group(1))
    unit = m.group(2).lower()
    if n is None or _VAGUE_BEFORE.search(before):
        return None
    if m.group(1).lower() in ("a", "an") and unit.endswith("s"):
        return None
    sign = -1 if m.group(3).lower() == "ago" else 1
    return _shift(ref, _EN_UNITS[unit.rstrip("s")], sign * n)


_EN_NUM = "|".join([r"\d{1,3}", *_EN_NUMBERS])
_EN_RULES: list[tuple[re.Pattern[str], Resolver]] = [
    (
        re.compile(
            r"(?<![\w-])(?:"
            + "|".join(re.escape(w) for w in sorted(_EN_DAYS, key=len, reverse=True))
            + ")"
            + _END,
            re.IGNORECASE,
        ),
        _en_day,
    ),
    (
        re.compile(
            r"(?<![\w-])(last|this|next)\s+(weekend|week|month|year)" + _END + r"(?!\s+of\b)", re.IGNORECASE
        ),
        _en_period,
    ),
    (
        re.compile(r"(?<![\w-])(last|this|next)\s+(" + "|".join(_EN_WEEKDAYS) + ")" + _END, re.IGNORECASE),
        _en_weekday,
    ),
    (
        re.compile(
            r"(?<![\w-])(?<!\d[.,])("
            + _EN_NUM
            + r")\s+(days?|weeks?|months?|years?)\s+(ago|from\s+now)"
            + _END,
            re.IGNORECASE,
        ),
        _en_ago,
    ),
]

# ---- Chinese ----------------------------------------------------------------------------------

_ZH_DAYS = {
    "大前天": -3,
    "前天": -2,
    "昨天": -1,
    "昨日": -1,
    "昨晚": -1,
    "今天": 0,
    "今日": 0,
    "今晚": 0,
    "今早": 0,
    "明天": 1,
    "明日": 1,
    "明晚": 1,
    "明早": 1,
    "后天": 2,
    "大后天": 3,
}
_ZH_WEEK_WORD = r"(?:周|星期|礼拜|个星期|个礼拜)"
_ZH_STEP = {"上上": -2, "上": -1, "上个": -1, "这": 0, "这个": 0, "本": 0, "下": 1, "下个": 1, "下下": 2}
_ZH_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_YEARS = {"大前年": -3, "前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2, "大后年": 3}
_ZH_MONTHS = {
    "上上个月": -2,
    "上上月": -2,
    "上个月": -1,
    "上月": -1,
    "这个月": 0,
    "本月": 0,
    "下个月": 1,
    "下月": 1,
    "下下个月": 2,
    "下下月": 2,
}
# A weekday character that starts a word with the next one is no weekday: 下周一起 (together), 这周一定
# (surely), 上周一直 (all along), 下周三天 (three days), 这周天气 (weather), 下周日程 (schedule).
_ZH_NOT_WEEKDAY = {
    **dict.fromkeys("一二三四五六", "起定直些样般共同切旦致个次天周年月号日点十半两"),
    **dict.fromkeys("日天", "气程子报记常期志历空天日"),
}
_ZH_NUMBER_CHARS = "零一二两三四五六七八九十百0123456789几数多"


def _zh_number(text: str) -> int | None:
    """A Chinese or Arabic count under 100 (`三`, `十二`, `二十`, `21`)."""
    if text.isdigit():
        return int(text) if 0 < int(text) < 1000 else None
    if "十" not in text:
        return _ZH_DIGITS.get(text) if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    high = _ZH_DIGITS.get(tens, -1) if tens else 1
    low = _ZH_DIGITS.get(ones, -1) if ones else 0
    return high * 10 + low if high > 0 and low >= 0 else None


def _zh_day(m: re.Match[str], ref: date, before: str) -> str | None:
    word = m.group(0)
    after = m.string[m.end() : m.end() + 2]
    if word == "后天" and (before.endswith("先天") or before.endswith("和") or after[:1] in "性形"):
        return None  # 先天/后天: innate vs acquired
    return _day(ref + timedelta(days=_ZH_DAYS[word]))


def _zh_week(m: re.Match[str], ref: date, before: str) -> str | None:
    after = m.string[m.end() : m.end() + 1]
    if after and after in "期围边刊报年":
        return None  # 上周期 (previous cycle), 这周围 (around here), 周刊, 周年
    step = _ZH_STEP[m.group(1)]
    if m.group(2):
        return _weekend(ref, step)
    if m.group(3):
        if after and after in _ZH_NOT_WEEKDAY[m.group(3)]:
            return None
        monday = ref - timedelta(days=ref.weekday()) + timedelta(weeks=step)
        return _day(monday + timedelta(days=_ZH_WEEKDAYS[m.group(3)]))
    return _week(ref, step)


def _zh_month(m: re.Match[str], ref: date, before: str) -> str | None:
    if m.string[m.end() : m.end() + 1] in ("球", "亮"):
        return None  # 上月球
    return _month(ref, _ZH_MONTHS[m.group(0)])


def _zh_year(m: re.Match[str], ref: date, before: str) -> str | None:
    return _year(ref, _ZH_YEARS[m.group(0)])


def _zh_ago(m: re.Match[str], ref: date, before: str) -> str | None:
    if (
        before[-1:]
        and before[-1] in _ZH_NUMBER_CHARS + ".．点"
        or before.endswith(("约", "大约", "差不多", "将近", "近"))
    ):
        return None  # 两三天前 (a range), 1.5年前 (a fraction), 大约三天前 (approximate)
    n = _zh_number(m.group(1))
    if n is None:
        return None
    unit = {"天": "day", "日": "day", "个月": "month", "年": "year"}.get(m.group(2), "week")
    return _shift(ref, unit, -n)


_ZH_RULES: list[tuple[re.Pattern[str], Resolver]] = [
    (re.compile("|".join(sorted(_ZH_DAYS, key=len, reverse=True))), _zh_day),
    (
        re.compile(
            r"(上上|下下|上个|下个|这个|上|下|这|本)"
            + _ZH_WEEK_WORD
            + r"(?:(末)|([一二三四五六日天])|(?![一二三四五六日天末]))"
        ),
        _zh_week,
    ),
    (re.compile("|".join(sorted(_ZH_MONTHS, key=len, reverse=True))), _zh_month),
    (re.compile("|".join(sorted(_ZH_YEARS, key=len, reverse=True))), _zh_year),
    (
        re.compile(
            r"(?<![0-9])([0-9]{1,3}|[一二两三四五六七八九十]{1,3})(天|日|周|个星期|个礼拜|星期|个月|年)(?:以前|之前|前)"
        ),
        _zh_ago,
    ),
]

# ---- text walking -----------------------------------------------------------------------------

_PROTECTED = re.compile(  # bounded, and each stops at the next opener: hostile text costs linear time
    # fenced code, closed (CommonMark) by a line of the same character at least as long and nothing
    # else, so a ```` fence showing a ``` one stays whole; unclosed: to the end
    r"(?ms)^[ \t]*(?P<fence>(?P<char>[`~])(?P=char){2,}).*?(?:\n[ \t]*(?P=fence)(?P=char)*[ \t]*\r?$|\Z)"
    # code span, closed by a run of backticks of the same length
    r"|(?<!`)(?P<ticks>`{1,16})(?!`).{1,4000}?(?<!`)(?P=ticks)(?!`)"
    r"|\[\[[^\[\]\n]{0,1000}\]\]"  # wikilink
    r"|\]\([^()\n]{0,4000}\)"  # Markdown link target
    r"|<[a-z][a-z0-9+.-]{0,31}:[^<>\s]{0,4000}>"  # autolink
    r"|\b[a-z][a-z0-9+.-]{0,31}://\S+"  # bare URL
    r"|<!--(?:[^<]|<(?!!--)){0,10000}?-->"  # HTML comment
)
# Characters that join an expression into a path, file name, tag, mention or block id
# (`notes/yesterday.md`, `#today`, `@today`, `^yesterday`), which is no date.
_JOINED_BEFORE = frozenset("/\\#^@.")
_JOINED_AFTER = re.compile(r"[./\\][^\W_]")


def _protected(text: str) -> list[tuple[int, int]]:
    """Sorted, disjoint spans never touched: the front matter, then code, links, comments, headings and
    indented code of the body."""
    head = split(text)
    body = head.body_start if head.has_front_matter else 0
    spans = [(0, body)] if body else []
    found = list(_PROTECTED.finditer(text, body))
    inline = [(m.start(), m.end()) for m in found]
    fences = [(m.start(), m.end()) for m in found if m["fence"]]
    return _merged(spans + inline + _blocks(text, body, fences))


# A heading is a link target (`[[note#Yesterday]]`), so its words stay as they are.
_ATX_HEADING = re.compile(r" {0,3}(?:>[ \t]*)*#{1,6}(?:[ \t]|\r?$)")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(?:=+|-+)[ \t]*\r?$")
_LIST_ITEM = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|\r?$)")
_THEMATIC_BREAK = re.compile(r" {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})\r?$")
_BLOCK_START = re.compile(r" {0,3}(?:>|<|\|)")  # quote, HTML or table: no paragraph a heading underlines
_INTERRUPTS = re.compile(  # a line that ends the paragraph or list item text above it
    "|".join(
        f"(?:{p.pattern})"
        for p in (_ATX_HEADING, _SETEXT_UNDERLINE, _LIST_ITEM, _THEMATIC_BREAK, _BLOCK_START)
    )
)


def _blocks(text: str, start: int, fences: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Heading lines (ATX `# Yesterday`, and setext: a paragraph over `===` or `---`) and indented code
    blocks (CommonMark: 4 columns in, not continuing a paragraph) from `start`; fenced code (`fences`)
    is skipped. Inside a list an indented line is taken as the item's text, never as code: code there
    would need 4 columns past the item's own, and a nested item (`    - yesterday`) must stay words;
    so is an indented list item that starts the text."""
    spans: list[tuple[int, int]] = []
    fence_at = dict(fences)
    previous = "blank"  # the block the last line belongs to: blank | paragraph | code | list | other
    paragraph_start = 0
    in_list = False
    position = start
    while position < len(text):
        if position in fence_at:
            position, previous = fence_at[position], "other"
            continue
        end = text.find("\n", position)
        end = len(text) if end < 0 else end + 1
        line = text[position:end]
        indent = _columns(line)
        if not line.strip():
            previous = "code" if previous == "code" else "blank"
        elif indent >= 4 and (
            previous == "code" or previous in ("blank", "other") and not _opens_list(line, in_list)
        ):
            spans.append((position, end))
            previous = "code"
        elif indent >= 4 or previous in ("paragraph", "list") and not _interrupts(line):
            previous = "list" if in_list and previous != "paragraph" else previous
        elif previous == "paragraph" and _SETEXT_UNDERLINE.match(line):
            spans.append((paragraph_start, end))
            previous = "other"
        elif _ATX_HEADING.match(line):
            spans.append((position, end))
            previous, in_list = "other", in_list and indent > 0
        elif _LIST_ITEM.match(line) and not _THEMATIC_BREAK.match(line):
            previous, in_list = "list", True
        elif _THEMATIC_BREAK.match(line) or _BLOCK_START.match(line):
            previous, in_list = "other", in_list and indent > 0
        elif in_list and indent > 0:
            previous = "list"
        else:
            previous, in_list, paragraph_start = "paragraph", False, position
        position = end
    return spans


def _opens_list(line: str, in_list: bool) -> bool:
    """Whether an indented line belongs to a list rather than starting code: inside a list, or a list
    item itself (`    - met yesterday`, as an edit of a nested item gives it without its parent)."""
    return in_list or _LIST_ITEM.match(line.lstrip(" \t")) is not None


def _interrupts(line: str) -> bool:
    """Whether `line` ends the paragraph or list item text above it rather than continuing it."""
    return _INTERRUPTS.match(line) is not None


def _columns(line: str) -> int:
    """Columns of leading blanks, a tab advancing to the next multiple of 4 (CommonMark)."""
    column = 0
    for char in line:
        if char == " ":
            column += 1
        elif char == "\t":
            column += 4 - column % 4
        else:
            break
    return column


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`spans` sorted, overlapping ones joined: `_inside` needs them disjoint."""
    out: list[tuple[int, int]] = []
    for begin, end in sorted(spans):
        if out and begin <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((begin, end))
    return out


def protected_spans(text: str, start: int = 0) -> list[tuple[int, int]]:
    """Sorted, disjoint spans of fenced code, code spans, links, URLs and HTML comments from `start`:
    text that is code or an address, where no date or field is read."""
    return [(m.start(), m.end()) for m in _PROTECTED.finditer(text, start)]


def _joined(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` is part of a path, file name, tag or mention rather than words."""
    return text[start - 1 : start] in _JOINED_BEFORE or _JOINED_AFTER.match(text, end) is not None


def find(text: str, ref: date) -> list[Found]:
    """Every relative date expression outside protected regions, leftmost-longest, with its resolution."""
    if len(text) > MAX_TEXT_CHARS:
        return []
    spans = _protected(text)
    starts = [start for start, _ in spans]
    candidates: list[Found] = []
    for pattern, resolve in (*_EN_RULES, *_ZH_RULES):
        for m in pattern.finditer(text):
            if _joined(text, m.start(), m.end()):
                continue
            before = text[max(0, m.start() - 24) : m.start()]
            try:
                value = resolve(m, ref, before)
            except OverflowError:  # a day before 0001-01-01 or after 9999-12-31: none to write
                value = None
            candidates.append(Found(m.start(), m.end(), m.group(0), value))
    candidates.sort(key=lambda f: (f.start, -(f.end - f.start)))
    chosen: list[Found] = []
    edge = 0
    for found in candidates:
        if found.start < edge or _inside(found, spans, starts):
            continue
        chosen.append(found)
        edge = found.end
    return chosen


def _inside(found: Found, spans: list[tuple[int, int]], starts: list[int]) -> bool:
    """Whether `found` overlaps a protected span (`spans` sorted and disjoint, `starts` their starts)."""
    index = bisect_left(starts, found.end) - 1  # the last span starting before the expression ends
    return index >= 0 and spans[index][1] > found.start


def _is_annotated(text: str, end: int) -> bool:
    return _ANNOTATED.match(text, end) is not None


def annotate(text: str, ref: date) -> str:
    """`text` with each unambiguous relative expression followed by ` (<ISO resolution>)`."""
    return resolve(text, ref)[0]


def resolve(text: str, ref: date) -> tuple[str, int]:
    """(annotated text, how many resolutions were added)."""
    out: list[str] = []
    last = 0
    for found in find(text, ref):
        if found.value is None or _is_annotated(text, found.end):
            continue
        out.append(text[last : found.end])
        out.append(f" ({found.value})")
        last = found.end
    if not out:
        return text, 0
    out.append(text[last:])
    return "".join(out), len(out) // 2


def unresolved(text: str) -> Iterator[str]:
    """Relative expressions left without a resolution (an ambiguous one included): what audit reports."""
    reference = date(2000, 1, 3)  # any day: only whether a resolution follows matters here
    for found in find(text, reference):
        if not _is_annotated(text, found.end):
            yield found.text

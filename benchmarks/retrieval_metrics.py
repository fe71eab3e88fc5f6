"""Retrieval metrics measured at a fixed amount of returned text (see the data README)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

BUDGETS = (500, 1000, 2000, 4000, 8000)


@dataclass(frozen=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    text: str = ""


def visible_lines(
    hits: Sequence[Hit], lines: Mapping[str, Sequence[str]], budget: int
) -> set[tuple[str, int]]:
    """Lines seen when reading ranked hits line by line until ``budget`` characters are spent.

    Each line costs its length + 1; a line is visible while the running total stays within the
    budget. A line already shown by an earlier hit costs nothing again.
    """
    seen: set[tuple[str, int]] = set()
    total = 0
    for hit in hits:
        for line in range(hit.start_line, hit.end_line + 1):
            key = (hit.path, line)
            if key in seen:
                continue
            total += len(lines[hit.path][line - 1]) + 1
            if total > budget:
                return seen
            seen.add(key)
    return seen


def visible_transcript_lines(hits: Sequence[Hit], budget: int) -> set[tuple[str, int]]:
    """Like ``visible_lines`` but paying for the text a hit returns, for rendered transcripts.

    A transcript chunk's text has one rendered message per jsonl line (no blank lines), or is
    one ``[Part i/N]`` piece of a single long message: that piece costs its own length, not the
    whole message's.
    """
    seen: set[tuple[str, int]] = set()
    total = 0
    for hit in hits:
        if hit.start_line == hit.end_line:
            pairs = [(hit.start_line, hit.text)]
        else:
            pairs = list(zip(range(hit.start_line, hit.end_line + 1), hit.text.split("\n"), strict=True))
        for line, text in pairs:
            total += len(text) + 1
            if total > budget:
                return seen
            seen.add((hit.path, line))
    return seen


def recall_within(evidence: Sequence[tuple[str, int]], visible: set[tuple[str, int]]) -> float:
    """Share of evidence lines that are visible."""
    return sum(1 for e in evidence if e in visible) / len(evidence)


def file_recall_within(evidence: Sequence[tuple[str, int]], visible: set[tuple[str, int]]) -> float:
    """Share of evidence files with at least one visible line."""
    files = {path for path, _ in evidence}
    shown = {path for path, _ in visible}
    return len(files & shown) / len(files)


def reciprocal_rank(hits: Sequence[Hit], evidence: Sequence[tuple[str, int]]) -> float:
    """1 / rank of the first hit containing an evidence line (0 when none does)."""
    for rank, hit in enumerate(hits, 1):
        if any(path == hit.path and hit.start_line <= line <= hit.end_line for path, line in evidence):
            return 1.0 / rank
    return 0.0


def last_answer_rank(sessions: Iterable[str], gold: Iterable[str]) -> int:
    """Place of the last answer session among the distinct sessions in ranked order (one past the
    end for one never reached): all@k holds when it is at most k."""
    order = list(dict.fromkeys(sessions))
    return max(order.index(g) + 1 if g in order else len(order) + 1 for g in gold)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")

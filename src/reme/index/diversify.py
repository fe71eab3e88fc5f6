"""Reorder fused hits so one long message or one transcript does not crowd out the rest.

Two rules, both chosen on the LongMemEval-S and LoCoMo development sets (benchmarks/README.md):

- **Pieces of one line.** An over-long line (a long assistant reply, a pasted document) is cut
  into `[Part i/N]` chunks that share its line range and its words, so they rank side by side and
  spend the reader's budget on one message. Every further chunk covering the same lines as a
  better one counts `PIECE_DECAY` of its score.
- **Transcripts as sessions.** A session transcript answers a question when several of its
  messages match, not only its best one. The first hit of each transcript gains `SESSION_BOOST`
  × the summed relative scores of its next `SESSION_DEPTH - 1` best distinct spans, so the
  sessions a multi-session question needs reach the top; later hits of it keep their own score.

Scores are compared relative to the best hit, so the same rules hold for BM25 and fused
scores. The reported score stays each hit's own; only the order changes. Day notes and other
Markdown without over-long lines come back in exactly their score order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from reme.workspace.transcript import is_transcript_path

PIECE_DECAY = 0.5
SESSION_BOOST = 0.1
SESSION_DEPTH = 5


class Ranked(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def score(self) -> float: ...


H = TypeVar("H", bound=Ranked)


def diversify(
    hits: Sequence[H],
    *,
    piece_decay: float = PIECE_DECAY,
    session_boost: float = SESSION_BOOST,
    session_depth: int = SESSION_DEPTH,
) -> list[H]:
    """`hits` (best first) in diversified order; ties keep the incoming order."""
    if not hits:
        return []
    top = max(hit.score for hit in hits)
    if top <= 0:
        return list(hits)
    spans: dict[tuple[str, int, int], int] = {}
    relative: list[float] = []
    distinct: dict[str, list[float]] = {}
    for hit in hits:
        span = (hit.path, hit.start_line, hit.end_line)
        repeats = spans.get(span, 0)
        spans[span] = repeats + 1
        relative.append(hit.score / top * piece_decay**repeats)
        if repeats == 0 and is_transcript_path(hit.path):
            distinct.setdefault(hit.path, []).append(hit.score / top)
    boosts = {
        path: session_boost * sum(sorted(scores, reverse=True)[1:session_depth])
        for path, scores in distinct.items()
    }
    keyed = []
    for position, (hit, value) in enumerate(zip(hits, relative, strict=True)):
        keyed.append((-(value + boosts.pop(hit.path, 0.0)), position, hit))
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [hit for _, _, hit in keyed]

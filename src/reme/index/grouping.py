"""Rank above the chunk: each file gets a score from its best passages, and a file's hits read together.

A search hit is one chunk, but a question is often about a file: a session where several messages
match, a day whose entries answer it. This stage (docs/spec.md §5.3, after fusion) orders the hits so that

- **files compete by a file score**: the best hit's relative score (score / best score of the
  query) + `weight` × the relative scores of the file's next `depth - 1` distinct passages that
  reach `threshold` of the best score. Only passages that match well count, so a long file with
  many weak matches (more candidates fetched, more of them found) gains nothing; the file's first
  hit takes this score, its later hits keep their own, so a file's second passage still competes
  with other files' first ones and one file cannot crowd out the rest;
- **a file's strong hits are read together**: up to `per_file` of a file's hits that reach
  `threshold` follow its first one, in line order (the order they are read in the file).

Scores are relative to the query's best hit, so the same settings hold for BM25 and fused scores;
the reported score stays each hit's own, only the order moves. `Grouping()` (weight 0, per_file 1)
leaves the order as it came. The settings are chosen by leave-one-out over the LoCoMo
conversations and the LongMemEval cases together (benchmarks/README.md, "Leave-one-out").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from reme.index.diversify import PIECE_DECAY, Ranked, piece_relative
from reme.index.speakers import REPLY_WEIGHT, users_first
from reme.workspace.transcript import is_transcript_path

H = TypeVar("H", bound=Ranked)


@dataclass(frozen=True)
class Grouping:
    """How hits are ranked by their file; the defaults leave the order unchanged."""

    weight: float = 0.0  # credit for each further strong passage of the file
    depth: int = 5  # the best passage and at most depth - 1 further ones count
    threshold: float = 0.5  # a further passage counts (and is pulled up) from this share of the best score
    per_file: int = 1  # hits of one file read together at its place (1: none pulled up)
    transcripts_only: bool = False  # file scores for session transcripts only (day notes keep their order)

    def __post_init__(self) -> None:
        if self.weight < 0 or self.depth < 1 or self.per_file < 1 or not 0 <= self.threshold <= 1:
            raise ValueError("grouping needs weight >= 0, depth >= 1, per_file >= 1, 0 <= threshold <= 1")

    @property
    def neutral(self) -> bool:
        return self.weight == 0 and self.per_file == 1


def group(hits: Sequence[H], relative: Sequence[float], grouping: Grouping) -> list[H]:
    """`hits` ordered by file; `relative[i]` is hit i's score relative to the best (≤ 1).

    Hits sharing a span (the pieces of one long line) count once toward their file's score.
    """
    return [hits[i] for i in group_order(hits, relative, grouping)]


def group_order(hits: Sequence[Ranked], relative: Sequence[float], grouping: Grouping) -> list[int]:
    """`group`'s order as the hits' indices."""
    if grouping.neutral:
        return sorted(range(len(hits)), key=lambda i: (-relative[i], i))
    files: dict[str, list[int]] = {}
    for i in sorted(range(len(hits)), key=lambda i: (-relative[i], i)):
        files.setdefault(hits[i].path, []).append(i)
    key = list(relative)
    for path, members in files.items():
        if grouping.transcripts_only and not is_transcript_path(path):
            continue
        spans: set[tuple[int, int]] = set()
        further = []
        for i in members:
            span = (hits[i].start_line, hits[i].end_line)
            if span not in spans:
                spans.add(span)
                if i != members[0] and relative[i] >= grouping.threshold:
                    further.append(relative[i])
        key[members[0]] = relative[members[0]] + grouping.weight * sum(further[: grouping.depth - 1])
    order = sorted(range(len(hits)), key=lambda i: (-key[i], i))
    if grouping.per_file == 1:
        return order
    placed: set[int] = set()
    out: list[int] = []
    for i in order:
        if i in placed:
            continue
        members = files[hits[i].path]
        together = [i]
        if i == members[0]:
            strong = [j for j in members[1:] if relative[j] >= grouping.threshold]
            together += strong[: grouping.per_file - 1]
        together.sort(key=lambda j: (hits[j].start_line, hits[j].end_line, j))
        placed.update(together)
        out.extend(together)
    return out


SEARCH_GROUPING = Grouping()
"""The search job's setting: what held out on both sets (benchmarks/README.md, "Leave-one-out")."""


def order_hits(
    hits: Sequence[H],
    roles: Sequence[str] | None = None,
    *,
    piece_decay: float = PIECE_DECAY,
    grouping: Grouping = SEARCH_GROUPING,
    reply_weight: float = REPLY_WEIGHT,
) -> list[H]:
    """The search job's order of its candidates: pieces of one line yield, then `grouping`; with
    `roles` (hit i's transcript role), the user's lines first within each session's places.
    The keywords are the settings the benchmarks replay (benchmarks/retrieval_loo.py)."""
    relative = piece_relative(hits, piece_decay)
    order = group_order(hits, relative, grouping)
    ordered = [hits[i] for i in order]
    if not roles:
        return ordered
    if len(roles) != len(hits):
        raise ValueError("order_hits needs one role per hit")
    return users_first(ordered, [relative[i] for i in order], [roles[i] for i in order], reply_weight)

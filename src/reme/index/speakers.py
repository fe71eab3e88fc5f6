"""Within a session, what the user said is read before the assistant's replies around it.

A question about the user's own life ("how many plants did I buy?") is answered by one short line
of theirs, while the assistant's long replies in the same session share the question's topic words
and outrank it. Which *sessions* rank high stays as fusion put them (the replies are what tells a
session's topic: weighing them down in the whole ranking lost LongMemEval session recall with BM25,
0.71 → 0.62); only inside each session's places in the results, passages of the assistant alone
count `REPLY_WEIGHT` of their score, so the user's matching lines take the session's first places.
Held out over LoCoMo and LongMemEval together: LongMemEval turn recall within 2,000 characters
0.51 → 0.56 (BM25) and 0.55 → 0.69 (hybrid), session recall unchanged by construction, LoCoMo (day
notes) unchanged; every weight from 0.2 down reads the same in each run (benchmarks/README.md,
"Round three").

A question about what the assistant said ("what was the recipe you suggested?") or what was
worked out together ("how did we fix the login bug?" — a coding session's answer is often the
assistant's) keeps the order as fusion gave it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

from reme.index.diversify import Ranked

REPLY_WEIGHT = 0.2
ASSISTANT = "assistant"

H = TypeVar("H", bound=Ranked)

QUESTION_CHARS = 1_000  # a question longer than this is judged by its start (bounded work per search)
_YOU = r"(?:you|u)(?:['’]ve|['’]d| have| had)?"
_PAST_REPLY = re.compile(
    # every alternative is linear in the question's length: no unbounded `.*` between two words
    rf"\b{_YOU}\s+(?:just\s+|previously\s+|already\s+|earlier\s+)?"
    r"(?:said|told|recommended|suggested|mentioned|gave|provided|listed|shared|wrote|explained|"
    r"described|proposed|answered|replied|offered|came up with|helped|advised|pointed out)\b"
    r"|\bdid you\s+(?:just\s+)?(?:say|tell|recommend|suggest|mention|give|provide|list|share|write|"
    r"explain|describe|propose|answer|reply|offer|advise|point out|book|name|pick)\b"
    r"|\byour\s+(?:earlier\s+|previous\s+|last\s+)?(?:recommendation|suggestion|advice|answer|reply|list)s?\b"
    r"|\bour\s+(?:previous|last|earlier|past)\s+(?:conversation|chat|discussion)s?\b"
    r"|\bthe\s+(?:previous|earlier)\s+(?:conversation|chat)\b"
    r"|\b(?:did|have|had)\s+we\s+(?:decide|agree|choose|fix|discuss|settle|plan|conclude|implement|"
    r"change|solve|resolve)\b"
    rf"|\bwe(?:['’]ve| have| had)?\s+(?:decided|agreed|chose|fixed|discussed|settled|planned|concluded|"
    r"implemented|changed|solved|resolved)\b"
    r"|\bremind me\b[^\n]{0,200}?(?<!thank )\byou\b"
    r"|[你您](?:之前|上次|刚才|刚刚|曾经|以前)(?:给我)?(?:说|提到|推荐|建议|告诉|讲)"
    r"|[你您](?:给我)?(?:说|提到|推荐|建议|告诉|讲)(?:过|的)"
    r"|我们(?:之前|上次|刚才|以前)",
    re.IGNORECASE,
)


def asks_about_replies(query: str) -> bool:
    """Whether the question is about what the assistant said (or what was worked out together),
    so its replies must not yield."""
    return bool(_PAST_REPLY.search(query[:QUESTION_CHARS]))


def users_first(
    hits: Sequence[H], relative: Sequence[float], roles: Sequence[str], reply_weight: float = REPLY_WEIGHT
) -> list[H]:
    """`hits` (already ordered) with each file's places refilled by its own hits, best first, where
    a hit of the assistant alone counts `reply_weight` of its `relative` score (hit i's role:
    `roles[i]`; hits without one keep their score). A file's places never move."""
    if not len(hits) == len(relative) == len(roles):
        raise ValueError("users_first needs one relative score and one role per hit")
    if ASSISTANT not in roles:
        return list(hits)
    places: dict[str, list[int]] = {}
    for place, hit in enumerate(hits):
        places.setdefault(hit.path, []).append(place)
    out = list(hits)

    def key(i: int) -> float:  # lower for a reply whatever the score's sign (a negative min_score)
        return relative[i] - (1 - reply_weight) * abs(relative[i]) if roles[i] == ASSISTANT else relative[i]

    for members in places.values():
        if not any(roles[i] == ASSISTANT for i in members):
            continue
        weighted = sorted(members, key=lambda i: (-key(i), i))
        for place, i in zip(members, weighted, strict=True):
            out[place] = hits[i]
    return out

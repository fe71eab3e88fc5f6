"""Within a session, what the user said is read before the assistant's replies around it.

A question about the user's own life ("how many plants did I buy?") is answered by one short line
of theirs, while the assistant's long replies in the same session share the question's topic words
and outrank it. Which *sessions* rank high stays as fusion put them (the replies are what tells a
session's topic: weighing them down in the whole ranking lost LongMemEval session recall with BM25,
0.71 → 0.62); only inside each session's places in the results, passages of the assistant alone
count `REPLY_WEIGHT` of their score, so the user's matching lines take the session's first places.
Held out: LongMemEval turn recall within 2,000 characters 0.51 → 0.58 (BM25) and 0.55 → 0.71
(hybrid) in every fold, session recall unchanged by construction, LoCoMo (day notes) unchanged
(benchmarks/README.md, "Round two").

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

_PAST_REPLY = re.compile(
    r"\byou(?:'ve| have)?\s+(?:just\s+|previously\s+|already\s+|earlier\s+)?"
    r"(?:said|told|recommended|suggested|mentioned|gave|provided|listed|shared|wrote|explained|"
    r"described|proposed|answered|replied|offered|came up with|helped|advised|pointed out)\b"
    r"|\bdid you\s+(?:say|tell|recommend|suggest|mention|give|provide|list|share|write|"
    r"explain|describe|propose|answer|reply|offer|advise|point out)\b"
    r"|\b(?:our|the)\s+(?:previous|last|earlier|past)\s+(?:conversation|chat|discussion|session)\b"
    r"|\b(?:did|have|had) we\b|\bwe(?:'ve| have)?\s+(?:decided|agreed|chose|fixed|discussed|talked|settled|"
    r"planned|concluded)\b"
    r"|\bremind me\b.*\byou\b"
    r"|你(?:之前|上次|刚才|曾经|以前)(?:说|提到|推荐|建议|告诉|讲)|你(?:说|提到|推荐|建议|告诉|讲)过"
    r"|我们(?:之前|上次|刚才|以前)",
    re.IGNORECASE,
)


def asks_about_replies(query: str) -> bool:
    """Whether the question is about what the assistant said, so its replies must not yield."""
    return bool(_PAST_REPLY.search(query))


def users_first(
    hits: Sequence[H], relative: Sequence[float], roles: Sequence[str], reply_weight: float = REPLY_WEIGHT
) -> list[H]:
    """`hits` (already ordered) with each file's places refilled by its own hits, best first, where
    a hit of the assistant alone counts `reply_weight` of its `relative` score (hit i's role:
    `roles[i]`; hits without one keep their score). A file's places never move."""
    if ASSISTANT not in roles:
        return list(hits)
    places: dict[str, list[int]] = {}
    for place, hit in enumerate(hits):
        places.setdefault(hit.path, []).append(place)
    out = list(hits)
    for members in places.values():
        if not any(roles[i] == ASSISTANT for i in members):
            continue
        weighted = sorted(
            members, key=lambda i: (-relative[i] * (reply_weight if roles[i] == ASSISTANT else 1.0), i)
        )
        for place, i in zip(members, weighted, strict=True):
            out[place] = hits[i]
    return out

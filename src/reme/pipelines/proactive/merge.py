"""The topics stage (no model): fold an extraction into the truth source and choose what to push.

Found topics keep the id of the open topic they continue (named by the model, the same normalised
title, or a similar title: embedding cosine ≥ the threshold calibrated for the index's embedding
model when vectors are on, word / CJK-bigram similarity ≥ `lexical_threshold` otherwise); a resolved topic comes back only with
evidence dated after the day it was resolved
(the notes of that day may well be where it was settled); open topics are carried forward while their last
evidence is within `carry_forward_days`; topics whose evidence files are all gone are dropped.
Push candidates are the open topics with confidence ≥ `min_push_confidence`, at most `max_topics`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date

from reme.jsontypes import JSONObject
from reme.pipelines.port import Embeddings
from reme.pipelines.proactive.calls import MAX_FOUND, ExtractReply, FoundTopic
from reme.pipelines.proactive.files import RESOLVED, Tombstone, TruthSource
from reme.pipelines.proactive.topics import (
    Topic,
    normalise_title,
    path_date,
    similarity,
    topic_id,
    workspace_path,
)

MAX_OPEN_TOPICS = 200
# Title cosines at which two topics are one, measured per embedding model (`<model>@<dimension>`).
# e5-small puts every short title close (different topics up to 0.958, "Tokyo" vs "Kyoto" trip; the
# same topic reworded from 0.956): 0.96 keeps different topics apart and merges most rewordings.
CALIBRATED_THRESHOLDS = {"multilingual-e5-small-q4/original@384": 0.96}
Similar = Callable[[str, str], float]


@dataclass(frozen=True)
class TopicRules:
    carry_forward_days: int = 14
    lexical_threshold: float = 0.8  # word (CJK: bigram) Dice similarity without embeddings
    known_threshold: float = 0.85  # embedding cosine, for the model named below
    known_threshold_calibrated_for: str = ""  # `<model>@<dimension>`
    min_push_confidence: float = 0.5
    max_topics: int = 10


@dataclass
class Selection:
    """The outcome of the topics stage: candidates to push and what was held back (with why)."""

    candidates: list[Topic] = field(default_factory=list)
    suppressed: list[JSONObject] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)  # ids the extraction resolved
    reopened: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)


def held(topic: Topic | Tombstone, reason: str) -> JSONObject:
    return {"id": topic.id, "title": topic.title, "reason": reason}


def title_similarity(
    rules: TopicRules, embedded: Embeddings | None, titles: list[str]
) -> tuple[Similar, float, str]:
    """How titles are compared: (similarity, threshold, what was used for the run's metadata).

    Embedding cosine when vectors are on and a threshold is known for the model (configured or
    calibrated); the lexical similarity otherwise — an uncalibrated cosine would merge topics at random.
    """
    if embedded is not None:
        threshold = (
            rules.known_threshold
            if embedded.model == rules.known_threshold_calibrated_for
            else CALIBRATED_THRESHOLDS.get(embedded.model)
        )
        if threshold is not None:
            vectors = dict(zip(titles, embedded.vectors, strict=True))

            def cosine(a: str, b: str) -> float:
                return sum(x * y for x, y in zip(vectors[a], vectors[b], strict=True))

            return cosine, threshold, f"embedding {embedded.model} ≥ {threshold}"
        reason = f"lexical (no known_threshold calibrated for {embedded.model})"
        return similarity, rules.lexical_threshold, reason
    return similarity, rules.lexical_threshold, "lexical"


def _match(found: FoundTopic, truth: TruthSource, threshold: float, similar: Similar) -> str:
    """The id a found topic takes: the known (open or resolved) topic it continues, else its own title's id."""
    if found.known_id in truth.topics:
        return found.known_id
    own = topic_id(found.title)
    if own in truth.topics or own in truth.resolved:
        return own
    # a resolved topic reworded is still resolved
    known: list[Topic | Tombstone] = [*truth.topics.values(), *truth.resolved.values()]
    scored = [(similar(found.title, t.title), t.id) for t in known]
    best = max(scored, default=(0.0, ""))
    return best[1] if best[0] >= threshold else own


def carried(truth: TruthSource, day: date, rules: TopicRules, limit: int) -> list[Topic]:
    """Open topics still within the carry-forward window, most recent evidence first."""
    alive = [t for t in truth.topics.values() if _alive(t, day, rules)]
    return sorted(alive, key=lambda t: (t.last_evidence_at, t.confidence, t.id), reverse=True)[:limit]


def _alive(topic: Topic, day: date, rules: TopicRules) -> bool:
    age = topic.age_days(day)
    return age is not None and age < rules.carry_forward_days


def most_confident(found: list[FoundTopic], limit: int = MAX_FOUND) -> set[int]:
    """Indexes of the `limit` most confident found topics (the model's order breaks ties).

    A model that proposes too many topics loses only the least sure of them, not the run.
    """
    ranked = sorted(range(len(found)), key=lambda i: -found[i].confidence)
    return set(ranked[:limit])


def apply_extraction(
    truth: TruthSource,
    reply: ExtractReply,
    *,
    day: date,
    shown: list[str],
    threshold: float,
    selection: Selection,
    similar: Similar = similarity,
) -> None:
    """Fold the model's topics and resolutions into `truth` (in place); unusable topics, and those
    beyond the `MAX_FOUND` most confident, go to `suppressed`."""
    today = day.isoformat()
    for gone in reply.resolved:
        topic = truth.topics.pop(gone.id, None)
        if topic is not None:
            truth.resolved[topic.id] = Tombstone(topic.id, topic.title, today, gone.reason.strip())
            selection.resolved.append(topic.id)
    allowed = set(shown)
    seen: set[str] = set()  # two found topics that are one: the higher confidence wins
    kept = most_confident(reply.topics)
    too_many = (
        f"left out: {len(reply.topics)} topics proposed, a refresh takes the {MAX_FOUND} most confident"
    )
    for index, found in enumerate(reply.topics):
        title = " ".join(found.title.split())
        if not normalise_title(title):  # read back, it would make the truth source unreadable
            selection.suppressed.append(
                {"id": "", "title": title, "reason": "no title: no letters or digits"}
            )
            continue
        evidence = [p for p in dict.fromkeys(map(workspace_path, found.evidence_paths)) if p in allowed]
        key = _match(found, truth, threshold, similar)
        if index not in kept or not evidence:  # an open topic is still carried on its old evidence
            if key not in truth.topics:
                reason = (
                    too_many if index not in kept else "no evidence: none of its paths is in the material"
                )
                selection.suppressed.append({"id": key, "title": title, "reason": reason})
            continue
        tombstone = truth.resolved.get(key)
        if tombstone is not None:
            if not any((path_date(p) or "") > tombstone.resolved_at for p in evidence):
                selection.suppressed.append(held(tombstone, f"{RESOLVED} on {tombstone.resolved_at}"))
                continue
            del truth.resolved[key]
            selection.reopened.append(key)
        old = truth.topics.get(key)
        confidence = float(found.confidence)
        if old is None:
            dates = sorted(d for d in (path_date(p) for p in evidence) if d)
            old = Topic(id=key, title=title, first_seen=dates[0] if dates else today)
        elif key in seen:
            confidence = max(old.confidence, confidence)
        truth.topics[key] = replace(
            old.with_evidence(evidence),
            reason=" ".join(found.reason.split()),
            kind=found.kind,
            confidence=confidence,
        )
        seen.add(key)


def select(
    truth: TruthSource, *, day: date, rules: TopicRules, exists: Callable[[str], bool], selection: Selection
) -> None:
    """Drop expired and evidence-less topics from `truth`; choose the push candidates."""
    for topic in list(truth.topics.values()):
        paths = tuple(p for p in topic.paths if workspace_path(p) == p and exists(p))
        if not _alive(topic, day, rules) or not paths:
            del truth.topics[topic.id]
            selection.expired.append(topic.id)
            continue
        if paths != topic.paths:
            truth.topics[topic.id] = replace(topic, paths=paths)
    by_recency = sorted(truth.topics.values(), key=lambda t: (t.last_evidence_at, t.id), reverse=True)
    ranked = sorted(by_recency, key=lambda t: -t.confidence)  # stable: recency breaks ties
    for topic in ranked[MAX_OPEN_TOPICS:]:  # the truth source stays small whatever the model says
        del truth.topics[topic.id]
        selection.expired.append(topic.id)
    ranked = ranked[:MAX_OPEN_TOPICS]
    for topic in ranked:
        if topic.confidence < rules.min_push_confidence:
            reason = f"low confidence: {topic.confidence:.2f} < {rules.min_push_confidence:.2f}"
            selection.suppressed.append(held(topic, reason))
        elif len(selection.candidates) >= rules.max_topics:
            selection.suppressed.append(held(topic, f"over max_topics ({rules.max_topics})"))
        else:
            selection.candidates.append(topic)
    for tombstone in truth.resolved.values():
        if tombstone.id in selection.resolved or _recent(tombstone, day, rules):
            entry = held(tombstone, f"{RESOLVED} on {tombstone.resolved_at}")
            if entry not in selection.suppressed:
                selection.suppressed.append(entry)


def _recent(tombstone: Tombstone, day: date, rules: TopicRules) -> bool:
    try:
        return (day - date.fromisoformat(tombstone.resolved_at)).days < rules.carry_forward_days
    except ValueError:
        return False

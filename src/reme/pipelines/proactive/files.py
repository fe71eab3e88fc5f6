"""The proactive files: `daily/<date>/interests.yaml` (a day's exposure) and `daily/_proactive.yaml`.

`interests.yaml` version 2 is written exactly in docs/spec.md §13.1's shape (plain dates, keys in order);
version 1 files (no `version`: `title, reason, evidence, keywords, paths`) are still read. The
truth source keeps the open topics and the resolved tombstones; it can be rebuilt from the
`interests.yaml` files, whose `suppressed` entries say which topics were resolved.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime

import yaml
from yaml.nodes import Node, ScalarNode

from reme.jsontypes import JSONObject, JSONValue
from reme.pipelines.proactive.topics import Topic, iso_day, topic_from

TRUTH_VERSION = 1
RESOLVED = "resolved"  # the reason code of a suppressed topic that was resolved
_RESOLVED_ON = re.compile(rf"{RESOLVED} on (\d{{4}}-\d{{2}}-\d{{2}})")
MAX_TOMBSTONES = 500
MAX_YAML_CHARS = 5_000_000  # newest kept; older resolutions no longer hold a topic back


class _Dumper(yaml.SafeDumper):
    """Writes `2026-06-20` and ISO timestamps held as strings plain, as docs/spec.md §13.1 shows them."""


_Dumper.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeDumper.yaml_implicit_resolvers.items()
}


_TIMESTAMP = next(
    regexp
    for resolvers in yaml.SafeDumper.yaml_implicit_resolvers.values()
    for tag, regexp in resolvers
    if tag == "tag:yaml.org,2002:timestamp"
)


def _reads_back(value: str) -> bool:
    try:
        return plain(yaml.safe_load(value)) == value
    except ValueError:  # `2026-02-30`: the loader's date constructor refuses it
        return False


def _represent_str(dumper: _Dumper, value: str) -> ScalarNode:
    """A timestamp-like string (a model's title `2026-02-30`) is quoted unless it reads back as written.

    Written plain, the loader would turn it into another string (another topic id) or refuse the file.
    """
    if _TIMESTAMP.match(value) and not _reads_back(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return dumper.represent_str(value)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: JSONValue) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


class _Loader(yaml.SafeLoader):
    """Safe loading without aliases: an alias chain (`&a [*a, *a]` ...) would make copying it explode."""

    def compose_node(self, parent: Node | None, index: object) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed here", mark)
        return super().compose_node(parent, index)


def load_yaml(text: str, where: str) -> object:
    """Parsed YAML; a ValueError that names the file and the position of the problem."""
    if len(text) > MAX_YAML_CHARS:
        raise ValueError(f"{where} is larger than {MAX_YAML_CHARS} characters; it is not a proactive file")
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader: no arbitrary objects
    except RecursionError:  # `[[[[…`: the composer recurses once per level
        raise ValueError(f"{where} is not valid YAML: it is nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ValueError(f"{where} is not valid YAML{at}: {problem}") from None


def plain(value: object) -> JSONValue:
    """JSON-safe copy of parsed YAML: dates and timestamps become ISO strings (anything else not JSON,
    `.inf` and `.nan` included, text)."""
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


# interests.yaml ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interests:
    """A parsed `interests.yaml`: its version, the raw topic mappings and agenda (None when absent)."""

    version: int
    topics: list[JSONObject]
    agenda: list[JSONObject] | None
    suppressed: list[JSONObject]


def parse_interests(text: str, where: str) -> Interests:
    """Read a version-1 or version-2 file; ValueError only when it is not YAML at all.

    A YAML document that holds no topic list is a valid file without topics.
    """
    data = plain(load_yaml(text, where))
    if isinstance(data, list):  # a bare version-1 list of topics
        data = {"topics": data}
    if not isinstance(data, dict):
        data = {}
    version = data.get("version")
    topics = data.get("topics")
    agenda = data.get("agenda")
    suppressed = data.get("suppressed")
    return Interests(
        version=version if isinstance(version, int) and not isinstance(version, bool) else 1,
        topics=[t for t in topics if isinstance(t, dict)] if isinstance(topics, list) else [],
        agenda=[a for a in agenda if isinstance(a, dict)] if isinstance(agenda, list) else None,
        suppressed=[s for s in suppressed if isinstance(s, dict)] if isinstance(suppressed, list) else [],
    )


def render_interests(
    day: str,
    generated_at: str,
    topics: list[Topic],
    agenda: list[JSONObject],
    suppressed: list[JSONObject],
) -> str:
    """`interests.yaml` version 2: the pushed topics, their agenda, and what was held back."""
    return dump_yaml(
        {
            "version": 2,
            "date": day,
            "generated_at": generated_at,
            "push": bool(topics),
            "topics": [t.to_exposure() for t in topics],
            "agenda": [*agenda],
            "suppressed": [*suppressed],
        }
    )


# the truth source -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tombstone:
    """A resolved topic: not pushed again unless evidence dated after `resolved_at` names it."""

    id: str
    title: str
    resolved_at: str
    reason: str = ""

    def to_dict(self) -> JSONObject:
        return {"id": self.id, "title": self.title, "resolved_at": self.resolved_at, "reason": self.reason}


@dataclass
class TruthSource:
    """Open topics by id (with their history) and resolved tombstones by id."""

    topics: dict[str, Topic] = field(default_factory=dict)
    resolved: dict[str, Tombstone] = field(default_factory=dict)

    def render(self, updated_at: str) -> str:
        tombstones = sorted(self.resolved.values(), key=lambda t: (t.resolved_at, t.id), reverse=True)
        return dump_yaml(
            {
                "version": TRUTH_VERSION,
                "updated_at": updated_at,
                "topics": [{**t.to_exposure(), **t.extra} for t in sorted(self.topics.values(), key=_order)],
                "resolved": [t.to_dict() for t in tombstones[:MAX_TOMBSTONES]],
            }
        )


def _order(topic: Topic) -> tuple[float, str]:
    return (-topic.confidence, topic.id)


def parse_truth(text: str, where: str) -> TruthSource:
    """The truth source; ValueError saying what is wrong when it is not one (it is never overwritten then)."""
    data = plain(load_yaml(text, where))
    if data is None:
        return TruthSource()
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a mapping with `topics` and `resolved` lists")
    truth = TruthSource()
    lists: dict[str, list[JSONValue]] = {}
    for key in ("topics", "resolved"):
        entries = data.get(key) or []
        if not isinstance(entries, list):
            raise ValueError(f"{where}: `{key}` must be a list")
        lists[key] = entries
    for raw in lists["topics"]:
        topic = topic_from(raw)
        if topic is None:
            raise ValueError(f"{where}: every entry of `topics` needs a title (found {raw!r:.80})")
        twin = truth.topics.get(topic.id)
        if twin is not None:  # read on, one entry would silently replace the other
            raise ValueError(
                f"{where}: `topics` holds topic {topic.id} twice ({twin.title!r:.80} and {topic.title!r:.80} "
                "are one title once normalised); merge the two entries into one"
            )
        truth.topics[topic.id] = topic
    for raw in lists["resolved"]:
        topic = topic_from(raw)
        if topic is None or not isinstance(raw, dict):
            raise ValueError(f"{where}: every entry of `resolved` needs a title (found {raw!r:.80})")
        resolved_at = iso_day(raw.get("resolved_at"))  # hand-written `yesterday` would hold it back forever
        truth.resolved[topic.id] = Tombstone(topic.id, topic.title, resolved_at, str(raw.get("reason") or ""))
    return truth


def rebuild_truth(files: Iterable[tuple[str, Interests]]) -> TruthSource:
    """The truth source from `(day, interests)` pairs in date order: the last word on a topic wins.

    A topic listed as suppressed with reason `resolved...` after its last push becomes a tombstone.
    """
    truth = TruthSource()
    for day, interests in files:
        for raw in interests.topics:
            topic = topic_from(raw)
            if topic is None:
                continue
            old = truth.topics.get(topic.id)
            if old is not None:
                first = min(filter(None, (old.first_seen, topic.first_seen)), default="")
                topic = replace(
                    old.with_evidence(list(topic.paths)),
                    title=topic.title,
                    reason=topic.reason,
                    kind=topic.kind,
                    confidence=topic.confidence,
                    first_seen=first,
                )
            truth.topics[topic.id] = topic
            truth.resolved.pop(topic.id, None)
        for raw in interests.suppressed:
            topic = topic_from(raw)
            reason = str(raw.get("reason") or "")
            if topic is not None and reason.startswith(RESOLVED):
                when = _RESOLVED_ON.match(reason)
                truth.topics.pop(topic.id, None)
                truth.resolved[topic.id] = Tombstone(topic.id, topic.title, when[1] if when else day, reason)
    return truth

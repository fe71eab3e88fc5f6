"""Changes to the truth source outside a refresh: `proactive_resolve` and `proactive_rebuild`.

Both hold the `proactive` lock (waiting a little for it), so they never interleave with a refresh's writes; resolve refuses a
malformed truth source (leaving it as it is), rebuild is the way to replace one.
"""

from __future__ import annotations

from datetime import datetime

from reme.errors import ReMeError
from reme.jsontypes import JSONValue
from reme.pipelines.outcome import Outcome
from reme.pipelines.port import MemoryPort
from reme.pipelines.proactive.files import Interests, Tombstone, parse_interests, rebuild_truth
from reme.pipelines.proactive.store import hold, load_truth, truth_path
from reme.pipelines.proactive.topics import path_date

MAX_REASON_CHARS = 500


async def resolve(port: MemoryPort, topic_id: str, reason: str = "") -> Outcome:
    """Mark an open topic resolved: it is not pushed again unless new evidence names it."""
    given = " ".join(reason.split())
    reason = given[:MAX_REASON_CHARS]
    cut = f" (reason cut to {MAX_REASON_CHARS} characters)" if len(given) > MAX_REASON_CHARS else ""
    async with hold(port):
        truth, loaded = await load_truth(port)
        if topic_id in truth.resolved:
            done = truth.resolved[topic_id]
            return Outcome(
                f"Already resolved on {done.resolved_at}: {topic_id} {done.title}",
                {"topic_id": topic_id, "resolved": True},
            )
        topic = truth.topics.pop(topic_id, None)
        if topic is None:
            hint = (
                "proactive_read lists the ids"
                if loaded
                else "there is no truth source yet; proactive_rebuild makes one from the interests.yaml files"
            )
            raise ReMeError(
                f"unknown topic id {topic_id!r}: it is not an open topic of {truth_path(port)} ({hint})",
                {"topic_id": topic_id, "resolved": False},
            )
        truth.resolved[topic_id] = Tombstone(topic_id, topic.title, port.today().isoformat(), reason)
        now = datetime.now(port.tz).isoformat(timespec="seconds")
        await port.save(
            truth_path(port), truth.render(now), expected_sha256=loaded.sha256 if loaded else None
        )
    return Outcome(f"Resolved: {topic_id} {topic.title}{cut}", {"topic_id": topic_id, "resolved": True})


async def rebuild(port: MemoryPort) -> Outcome:
    """Rebuild the truth source from every `daily/<date>/interests.yaml`, in date order."""
    daily = port.folder("daily")
    sources: list[tuple[str, Interests]] = []
    skipped: list[JSONValue] = []
    for entry in await port.list_files(daily, extensions=("yaml",), recursive=True):
        day = path_date(entry.path)
        if not day or entry.path != f"{daily}/{day}/interests.yaml":
            continue
        loaded = await port.load(entry.path)
        if loaded is None:
            continue
        try:
            sources.append((day, parse_interests(loaded.content, entry.path)))
        except ValueError as exc:
            skipped.append({"path": entry.path, "reason": str(exc)})
    sources.sort(key=lambda pair: pair[0])
    truth = rebuild_truth(sources)
    path = truth_path(port)
    async with hold(port):
        now = datetime.now(port.tz).isoformat(timespec="seconds")
        await port.save(path, truth.render(now))
    answer = (
        f"Rebuilt {path} from {len(sources)} interests file(s): "
        f"{len(truth.topics)} open topic(s), {len(truth.resolved)} resolved"
    )
    if skipped:
        answer += "\nSkipped (unreadable): " + ", ".join(
            str(s["path"]) for s in skipped if isinstance(s, dict)
        )
    return Outcome(
        answer,
        {
            "path": path,
            "sources": [f"{daily}/{day}/interests.yaml" for day, _ in sources],
            "topics": [*sorted(truth.topics)],
            "resolved": [*sorted(truth.resolved)],
            "skipped": skipped,
        },
    )

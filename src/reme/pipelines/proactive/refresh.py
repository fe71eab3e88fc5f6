"""Proactive refresh (docs/spec.md §13.1): extract → topics → plan → agenda → finish, over a `MemoryPort`.

Each stage is one function over a `Refresh` the job's steps pass along. Nothing is written before
finish: no changed daily Markdown means no model call and no file; a failed stage (no model, an
unusable reply, a malformed truth source) leaves every file and the catalog as they were. Finish
writes the truth source, the day's `interests.yaml` and the catalog, each atomically (the day
page is left alone: its block lists cards only, so a refresh never makes the next dream rescan it), holding the `proactive` lock; a resolve that landed during the run is kept.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from datetime import date, datetime

from reme.errors import ReMeError
from reme.jsontypes import JSONObject
from reme.pipelines.memory.daily_changes import checkpoint
from reme.pipelines.outcome import AddUsage
from reme.pipelines.port import FileText, MemoryPort
from reme.pipelines.proactive.calls import AgendaReply, ExtractReply, ModelCalls, PlanItem, PlanReply
from reme.pipelines.proactive.files import RESOLVED, Tombstone, TruthSource, render_interests
from reme.pipelines.proactive.material import Material, gather
from reme.pipelines.proactive.merge import (
    Selection,
    TopicRules,
    apply_extraction,
    carried,
    held,
    select,
    title_similarity,
)
from reme.pipelines.proactive.store import hold, load_truth, truth_path
from reme.pipelines.proactive.topics import Topic, workspace_path

DEFAULT_SCENARIO = {"follow_up": "resume_task", "interest_extend": "extend_interest"}


@dataclass(frozen=True)
class ExtractSettings:
    scan_days: int = 2
    carry_forward_days: int = 14
    max_carry_forward_topics: int = 20
    llm_timeout_seconds: float = 300
    max_chars_per_file: int = 60_000
    max_total_chars: int = 300_000

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
                raise ReMeError(
                    f"proactive_extract_step: {name} must be a number of at least 1, not {value!r}"
                )


@dataclass
class Refresh:
    """One refresh run as it moves through the stages."""

    port: MemoryPort
    day: date
    settings: ExtractSettings
    calls: ModelCalls
    truth: TruthSource
    truth_file: FileText | None
    material: Material
    lock: AsyncExitStack
    extracted: ExtractReply | None = None
    similarity: str = "lexical"  # how found topics were matched to known ones
    selection: Selection = field(default_factory=Selection)
    pushed: list[Topic] = field(default_factory=list)
    plans: dict[str, PlanItem] = field(default_factory=dict)
    agenda: list[JSONObject] = field(default_factory=list)

    @property
    def done(self) -> bool:
        """Nothing changed: the later stages do nothing and nothing is written."""
        return not self.material.shown

    @property
    def interests_path(self) -> str:
        return f"{self.port.folder('daily')}/{self.day.isoformat()}/interests.yaml"

    def metadata(self) -> JSONObject:
        return {
            "date": self.day.isoformat(),
            "changed": [e.path for e in self.material.changed],
            "llm_calls": self.calls.count,
            "topics": [t.to_exposure() for t in self.pushed],
            "pushed": [t.id for t in self.pushed],
            "path": None if self.done else self.interests_path,
            "suppressed": [*self.selection.suppressed],
            "resolved": [*self.selection.resolved],
            "expired": [*self.selection.expired],
            "omitted": [*self.material.omitted],
            "skipped": [{**row} for row in self.material.skipped],
            "topic_similarity": self.similarity,
        }


# extract -------------------------------------------------------------------------------------------


def _known_lines(topics: list[Topic]) -> str:
    if not topics:
        return "(none)"
    return "\n".join(
        f"- {t.id} | {t.kind} | {t.confidence:.2f} | {t.last_evidence_at} | {t.title} — {t.reason}"
        for t in topics
    )


async def prepare(
    port: MemoryPort,
    day: date,
    settings: ExtractSettings,
    add_usage: AddUsage,
    catalog: str = "proactive",
) -> Refresh:
    """Take the run's lock, read the truth source (refusing a malformed one) and what changed.

    The `proactive_refresh` lock is held until `release`: a second refresh (the cron and a one-shot in
    another process) answers at once that one is in progress, instead of asking the model twice.
    """
    lock = AsyncExitStack()
    await lock.enter_async_context(port.exclusive("proactive_refresh"))
    try:
        truth, truth_file = await load_truth(port)
        material = await gather(
            port,
            day,
            catalog=catalog,
            scan_days=int(settings.scan_days),
            max_chars_per_file=int(settings.max_chars_per_file),
            max_total_chars=int(settings.max_total_chars),
        )
    except BaseException:
        await lock.aclose()
        raise
    calls = ModelCalls(port, timeout=float(settings.llm_timeout_seconds), add_usage=add_usage)
    return Refresh(port, day, settings, calls, truth, truth_file, material, lock)


async def release(run: Refresh) -> None:
    """Let the next refresh start (after finish, or when a stage failed); safe to call twice."""
    await run.lock.aclose()


async def extract(run: Refresh) -> None:
    """When something changed, ask the model for topics (once more on an unusable reply)."""
    if run.done:
        return
    port, day, settings, material, truth = run.port, run.day, run.settings, run.material, run.truth
    port.model("memory")  # no model: fail here, naming the setting, before anything is asked or written
    rules = TopicRules(carry_forward_days=int(settings.carry_forward_days))
    known = carried(truth, day, rules, int(settings.max_carry_forward_topics))
    cut = material.cut + material.omitted
    variables = {
        "date": day.isoformat(),
        "window": f"{material.window[0]}..{material.window[-1]}",
        "known_topics": _known_lines(known),
        "max_topics": 30,
        "cut_note": f"Cut to fit: {', '.join(cut)} (marked where cut).\n" if cut else "",
        "material": material.text,
        "evidence_path": material.shown[0],
    }
    run.extracted = await run.calls.ask("extract", ExtractReply, variables, attempts=2)


# topics --------------------------------------------------------------------------------------------


async def topics(run: Refresh, rules: TopicRules) -> None:
    """Fold the extraction into the truth source (in memory) and choose the push candidates."""
    if run.done or run.extracted is None:
        return
    rules = replace(rules, carry_forward_days=int(run.settings.carry_forward_days))  # one window for both
    known: list[Topic | Tombstone] = [*run.truth.topics.values(), *run.truth.resolved.values()]
    titles = list(dict.fromkeys([*(f.title for f in run.extracted.topics), *(t.title for t in known)]))
    embedded = await run.port.embed(titles) if titles and known else None
    similar, threshold, run.similarity = title_similarity(rules, embedded, titles)
    apply_extraction(
        run.truth,
        run.extracted,
        day=run.day,
        shown=run.material.shown,
        threshold=threshold,
        selection=run.selection,
        similar=similar,
    )
    select(run.truth, day=run.day, rules=rules, exists=run.port.exists, selection=run.selection)
    run.pushed = list(run.selection.candidates)


# plan and agenda -----------------------------------------------------------------------------------


def _candidate_lines(topics: list[Topic]) -> str:
    return "\n".join(
        f"- {t.id} | {t.kind} | {t.confidence:.2f} — {t.title}: {t.reason} (evidence: {', '.join(t.paths[:5])})"
        for t in topics
    )


async def plan(run: Refresh) -> None:
    """One call when there are candidates: how to raise each; the plan may hold one back."""
    if run.done or not run.pushed:
        return
    variables = {
        "date": run.day.isoformat(),
        "candidates": _candidate_lines(run.pushed),
        "material": run.material.text_of({p for t in run.pushed for p in t.paths})
        or "(see the reasons above)",
        "evidence_path": run.pushed[0].evidence,
    }
    reply = await run.calls.ask("plan", PlanReply, variables)
    ids = {t.id for t in run.pushed}
    for item in reply.plans:
        if item.topic_id in ids and item.topic_id not in run.plans:
            run.plans[item.topic_id] = item
    kept = []
    for topic in run.pushed:
        plan = run.plans.get(topic.id)
        if plan is not None and not plan.push:
            run.selection.suppressed.append(held(topic, f"held back by plan: {plan.hold_reason.strip()}"))
        else:
            kept.append(topic)
    run.pushed = kept


def _agenda_item(run: Refresh, topic: Topic, order_reason: str) -> JSONObject:
    item = run.plans.get(topic.id)
    paths = (workspace_path(p) for p in (item.linked_memory if item else []))
    linked = [p for p in dict.fromkeys(paths) if p and run.port.exists(p)]
    return {
        "topic_id": topic.id,
        "title": topic.title,
        "scenario_type": (item.scenario_type.strip() if item else "") or DEFAULT_SCENARIO[topic.kind],
        "opener": (item.opener.strip() if item else "") or topic.reason,
        "next_action": item.next_action.strip() if item else "",
        "preconditions": [p.strip() for p in item.preconditions if p.strip()] if item else [],
        "delivery": (item.delivery.strip() if item else "") or "in_conversation",
        "linked_memory": [*linked],
        "order_reason": order_reason.strip() or (item.why_now.strip() if item else ""),
    }


async def agenda(run: Refresh) -> None:
    """One call when more than one topic is pushed: the order to raise them in."""
    if run.done or not run.pushed:
        return
    reasons: dict[str, str] = {}
    order = list(run.pushed)
    if len(run.pushed) > 1:
        drafts = [_agenda_item(run, t, "") for t in run.pushed]
        planned = "\n".join(
            f"- {d['topic_id']} — {d['title']}: {d['opener']}; {d['next_action']}" for d in drafts
        )
        reply = await run.calls.ask(
            "agenda",
            AgendaReply,
            {"date": run.day.isoformat(), "planned": planned, "evidence_path": run.pushed[0].evidence},
        )
        by_id = {t.id: t for t in run.pushed}
        for slot in reply.order:
            if slot.topic_id in by_id and slot.topic_id not in reasons:
                reasons[slot.topic_id] = slot.order_reason
        ranked = [by_id[i] for i in reasons]
        order = ranked + [t for t in run.pushed if t.id not in reasons]  # the model left these out
    run.pushed = order
    run.agenda = [_agenda_item(run, t, reasons.get(t.id, "")) for t in order]


# finish --------------------------------------------------------------------------------------------


def _now(port: MemoryPort) -> str:
    return datetime.now(port.tz).isoformat(timespec="seconds")


def _keep_resolutions(run: Refresh, fresh: TruthSource) -> None:
    """Resolutions written while this run asked the model (proactive_resolve) win over the run."""
    for topic_id, tombstone in fresh.resolved.items():
        if topic_id in run.truth.resolved or topic_id in run.selection.reopened:
            continue
        run.truth.topics.pop(topic_id, None)
        run.truth.resolved[topic_id] = tombstone
        if any(t.id == topic_id for t in run.pushed):
            run.pushed = [t for t in run.pushed if t.id != topic_id]
            run.agenda = [a for a in run.agenda if a["topic_id"] != topic_id]
            run.selection.suppressed.append(held(tombstone, f"{RESOLVED} on {tombstone.resolved_at}"))


async def finish(run: Refresh, catalog: str = "proactive") -> None:
    """Write the truth source and the day's exposure, then advance the catalog."""
    if run.done:
        return
    port = run.port
    day = run.day.isoformat()
    async with hold(port):
        fresh, fresh_file = await load_truth(port)
        if (fresh_file and fresh_file.sha256) != (run.truth_file and run.truth_file.sha256):
            _keep_resolutions(run, fresh)
        now = _now(port)
        expected = fresh_file.sha256 if fresh_file else None
        await port.save(truth_path(port), run.truth.render(now), expected_sha256=expected)
        text = render_interests(day, now, run.pushed, run.agenda, run.selection.suppressed)
        await port.save(run.interests_path, text)
        read = set(run.material.shown)
        checkpoint(port, catalog, [e for e in run.material.changed if e.path in read])  # as they were read


def summary(run: Refresh) -> str:
    """The readable answer of a refresh: what was pushed and what was held back."""
    window = f"{run.material.window[0]}..{run.material.window[-1]}"
    if run.done:
        return f"No changed daily notes in {window}: nothing to refresh (no LLM call, no file written)."
    lines = [
        f"Wrote {run.interests_path}: {len(run.pushed)} topic(s) pushed, "
        f"{len(run.selection.suppressed)} held back, {run.calls.count} LLM call(s)."
    ]
    lines += [f"- {t.id} {t.title} ({t.kind}, {t.confidence:.2f})" for t in run.pushed]
    lines += [f"  held back: {s['id']} {s['title']} — {s['reason']}" for s in run.selection.suppressed]
    return "\n".join(lines)

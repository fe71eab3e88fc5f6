"""Proactive refresh (docs/spec.md §13.1): extract → topics → plan → agenda → finish, over a `MemoryPort`.

Each stage is one function over a `Refresh` the job's steps pass along. Nothing is written before
finish: no changed daily Markdown means no model call and no file; a failed stage (no model, an
unusable reply, a malformed truth source) leaves every file and the catalog as they were. Finish
writes the truth source and the day's `interests.yaml` together (all or nothing, each compared with
the version it decided on), then the catalog (the day page is left alone: its block lists cards
only, so a refresh never makes the next dream rescan it), holding the `proactive` lock. What a
person or `proactive_resolve` changed in those files while the run asked the model is kept, never
overwritten: such a topic keeps its entry as it is now, such an `interests.yaml` is not rewritten,
and the run's `edits_during_run` says so.
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
from reme.pipelines.proactive.calls import (
    MAX_FOUND,
    AgendaReply,
    ExtractReply,
    ModelCalls,
    PlanItem,
    PlanReply,
)
from reme.pipelines.proactive.files import RESOLVED, Tombstone, TruthSource, parse_truth, render_interests
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
from reme.workspace.paths import is_markdown
from reme.workspace.transaction import Change

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
    interests_read: FileText | None = None  # the day's `interests.yaml` when the run started
    extracted: ExtractReply | None = None
    similarity: str = "lexical"  # how found topics were matched to known ones
    rules: TopicRules = field(default_factory=TopicRules)  # the push rules the topics stage applied
    selection: Selection = field(default_factory=Selection)
    pushed: list[Topic] = field(default_factory=list)
    plans: dict[str, PlanItem] = field(default_factory=dict)
    agenda: list[JSONObject] = field(default_factory=list)
    linked: dict[str, list[str]] = field(default_factory=dict)  # topic id -> its accepted linked_memory
    dropped_links: list[JSONObject] = field(default_factory=list)  # {topic_id, path, reason}
    edits_during_run: list[JSONObject] = field(default_factory=list)  # {path, reason}

    @property
    def done(self) -> bool:
        """Nothing changed: the later stages do nothing and nothing is written."""
        return not self.material.shown

    @property
    def interests_path(self) -> str:
        return _interests_path(self.port, self.day)

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
            "dropped_links": [{**row} for row in self.dropped_links],
            "edits_during_run": [{**row} for row in self.edits_during_run],
        }


def _interests_path(port: MemoryPort, day: date) -> str:
    return f"{port.folder('daily')}/{day.isoformat()}/interests.yaml"


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
        interests_read = await port.load(_interests_path(port, day))
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
    return Refresh(port, day, settings, calls, truth, truth_file, material, lock, interests_read)


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
        "max_topics": MAX_FOUND,
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
    run.rules = rules
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


def _link_refusal(port: MemoryPort, path: str) -> str | None:
    """Why a planned `linked_memory` path is not one of the workspace's notes; None when it is one.

    The agent that raises the topic opens these: only existing Markdown notes, never derived state
    (`metadata/`), hidden folders (`.git/`) or anything the workspace's path gate refuses — by the
    name given and by the file it is, once symbolic links are resolved.
    """
    refusal = _not_a_note(port, path)
    if refusal is not None:
        return refusal
    try:
        port.check_path(path)
        target = port.real_path(path)
    except ValueError as exc:
        return str(exc)
    refusal = _not_a_note(port, target) if target != path else None
    if refusal is not None:
        return f"a symbolic link to {target}: {refusal}"
    return None if port.exists(path) else "no such file"


def _not_a_note(port: MemoryPort, path: str) -> str | None:
    """Why a workspace-relative path cannot name a note by where it lies; None when it can."""
    parts = path.split("/")
    if not is_markdown(path):
        return "not a Markdown note"
    if parts[0].casefold() == port.folder("metadata").casefold() or any(p.startswith(".") for p in parts):
        return f"not a note: {port.folder('metadata')}/ and hidden folders such as .git/ hold none"
    return None


def _linked(run: Refresh, topic_id: str) -> list[str]:
    """The plan's linked notes of a topic that are notes of the workspace; the others are reported once."""
    if topic_id not in run.linked:
        item = run.plans.get(topic_id)
        accepted = []
        for text in dict.fromkeys(item.linked_memory if item else []):
            path = workspace_path(text)
            refusal = _link_refusal(run.port, path) if path else "not a workspace-relative path"
            if path and refusal is None:
                accepted.append(path)
            else:
                run.dropped_links.append({"topic_id": topic_id, "path": text, "reason": refusal or ""})
        run.linked[topic_id] = list(dict.fromkeys(accepted))
    return run.linked[topic_id]


def _agenda_item(run: Refresh, topic: Topic, order_reason: str) -> JSONObject:
    item = run.plans.get(topic.id)
    return {
        "topic_id": topic.id,
        "title": topic.title,
        "scenario_type": (item.scenario_type.strip() if item else "") or DEFAULT_SCENARIO[topic.kind],
        "opener": (item.opener.strip() if item else "") or topic.reason,
        "next_action": item.next_action.strip() if item else "",
        "preconditions": [p.strip() for p in item.preconditions if p.strip()] if item else [],
        "delivery": (item.delivery.strip() if item else "") or "in_conversation",
        "linked_memory": [*_linked(run, topic.id)],
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


def _entries(truth: TruthSource) -> dict[str, JSONObject]:
    """Every topic id of a truth source with its entry as written (all keys a person may edit)."""
    entries: dict[str, JSONObject] = {
        i: {"open": {**t.to_exposure(), **t.extra}} for i, t in truth.topics.items()
    }
    for i, tombstone in truth.resolved.items():
        entries[i] = {**entries.get(i, {}), "resolved": tombstone.to_dict()}
    return entries


def _keep_edits(run: Refresh, read: TruthSource, fresh: TruthSource) -> list[str]:
    """Topics changed in the truth source since the run read it keep the version there now; their ids.

    Per topic id, three ways: what the run read, what it would write, what is there now. An entry a
    person (or `proactive_resolve`) changed, added or removed meanwhile wins over the run's; the run's
    own changes to every other topic stand.
    """
    before, now = _entries(read), _entries(fresh)
    edited = sorted(i for i in before.keys() | now.keys() if before.get(i) != now.get(i))
    for topic_id in edited:
        run.truth.topics.pop(topic_id, None)
        run.truth.resolved.pop(topic_id, None)
        if topic_id in fresh.topics:
            run.truth.topics[topic_id] = fresh.topics[topic_id]
        if topic_id in fresh.resolved:
            run.truth.resolved[topic_id] = fresh.resolved[topic_id]
        _repush(run, topic_id)
    run.selection.resolved = [i for i in run.selection.resolved if i in run.truth.resolved]
    run.selection.expired = [i for i in run.selection.expired if i not in run.truth.topics]
    return edited


def _repush(run: Refresh, topic_id: str) -> None:
    """A pushed topic whose entry was changed during the run: shown as it is now when the push rules
    still let it through (a person may have lowered its confidence), held back otherwise."""
    if not any(t.id == topic_id for t in run.pushed):
        return
    topic = run.truth.topics.get(topic_id)
    if topic is not None:
        hold_reason = _push_refusal(run, topic)
        if hold_reason is None:
            run.pushed = [topic if t.id == topic_id else t for t in run.pushed]
            return
        reason = f"{hold_reason} (edited during the refresh)"
    else:
        tombstone = run.truth.resolved.get(topic_id)
        reason = (
            f"{RESOLVED} on {tombstone.resolved_at}"
            if tombstone
            else f"removed from {truth_path(run.port)} during the refresh"
        )
    gone = next(t for t in run.pushed if t.id == topic_id)
    run.pushed = [t for t in run.pushed if t.id != topic_id]
    run.agenda = [a for a in run.agenda if a["topic_id"] != topic_id]
    run.selection.suppressed.append(held(run.truth.resolved.get(topic_id) or topic or gone, reason))


def _push_refusal(run: Refresh, topic: Topic) -> str | None:
    """Why the run's push rules hold `topic` back as it is now; None when they let it through.

    The topics stage's own rules, applied to this one topic (its entry in the truth source is left as it is).
    """
    selection = Selection()
    select(
        TruthSource(topics={topic.id: topic}),
        day=run.day,
        rules=run.rules,
        exists=run.port.exists,
        selection=selection,
    )
    if selection.candidates:
        return None
    if selection.suppressed:
        return str(selection.suppressed[0]["reason"])
    window = run.rules.carry_forward_days
    return f"no evidence file within carry_forward_days ({window}) of {run.day.isoformat()}"


async def _merge_truth(run: Refresh) -> FileText | None:
    """The truth source as it is now, with the edits made to it during the run folded into the run's."""
    path = truth_path(run.port)
    fresh, fresh_file = await load_truth(run.port)
    if (fresh_file and fresh_file.sha256) == (run.truth_file and run.truth_file.sha256):
        return fresh_file
    read = parse_truth(run.truth_file.content, path) if run.truth_file else TruthSource()
    edited = _keep_edits(run, read, fresh)
    reason = (
        f"changed during the refresh: kept the entries of {', '.join(edited)} as they are now"
        if edited
        else "changed during the refresh in no topic entry (comments and layout are not kept): rewritten"
    )
    run.edits_during_run.append({"path": path, "reason": reason})
    return fresh_file


async def _interests_change(run: Refresh, text: str) -> Change | None:
    """The day's exposure to write; None when a person changed the file during the run (it is kept)."""
    now = await run.port.load(run.interests_path)
    was = run.interests_read
    if now is not None and (was is None or now.sha256 != was.sha256):
        reason = "changed during the refresh: left as it is now, not rewritten"
        run.edits_during_run.append({"path": run.interests_path, "reason": reason})
        return None
    return Change(run.interests_path, text, now.sha256 if now else None)


async def finish(run: Refresh, catalog: str = "proactive") -> None:
    """Write the truth source and the day's exposure together, then advance the catalog."""
    if run.done:
        return
    port = run.port
    async with hold(port):
        fresh_file = await _merge_truth(run)
        now = _now(port)
        truth = Change(truth_path(port), run.truth.render(now), fresh_file.sha256 if fresh_file else None)
        text = render_interests(run.day.isoformat(), now, run.pushed, run.agenda, run.selection.suppressed)
        interests = await _interests_change(run, text)
        await port.commit([truth, *([interests] if interests else [])])
        read = set(run.material.shown)
        checkpoint(port, catalog, [e for e in run.material.changed if e.path in read])  # as they were read


def summary(run: Refresh) -> str:
    """The readable answer of a refresh: what was pushed and what was held back."""
    window = f"{run.material.window[0]}..{run.material.window[-1]}"
    if run.done:
        return f"No changed daily notes in {window}: nothing to refresh (no LLM call, no file written)."
    kept = any(edit["path"] == run.interests_path for edit in run.edits_during_run)
    lines = [
        f"{'Kept' if kept else 'Wrote'} {run.interests_path}: {len(run.pushed)} topic(s) pushed, "
        f"{len(run.selection.suppressed)} held back, {run.calls.count} LLM call(s)."
    ]
    lines += [f"- {t.id} {t.title} ({t.kind}, {t.confidence:.2f})" for t in run.pushed]
    lines += [f"  held back: {s['id']} {s['title']} — {s['reason']}" for s in run.selection.suppressed]
    lines += [f"{edit['path']} {edit['reason']}" for edit in run.edits_during_run]
    return "\n".join(lines)

"""Steps of the capture jobs (`capture_status`, `capture_retry`, `capture_drop`) and of
`recent_errors`: what the status view shows of queued captures and failed job runs, and the two
things a user does about a failed capture (docs/capture-safety.md, docs/studio.md)."""

from __future__ import annotations

from reme.app import captures
from reme.app.jobs import JobContext, JobError
from reme.app.recent_errors import recent_errors
from reme.app.registry import register_step
from reme.jsontypes import JSONObject


def _queued(workspace: str, queued: captures.Queued) -> JSONObject:
    entry: JSONObject = {
        "session_id": queued.session_id,
        "transcript_path": queued.transcript_path,
        "source": queued.source,
        "age_s": queued.age_s,
        "drop": captures.drop_command(workspace, queued.session_id),
    }
    if queued.failure is not None:
        entry.update(reason=queued.failure.reason, at=queued.failure.at, attempts=queued.failure.attempts)
    return entry


@register_step("capture_status")
def capture_status(ctx: JobContext) -> None:
    """Failed and pending captures (with how to retry or drop each) and sessions saved with damaged
    records skipped; the metadata holds every entry, the answer a readable summary."""
    workspace = str(ctx.app.workspace_dir)
    state = captures.capture_state(workspace)
    retry = captures.retry_command(workspace)
    lines = []
    for queued in state.failed:
        assert queued.failure is not None
        lines.append(
            f"failed: session {queued.session_id} ({queued.failure.attempts} attempt(s), last at "
            f"{queued.failure.at}): {queued.failure.reason}"
        )
    for queued in state.pending:
        late = " — not picked up, retry it" if queued.age_s > captures.STALE_CAPTURE_SECONDS else ""
        lines.append(f"pending: session {queued.session_id}, queued {int(queued.age_s)} s ago{late}")
    for damaged in state.damaged:
        counts = ", ".join(f"{n} {reason}" for reason, n in sorted(damaged.skipped.items()))
        lines.append(f"saved with records skipped: session {damaged.session_id} ({counts})")
    if state.failed or state.stale():
        lines.append(
            f"retry with `{retry}` (or the capture_retry job); give one up with `reme hook drop "
            f"session_id=<id> workspace_dir={workspace}` (or capture_drop)"
        )
    ctx.response.answer = "\n".join(lines) or "every capture is saved; none is queued"
    ctx.response.metadata.update(
        failed=[_queued(workspace, q) for q in state.failed],
        pending=[_queued(workspace, q) for q in state.pending],
        stale=len(state.stale()),
        damaged=[{"session_id": d.session_id, "skipped": dict(d.skipped)} for d in state.damaged],
        retry=retry,
    )


@register_step("capture_retry")
async def capture_retry(ctx: JobContext) -> None:
    """Save the queued captures now (failed ones too), or only `session_id`'s, in this process."""
    from filelock import Timeout

    workspace = str(ctx.app.workspace_dir)
    only = ctx.params.get("session_id") or None
    if only is not None and not _is_queued(workspace, only):
        raise JobError(f"no capture of session {only!r} is queued; capture_status lists the queued ones")
    lock = captures.drain_lock(workspace)
    try:
        lock.acquire()
    except Timeout:
        raise JobError("a drain is saving the queued captures right now; look again in a moment") from None
    try:
        report = await captures.drain_in_app(ctx.app, workspace, only)
    finally:
        lock.release()
    parts = [f"{len(report.saved)} capture(s) saved"] + [
        f"session {session} failed again: {reason}" for session, reason in report.failed.items()
    ]
    ctx.response.answer = "; ".join(parts)
    ctx.response.metadata.update(saved=list(report.saved), failed=dict(report.failed))
    if report.failed:
        raise JobError(ctx.response.answer, {"saved": list(report.saved), "failed": dict(report.failed)})


def _is_queued(workspace: str, session_id: str) -> bool:
    return captures.plain_session_id(session_id) and any(
        path == captures.marker_path(workspace, session_id) for path, _ in captures.markers(workspace)
    )


@register_step("capture_drop")
def capture_drop(ctx: JobContext) -> None:
    """Give up a queued capture: its marker and failure note go; the transcript itself is untouched."""
    session_id = ctx.params["session_id"]
    if not captures.drop(str(ctx.app.workspace_dir), session_id):
        raise JobError(
            f"no capture of session {session_id!r} is queued; capture_status lists the queued ones"
        )
    ctx.response.answer = f"dropped the capture of {session_id}; its transcript was not saved further"
    ctx.response.metadata["dropped"] = session_id


@register_step("recent_errors")
def recent_errors_step(ctx: JobContext) -> None:
    """The newest failed job runs of this process (time, job, message), newest first."""
    failures = recent_errors(ctx.app).newest(ctx.params["limit"])
    ctx.response.answer = (
        "\n".join(f"{f.at} {f.job}: {f.message.splitlines()[0] if f.message else ''}" for f in failures)
        or "no job failed since the service started"
    )
    ctx.response.metadata["errors"] = [f.to_dict() for f in failures]

"""Digest job steps (docs/spec.md §12.1, 12.3): thin adapters over `reme.workspace.digest_writing` and buckets.

Step settings set the caps (`max_text_bytes`).
"""

from __future__ import annotations

from reme.app.components.digest import buckets_of
from reme.app.components.index import link_source
from reme.app.components.workspace import workspace_of
from reme.app.jobs import JobContext
from reme.app.registry import register_step, settings_of
from reme.workspace import digest_writing
from reme.workspace.buckets import buckets_page
from reme.workspace.textio import Limits


@register_step("digest_write", settings=Limits)
def digest_write(ctx: JobContext, **settings: object) -> None:
    p = ctx.params
    result = digest_writing.digest_write(
        workspace_of(ctx.app),
        link_source(ctx.app),
        [bucket.name for bucket in buckets_of(ctx.app)],
        p["path"],
        p["content"],
        p.get("name"),
        p.get("description"),
        p.get("metadata"),
        settings_of(Limits, "digest_write", settings),
    )
    ctx.response.answer = f"Created {result['path']}"
    ctx.response.metadata.update(result)


@register_step("digest_edit", settings=Limits)
def digest_edit(ctx: JobContext, **settings: object) -> None:
    p = ctx.params
    result = digest_writing.digest_edit(
        workspace_of(ctx.app),
        link_source(ctx.app),
        p["path"],
        p["old"],
        p["new"],
        p.get("expected_sha256"),
        settings_of(Limits, "digest_edit", settings),
    )
    ctx.response.answer = f"Replaced {result['count']} occurrence(s) in {result['path']}"
    ctx.response.metadata.update(result)


@register_step("digest_buckets")
def digest_buckets(ctx: JobContext) -> None:
    buckets = buckets_of(ctx.app)
    ctx.response.answer = buckets_page(buckets, workspace_of(ctx.app).folder("digest"))
    ctx.response.metadata["buckets"] = [bucket.to_dict() for bucket in buckets]

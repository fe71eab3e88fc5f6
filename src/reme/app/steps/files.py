"""File job steps (docs/spec.md §7): thin adapters from job parameters to `reme.workspace.{reading,writing,moving}`.

Step settings in the job config set the caps (`max_text_bytes`, `page_lines`, `page_chars`,
`max_image_bytes`).
"""

from __future__ import annotations

from typing import Any

import orjson

from reme.app.components.index import IndexComponent, index_service, link_source
from reme.app.components.workspace import workspace_of
from reme.app.jobs import JobContext, JobError
from reme.app.registry import register_step
from reme.workspace import moving, reading, writing
from reme.workspace.textio import Limits
from reme.workspace.writing import ConflictError


def _limits(settings: dict[str, Any]) -> Limits:
    return Limits(**settings)


def _say_if_unindexed(ctx: JobContext, path: str) -> None:
    """A note written where search never looks must not look as if it were remembered."""
    if not isinstance(ctx.app.components.get("index"), IndexComponent):
        return
    reason = index_service(ctx.app).unindexed_reason(path)
    ctx.response.metadata["indexed"] = reason is None
    if reason is not None:
        ctx.response.metadata["not_indexed_reason"] = reason
        ctx.response.answer += f"; it will not be indexed (search will not find it): {reason}"


@register_step("read", settings=Limits)
def read(ctx: JobContext, **settings: Any) -> None:
    p = ctx.params
    result = reading.read(
        workspace_of(ctx.app), p["path"], p.get("start_line"), p.get("end_line"), _limits(settings)
    )
    ctx.response.answer = result.pop("text")
    ctx.response.metadata.update(result)


@register_step("read_image", settings=Limits)
def read_image(ctx: JobContext, **settings: Any) -> None:
    result = reading.read_image(workspace_of(ctx.app), ctx.params["path"], _limits(settings))
    ctx.response.answer = result.pop("data")
    ctx.response.metadata.update(result)


@register_step("write", settings=Limits)
def write(ctx: JobContext, **settings: Any) -> None:
    p = ctx.params
    ws = workspace_of(ctx.app)
    result = writing.write(
        ws,
        link_source(ctx.app),
        p["path"],
        p["content"],
        p.get("name"),
        p.get("description"),
        p.get("metadata"),
        _limits(settings),
    )
    ctx.response.answer = _write_answer(result)
    ctx.response.metadata.update(result)
    _say_if_unindexed(ctx, result["path"])


def _write_answer(result: dict[str, Any]) -> str:
    """Created, unchanged, or replaced with the old size and where the previous version is kept."""
    if result["created"]:
        return f"Created {result['path']}"
    if result.get("unchanged"):
        return f"Unchanged {result['path']} (it already held these {result['size']} bytes)"
    return (
        f"Replaced {result['path']} (was {result['previous_size']} bytes, now {result['size']}); "
        f"the previous version is kept at {result['previous_version']}"
    )


@register_step("edit", settings=Limits)
def edit(ctx: JobContext, **settings: Any) -> None:
    p = ctx.params
    result = writing.edit(
        workspace_of(ctx.app), link_source(ctx.app), p["path"], p["old"], p["new"], _limits(settings)
    )
    ctx.response.answer = f"Replaced {result['count']} occurrence(s) in {result['path']}"
    ctx.response.metadata.update(result)


@register_step("delete")
def delete(ctx: JobContext) -> None:
    result = moving.delete(workspace_of(ctx.app), link_source(ctx.app), ctx.params["path"])
    answer = f"Deleted {result['path']}"
    if result["inbound"]:
        sources = ", ".join(sorted({entry["source_path"] for entry in result["inbound"]}))
        answer += f"; {len(result['inbound'])} link(s) still point at it, from: {sources}"
    ctx.response.answer = answer
    ctx.response.metadata.update(result)


@register_step("move")
def move(ctx: JobContext) -> None:
    p = ctx.params
    result = moving.move(
        workspace_of(ctx.app),
        link_source(ctx.app),
        p["src"],
        p["dst"],
        p["retarget"],
        p["overwrite"],
    )
    ctx.response.answer = (
        f"Moved {result['src']} to {result['dst']}; retargeted {result['retargeted_links']} link(s) "
        f"in {len(result['retargeted_files'])} file(s)"
    )
    ctx.response.metadata.update(result)


@register_step("list")
def list_(ctx: JobContext) -> None:
    p = ctx.params
    result = reading.list_dir(
        workspace_of(ctx.app),
        p["path"],
        p["recursive"],
        p.get("extensions"),
        p["sort_by"],
        p.get("limit"),
    )
    lines = [entry["path"] + ("/" if entry["type"] == "dir" else "") for entry in result["entries"]]
    if result["truncated"]:
        lines.append(f"... {result['total'] - len(result['entries'])} more")
    ctx.response.answer = "\n".join(lines)
    ctx.response.metadata.update(result)


@register_step("stat", settings=Limits)
def stat(ctx: JobContext, **settings: Any) -> None:
    result = reading.stat(workspace_of(ctx.app), link_source(ctx.app), ctx.params["path"], _limits(settings))
    ctx.response.answer = orjson.dumps(result).decode()
    ctx.response.metadata.update(result)


@register_step("frontmatter_read", settings=Limits)
def frontmatter_read(ctx: JobContext, **settings: Any) -> None:
    result = reading.frontmatter_read(workspace_of(ctx.app), ctx.params["path"], _limits(settings))
    ctx.response.answer = result.get("error") or orjson.dumps(result["front_matter"]).decode()
    ctx.response.metadata.update(result)


@register_step("frontmatter_update", settings=Limits)
def frontmatter_update(ctx: JobContext, **settings: Any) -> None:
    p = ctx.params
    result = writing.frontmatter_update(
        workspace_of(ctx.app), link_source(ctx.app), p["path"], p["metadata"], _limits(settings)
    )
    ctx.response.answer = f"Updated the front matter of {result['path']}"
    ctx.response.metadata.update(result)


@register_step("frontmatter_delete", settings=Limits)
def frontmatter_delete(ctx: JobContext, **settings: Any) -> None:
    p = ctx.params
    result = writing.frontmatter_delete(
        workspace_of(ctx.app), link_source(ctx.app), p["path"], p["keys"], _limits(settings)
    )
    ctx.response.answer = f"Deleted {len(result['deleted'])} key(s) from {result['path']}"
    ctx.response.metadata.update(result)


@register_step("load", settings=Limits)
def load(ctx: JobContext, **settings: Any) -> None:
    result = reading.load(workspace_of(ctx.app), ctx.params["path"], _limits(settings))
    ctx.response.answer = result["content"]
    ctx.response.metadata.update(result)


@register_step("save", settings=Limits)
def save(ctx: JobContext, **settings: Any) -> None:
    p = ctx.params
    try:
        result = writing.save(
            workspace_of(ctx.app),
            link_source(ctx.app),
            p["path"],
            p["content"],
            p.get("expected_mtime"),
            p.get("expected_sha256"),
            _limits(settings),
        )
    except ConflictError as exc:
        raise JobError(str(exc), {"conflict": True, **exc.current}) from None
    ctx.response.answer = f"Saved {result['path']}"
    ctx.response.metadata.update(result)
    _say_if_unindexed(ctx, result["path"])

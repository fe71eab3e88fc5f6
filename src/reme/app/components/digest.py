"""The `digest` component: the configured bucket set, checked at start, and its generated page.

On start it reads `digest.buckets` (adding the mandatory `unknown`; a bad entry is a config error
naming its key) and brings `digest/_buckets.md` up to date, rewriting it only when its text changes.
"""

from __future__ import annotations

import asyncio

from reme.app.component import Component, Host, Report
from reme.app.components.workspace import workspace_of
from reme.app.config import ConfigError
from reme.app.registry import register_component
from reme.workspace.buckets import Bucket, parse_buckets, write_buckets_page


@register_component("digest")
class DigestComponent(Component):
    kind = "digest"
    requires = ("workspace",)

    def __init__(self, app: Host, name: str) -> None:
        super().__init__(app, name)
        self.buckets = buckets_of(app)

    async def start(self) -> None:
        # No index sync here: the index reconciles with the disk on its first use in this process.
        await asyncio.to_thread(write_buckets_page, workspace_of(self.app), self.buckets)

    def health(self) -> Report:
        return {"status": "ok", "buckets": [bucket.name for bucket in self.buckets]}


def buckets_of(app: Host) -> tuple[Bucket, ...]:
    """The started component's buckets, else the config's (checked the same way)."""
    component = app.components.find("digest", DigestComponent)
    if component is not None:
        return component.buckets
    section = app.config.get("digest")
    try:
        return parse_buckets(section.get("buckets") if isinstance(section, dict) else None)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None

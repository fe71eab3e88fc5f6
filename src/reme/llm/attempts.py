"""Counting the HTTP requests an agent run sends, retries and failures included.

pydantic-ai counts model *responses*; the provider SDK's own retries and a run that fails outright
leave `usage.requests` at 0 although the server was asked three times. A request hook on the
provider's HTTP client adds one to the counter of the run in progress (a context variable, so
concurrent runs on one client keep their own counts).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

_current: ContextVar[list[int] | None] = ContextVar("reme_llm_attempts", default=None)


async def count_request(request: object) -> None:
    counter = _current.get()
    if counter is not None:
        counter[0] += 1


def watch(http_client: object) -> None:
    """Add the counting hook to an httpx(2) client (once)."""
    hooks = getattr(http_client, "event_hooks", None)
    if isinstance(hooks, dict) and count_request not in hooks.get("request", []):
        setattr(http_client, "event_hooks", {**hooks, "request": [*hooks.get("request", []), count_request]})  # noqa: B010


@contextmanager
def counting() -> Iterator[list[int]]:
    """`with counting() as sent:` — `sent[0]` is the number of requests sent inside the block."""
    counter = [0]
    token = _current.set(counter)
    try:
        yield counter
    finally:
        _current.reset(token)


def reported(usage: Mapping[str, object]) -> dict[str, object]:
    """Summed usage as shown to the user: tokens no reply reported are "not reported", not 0."""
    shown = dict(usage)
    if usage.get("replies_without_usage") and not (usage.get("input_tokens") or usage.get("output_tokens")):
        shown["input_tokens"] = shown["output_tokens"] = "not reported"
    return shown

"""Suggestions for a mistyped name ("did you mean `search`?"), shared by every interface."""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`; did you mean 'search'?` for the closest candidate, or "" when none is close."""
    import difflib

    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""

"""What a pipeline hands back to its job: the answer, the response metadata, and the tokens it used."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

from reme.jsontypes import JSONObject

# Where a pipeline reports the tokens a model run used (the job adds them up for its response).
AddUsage: TypeAlias = Callable[[dict[str, int]], None]


@dataclass
class Outcome:
    """A pipeline's answer (the response text) and the metadata saying what it did (docs/spec.md §6)."""

    answer: str
    metadata: JSONObject = field(default_factory=dict)

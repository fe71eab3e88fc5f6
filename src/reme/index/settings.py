"""The index component's settings (`components.index.*`): one table, the only place a default lives.

Each `Setting` row gives a name, the JSON types it accepts, its default, a line of help and a
check; the component's defaults, its validation (`IndexSettings.load`) and its help
(`describe`) all come from `SETTINGS`. Searcher and service take their values from an
`IndexSettings`, never a default of their own. A row's `check` runs when the settings load, so
a bad value stops the component at start with a sentence naming the setting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reme.index.chunk_base import DEFAULT_CHUNK_CHARS
from reme.jsontypes import JSONObject, JSONValue
from reme.workspace.textio import DEFAULT_MAX_TEXT_BYTES

Check = Callable[[Any], str | None]  # a loaded value -> why it is refused, or None


@dataclass(frozen=True)
class Setting:
    """One row of a component's settings table (in the spirit of datasette's `Setting`)."""

    name: str
    types: tuple[type, ...]  # JSON types accepted (`type(None)` where null is allowed)
    default: JSONValue
    help: str
    check: Check | None = None

    def load(self, value: object) -> object:
        """`value` checked against the row; a ValueError naming the setting when it does not fit."""
        if isinstance(value, bool) and bool not in self.types:  # True is an int to Python, not to YAML
            raise ValueError(f"{self.name} must be {self.kind()}, not {value!r}")
        if float in self.types and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, self.types):
            raise ValueError(f"{self.name} must be {self.kind()}, not {value!r}")
        why = self.check(value) if self.check is not None else None
        if why is not None:
            raise ValueError(f"{self.name} {why}")
        return value

    def kind(self) -> str:
        """The accepted types in words (for errors and help)."""
        names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
        names |= {list: "a list", dict: "a mapping", type(None): "null"}
        return " or ".join(names.get(kind, kind.__name__) for kind in self.types)


def _at_least(low: int) -> Check:
    return lambda value: None if value >= low else f"must be at least {low}"


def _weight(value: float) -> str | None:
    return None if 0.0 <= value <= 1.0 else "must be between 0 and 1 (the keyword ranking weighs 1 - it)"


def _context(value: float) -> str | None:
    return None if value >= 0.0 else "must be at least 0 (0 ranks each chunk by its own vector)"


def _fusion(value: str) -> str | None:
    from reme.index.search import FUSIONS  # the fusions live with the ranking; imported when loading

    return None if value in FUSIONS else f"must be one of {', '.join(FUSIONS)}, not {value!r}"


_NONE = type(None)
SETTINGS: tuple[Setting, ...] = (
    Setting("chunk_chars", (int,), DEFAULT_CHUNK_CHARS, "chunk size budget in characters; set by the LoCoMo "
            "retrieval benchmark", _at_least(100)),
    Setting("watch", (bool,), True, "index_update_loop follows file changes live"),
    Setting("debounce_ms", (int,), 200, "a burst of changes within this window is one index update",
            _at_least(0)),
    Setting("tokenizer", (dict, _NONE), None, "keyword tokenizer settings (stemmer, stopwords, min_cjk_len); "
            "null = the defaults"),
    Setting("sources", (list, _NONE), None, "what is indexed; null = every Markdown file and "
            "session/dialog/*.jsonl, or a list like [{folder: notes, extensions: [.md], recursive: true}]"),
    Setting("exclude", (list, _NONE), None, "null = [journal, resource]; paths or globs ('drafts/*.md'); "
            "metadata/ always"),
    Setting("max_file_bytes", (int,), DEFAULT_MAX_TEXT_BYTES, "larger files are catalogued but not indexed "
            "(= the write cap, 16 MiB)", _at_least(1)),
    Setting("candidate_multiplier", (int,), 3, "each search branch fetches limit × this many candidates "
            "(LoCoMo dev choice, benchmarks/README.md)", _at_least(1)),
    Setting("vector", (str, _NONE), "embedding", "the embedding component fused in when it is enabled "
            "(jobs/embedding.yaml); null = never"),
    Setting("fusion", (str,), "relative_score", "how the keyword and vector rankings merge: relative_score "
            "(each branch's scores min–max scaled, then weighed; LoCoMo dev choice) or rrf (docs/spec.md §5.3, "
            "k = 60)", _fusion),
    Setting("vector_weight", (float,), 0.5, "weight of the vector ranking in the fusion, keywords 1 - it "
            "(LoCoMo dev choice)", _weight),
    Setting("vector_context", (float,), 0.3, "a chunk is ranked by its vector + this × its file neighbours' "
            "(normalised); 0 = own vector only", _context),
)
BY_NAME = {setting.name: setting for setting in SETTINGS}


@dataclass(frozen=True)
class IndexSettings:
    """The index's configuration, loaded from `SETTINGS` (every field is a row there)."""

    chunk_chars: int
    watch: bool
    debounce_ms: int
    tokenizer: JSONObject | None
    sources: list[JSONValue] | None
    exclude: list[JSONValue] | None
    max_file_bytes: int
    candidate_multiplier: int
    vector: str | None
    fusion: str
    vector_weight: float
    vector_context: float

    @classmethod
    def load(cls, given: Mapping[str, object]) -> IndexSettings:
        """The defaults overlaid with `given`, each checked by its row. An unknown name is a
        TypeError (a config mistake, like an unexpected keyword); a bad value a ValueError."""
        unknown = sorted(set(given) - BY_NAME.keys())
        if unknown:
            raise TypeError(f"unknown setting(s) {', '.join(map(repr, unknown))} (known: {', '.join(BY_NAME)})")
        values: dict[str, Any] = {
            setting.name: setting.load(given[setting.name]) if setting.name in given else setting.default
            for setting in SETTINGS
        }
        return cls(**values)

    def to_dict(self) -> JSONObject:
        return {setting.name: getattr(self, setting.name) for setting in SETTINGS}


def _defaults() -> dict[str, Any]:
    return {setting.name: setting.default for setting in SETTINGS}


DEFAULTS = IndexSettings(**_defaults())  # unchecked: loading checks `fusion` against search, which imports this


def describe() -> list[JSONObject]:
    """The table as rows (name, type, default, help): for `--help` and the docs."""
    return [
        {"name": s.name, "type": s.kind(), "default": s.default, "help": s.help} for s in SETTINGS
    ]

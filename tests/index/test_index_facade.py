"""`IndexService` as the index's one door: callers outside `reme.index` use its intent methods only,
`reindex` counts its progress through `reme.app.progress`, and `components.index.*` has one
settings table (defaults, checks, help) that the packaged YAML does not restate."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

import reme
from reme import ReMe
from reme.app.components.index import INDEX_SETTINGS, IndexLinks
from reme.app.config import ConfigError
from reme.app.progress import Count, reporting
from reme.index.keyword import EngineUnavailable
from reme.workspace.links import ScanLinks

SRC = Path(reme.__file__).parent
PARTS = "vectors|indexer|progress|searcher|graph|keyword|store|guard|scope"
REACHING_IN = re.compile(rf"\b(?<!reme\.)(?:index|service|index_service\([^)]*\))\.(?:{PARTS})\b")


def test_nothing_outside_the_index_reaches_into_its_parts() -> None:
    found = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for folder in ("app", "service", "pipelines")
        for path in sorted((SRC / folder).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if REACHING_IN.search(line) and not line.lstrip().startswith(("from ", "import ", "#"))
    ]
    assert found == []


def test_the_check_finds_a_planted_reach() -> None:
    assert REACHING_IN.search("    hits = await index.searcher.search(query)")
    assert REACHING_IN.search("pending = index_service(ctx.app).vectors.pending()")
    assert not REACHING_IN.search("    hits = await index.search(query, limit=5)")
    assert not REACHING_IN.search('logging.getLogger("reme.index.progress")')  # a module name


class Recorder:
    """A reporter that keeps every count it was given, by label."""

    def __init__(self) -> None:
        self.counts: dict[str, list[tuple[int, int]]] = {}

    def say(self, topic: str, line: str) -> None:
        raise AssertionError("reindex counts, it does not talk")

    @contextmanager
    def counting(self, label: str, total: int | None = None) -> Iterator[Count]:
        seen = self.counts.setdefault(label, [])
        yield lambda done, total: seen.append((done, total))


async def test_reindex_counts_its_files_through_the_installed_reporter(app: ReMe) -> None:
    for n in range(3):
        note = app.workspace_dir / f"digest/n{n}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"# Note {n}\n\nsolar {n}\n")
    recorder = Recorder()
    with reporting(recorder):
        response = await app.run("reindex")
    assert response.success, response.answer
    reindexing = recorder.counts["reindexing"]
    assert reindexing and reindexing[-1] == (response.metadata["indexed"], response.metadata["indexed"])
    assert recorder.counts["embedding"] == []  # vectors off: the stage opens and counts nothing


def test_the_packaged_yaml_leaves_every_index_default_to_the_table() -> None:
    block = yaml.safe_load((SRC / "config/jobs/index.yaml").read_text())["components"]["index"]
    assert block == {"backend": "sqlite_tantivy"}
    defaults = INDEX_SETTINGS.defaults()
    assert defaults["chunk_chars"] == 300 and defaults["transcript_chunk_chars"] == 400
    assert defaults["vector"] == "embedding"
    assert defaults["fusion"] == "relative_score" and defaults["vector_context"] == 0.3
    help_text = INDEX_SETTINGS.help()
    assert all(f"{name} (" in help_text for name in INDEX_SETTINGS.names())


async def test_the_started_index_runs_with_the_table_s_values(app: ReMe) -> None:
    settings = app.component("index").index_settings
    defaults = INDEX_SETTINGS.defaults()
    assert (settings.chunk_chars, settings.debounce_ms, settings.vector_weight) == (
        defaults["chunk_chars"],
        defaults["debounce_ms"],
        defaults["vector_weight"],
    )


async def test_a_zero_debounce_is_kept_not_replaced_by_the_default(tmp_path: Path) -> None:
    async with ReMe(
        workspace_dir=tmp_path / "ws", timezone="UTC", **{"components.index.debounce_ms": 0}
    ) as app:
        assert app.component("index").index_settings.debounce_ms == 0


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("chunk_chars", 50, "chunk_chars must be an integer of at least 100, got 50"),
        ("watch", "yes", "watch must be true or false"),
        ("vector_context", -1, "vector_context must be at least 0"),
        ("candidate_multiplier", 0, "candidate_multiplier must be an integer of at least 1"),
        ("colour", "red", "unknown config key 'components.index.colour'"),
    ],
)
async def test_a_bad_index_setting_is_a_config_error_naming_it(
    tmp_path: Path, key: str, value: object, message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **{f"components.index.{key}": value}):
            pass


class Failing:
    """An index service whose link answers all fail with `error`."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def inbound(self, path: str) -> list[dict[str, str]]:
        raise self.error

    def ending_with(self, suffix: str) -> list[str]:
        raise self.error

    def sync_paths(self, paths: list[str]) -> None:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [sqlite3.OperationalError("database is locked"), OSError("disk full"), EngineUnavailable("locked")],
)
async def test_links_fall_back_to_a_scan_when_the_index_cannot_answer(app: ReMe, error: Exception) -> None:
    (app.workspace_dir / "digest").mkdir(parents=True, exist_ok=True)
    (app.workspace_dir / "digest/a.md").write_text("see [[b]]\n")
    (app.workspace_dir / "digest/b.md").write_text("b\n")
    scan = ScanLinks(app.component("workspace").workspace)
    links = IndexLinks(Failing(error), scan)
    assert links.inbound("digest/b.md") == scan.inbound("digest/b.md") != []
    assert links.ending_with("b.md") == scan.ending_with("b.md") == ["digest/b.md"]
    links.sync_paths(["digest/a.md"])  # logged; the file is written, the index catches up later


async def test_a_bug_in_the_index_is_not_hidden_behind_the_scan(app: ReMe) -> None:
    links = IndexLinks(Failing(KeyError("bug")), ScanLinks(app.component("workspace").workspace))
    for call in (
        lambda: links.inbound("digest/b.md"),
        lambda: links.ending_with("b.md"),
        lambda: links.sync_paths(["x.md"]),
    ):
        with pytest.raises(KeyError):
            call()

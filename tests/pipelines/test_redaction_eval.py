"""benchmarks/redaction_eval.py on a slice of the gitleaks rules: every tenth rule's secret, in every
context, through the append job, the Claude Code Stop hook and a ChatGPT import; then every file of
each workspace is searched for the secrets."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("redaction_eval", ROOT / "benchmarks" / "redaction_eval.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["redaction_eval"] = module
    spec.loader.exec_module(module)
    return module


def test_the_corpus_holds_a_secret_each_rule_accepts(bench: ModuleType) -> None:
    secrets = bench.corpus(every=10)
    assert len(secrets) >= 20 and len({s.rule for s in secrets}) == len(secrets)
    again = bench.corpus(every=10)
    assert [s.value for s in again] == [s.value for s in secrets]  # deterministic


def test_a_slice_of_the_corpus_leaks_nothing_through_three_capture_paths(bench: ModuleType) -> None:
    by_context = bench.corpora(every=10)
    result = bench.evaluate(by_context, ["append", "claude_hook", "chatgpt_import"])
    assert result["failures"] == []
    for path, row in result["table"].items():
        for context, (leaked, total) in row.items():
            assert total > 0 and len(leaked) <= max(1, total // 50), (path, context, leaked)


def test_ordinary_prose_is_left_alone(bench: ModuleType) -> None:
    assert len(bench.PROSE) >= 40
    assert len(bench.false_positives()) <= 1

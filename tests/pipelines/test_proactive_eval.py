"""benchmarks/proactive_eval.py runs on a tiny LoCoMo slice with the scripted model."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "notes"


@pytest.mark.skipif(not LOCOMO.is_dir(), reason=f"LoCoMo development data not found at {LOCOMO}")
async def test_the_eval_reports_every_figure_on_two_days(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    for name in ("LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY", "LLM_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("proactive_eval", ROOT / "benchmarks" / "proactive_eval.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "proactive_eval", module)
    spec.loader.exec_module(module)
    table = await module.main(["--conversations", "conv-26", "--days", "2"])
    rows = {
        line.split(" | ")[0].strip("| "): line.split(" | ")
        for line in table.splitlines()
        if line.startswith("| ")
    }
    runs, failed, calls, max_calls = rows["conv-26"][1:5]
    assert (runs, failed, calls, max_calls) == ("2", "0", "2.00", "2")  # extract + plan, one candidate
    assert rows["conv-26"][10] == "100.0%"  # every evidence path exists
    assert rows["conv-26"][8] == "0.00"  # the same topic both days: no churn

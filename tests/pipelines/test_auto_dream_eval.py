"""benchmarks/dream_eval.py runs on a tiny LoCoMo slice with the heuristic (scripted) dreamer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

ROOT = Path(__file__).resolve().parents[2]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "notes"


@pytest.mark.skipif(not LOCOMO.is_dir(), reason="LoCoMo development data not found at ../shared/data/locomo")
def test_dream_eval_creates_updates_audits_and_splits_with_full_provenance_and_a_bounded_prompt() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "benchmarks/dream_eval.py",
            "--conversations",
            "conv-26",
            "--days",
            "3",
            "--scale",
            "5,40",
            "--max-node-chars",
            "250",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    assert figures["days"] == 3 and figures["failed_units"] == 0
    assert figures["actions"].get("CREATE", 0) > 0 and figures["actions"].get("CORROBORATE", 0) > 0
    covered, nodes = figures["provenance"]
    assert covered == nodes == figures["nodes"] and figures["violations"] == 0
    assert "| provenance coverage |" in run.stdout
    audits = figures["audits"]  # digest_audit after every day
    assert [a["day"] for a in audits] == sorted(a["day"] for a in audits) and len(audits) == 3
    assert all(a["no_source"] == a["missing_source"] == a["dead_link"] == 0 for a in audits)
    assert audits[-1]["nodes"] == figures["nodes"] and "| near_duplicate |" in run.stdout
    (before, nodes_before), (after, nodes_after) = (
        figures["overloaded"]["before"],
        figures["overloaded"]["after"],
    )
    kept, failed = figures["splits"]
    assert before > 0 and kept > 0 and failed == 0 and nodes_after > nodes_before
    assert after / nodes_after < before / nodes_before

"""`reme import chatgpt` through the console script: secrets in titles and messages never reach the
workspace, and one malformed conversation is reported while the others are imported."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

_RNG = random.Random(7)
# assembled at run time: no scanner mistakes this file for a leak
STRIPE = "rk_prod_" + "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(24))
GITLAB = "glpat-" + "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(20))


def conversation(n: int, title: str, text: str, create_time: Any = 1748768400) -> dict[str, Any]:
    return {
        "id": f"conv-{n}",
        "title": title,
        "create_time": 1748768400,
        "current_node": "u",
        "mapping": {
            "root": {"id": "root", "parent": None, "children": ["u"], "message": None},
            "u": {
                "id": "u",
                "parent": "root",
                "children": [],
                "message": {
                    "id": f"m{n}",
                    "author": {"role": "user"},
                    "create_time": create_time,
                    "content": {"content_type": "text", "parts": [text]},
                },
            },
        },
    }


def test_titles_and_messages_are_redacted_and_a_bad_conversation_is_reported(
    run_reme, tmp_path: Path
) -> None:
    export = tmp_path / "conversations.json"
    conversations = [
        conversation(1, f"Deploy with {STRIPE}", f"the gitlab token is {GITLAB}, keep it"),
        conversation(2, "Broken times", "hello", create_time="the day after tomorrow"),
        conversation(3, "Fine", "just a question about bread"),
    ]
    export.write_text(json.dumps(conversations), encoding="utf-8")
    workspace = tmp_path / "ws"
    result = run_reme("import", "chatgpt", str(export), f"workspace_dir={workspace}", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)["metadata"]
    assert len(report["created"]) == 4  # two conversations: a transcript and a note each
    (skipped,) = report["skipped"]
    assert skipped["item"].startswith("conversations[1]") and "timestamp" in skipped["reason"]
    everything = b"".join(p.read_bytes() for p in workspace.rglob("*") if p.is_file())
    assert STRIPE.encode() not in everything and GITLAB.encode() not in everything
    assert STRIPE[8:20].encode() not in everything  # not even a part of it
    note = (workspace / "imports" / "chatgpt" / "conv-1.md").read_text(encoding="utf-8")
    assert "name: Deploy with [REDACTED:stripe-access-token]" in note or (
        "name: 'Deploy with [REDACTED:stripe-access-token]'" in note
    )
    assert "# Deploy with [REDACTED:stripe-access-token]" in note

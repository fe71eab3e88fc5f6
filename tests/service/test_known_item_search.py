"""Known-item search through a running service and the `reme search` CLI (issue 23, item 5).

A note's own title as the query ranks that note first, ahead of pages that only talk about it;
one long note takes one result (its further passages folded under it); the generated
`digest/_buckets.md` stays out of the results unless asked for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


def _write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def service(module_services, tmp_path_factory: pytest.TempPathFactory) -> Any:
    workspace = tmp_path_factory.mktemp("known") / "ws"
    talk = "To embed files, drag them in. Embed files with an exclamation mark; embedded files update."
    long_guide = "\n\n".join(f"## Part {n}\n\n{talk} Section {n} on how to embed files." for n in range(8))
    _write(
        workspace,
        {
            "notes/User interface/Embed files.md": "You can show a note inside another one.\n",
            "notes/Linking/Internal links.md": f"{talk}\n\n{talk}\n",
            "notes/Guides/Editing guide.md": f"# Editing guide\n\n{long_guide}\n",
            "notes/Plugins/Attachments.md": "---\nname: Attachments\n---\nWhere embedded files land. " + talk,
            "digest/_buckets.md": f"# Buckets\n\n- wiki: {talk}\n",
            "notes/_inbox.md": "Triage the inbox every Friday.\n",  # the user's own `_` note
        },
    )
    return module_services(workspace, "scheduler.cron=false")


def _search(service: Any, *args: str) -> list[dict[str, Any]]:
    result = service.cli("search", *args, "--json")
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["success"], reply
    return reply["metadata"]["results"]


def test_a_notes_title_as_the_query_finds_it_first(service) -> None:
    results = _search(service, "embed files", "limit=5")
    assert results[0]["path"] == "notes/User interface/Embed files.md"
    paths = [row["path"] for row in results]
    assert len(paths) == len(set(paths)), paths  # one result per note
    assert "digest/_buckets.md" not in paths
    guide = next(row for row in results if row["path"] == "notes/Guides/Editing guide.md")
    assert len(guide["folded"]) >= 2  # its other matching passages, under its first hit
    assert all(set(f) == {"start_line", "end_line", "score"} for f in guide["folded"])


def test_a_notes_name_in_front_matter_counts_as_its_title(service) -> None:
    assert _search(service, "attachments", "limit=3")[0]["path"] == "notes/Plugins/Attachments.md"


def test_passages_unfolded_and_generated_pages_when_asked(service) -> None:
    unfolded = [row["path"] for row in _search(service, "embed files", "limit=20", "fold_files=false")]
    assert unfolded.count("notes/Guides/Editing guide.md") >= 3
    generated = [row["path"] for row in _search(service, "embed files", "limit=20", "include_generated=true")]
    assert "digest/_buckets.md" in generated


def test_the_readable_answer_lists_folded_passages(service) -> None:
    result = service.cli("search", "embed files", "limit=5")
    assert result.returncode == 0, result.stderr
    assert "also matching in this file: lines" in result.stdout


def test_a_users_own_underscore_note_is_an_ordinary_note(service) -> None:
    assert _search(service, "triage inbox friday", "limit=3")[0]["path"] == "notes/_inbox.md"

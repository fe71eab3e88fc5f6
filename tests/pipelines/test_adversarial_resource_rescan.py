"""Rescans of unreadable resources (docs/spec.md §11): a hostile file costs its parse once, not forever.

A full scan (and the watcher's first pass) reads every resource. One that has no readable text (a
PDF whose parse runs into `extract_seconds`, an encrypted PDF, a binary file) is remembered in
`metadata/` with its content hash, and skipped unread, saying why, until its content changes.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from typing import Any

import pytest
from tests.pipelines.conftest import scripted
from tests.pipelines.port_jobs import MakePortApp, port_app_fixture  # noqa: F401  (the fixture)
from tests.pipelines.test_auto_resource import READ_AND_WRITE, put

from reme.pipelines.memory import auto_resource as pipeline
from reme.pipelines.memory.resource_text import ResourceText, Unreadable, _answer

DAY = "2026-06-01"
SLOW = f"resource/{DAY}/hostile.pdf"
LOCKED = f"resource/{DAY}/locked.pdf"
BLOB = f"resource/{DAY}/blob.txt"
TIMED_OUT = "reading its pdf text took over 60 s and was stopped (a damaged or hostile file?)"
KILLED = "the pdf reader stopped without an answer (exit status -15: no message)"


def encrypted_pdf() -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(100, 100)
    writer.encrypt("owner-only-knows")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The extensions auto_resource asks a reader for, in order: a `%PDF-hostile` file times out (as
    the child stopped after extract_seconds would), a `%PDF-killed` one loses its reader to a signal
    (as at a shutdown), everything else is read for real."""
    asked: list[str] = []
    real = pipeline.text_of

    async def counted(data: bytes, extension: str, *, limit: int, seconds: float) -> ResourceText:
        asked.append(extension)
        if data.startswith(b"%PDF-hostile"):
            raise Unreadable(TIMED_OUT)
        if data.startswith(b"%PDF-killed"):
            raise Unreadable(KILLED, lasting=False)
        return await real(data, extension, limit=limit, seconds=seconds)

    monkeypatch.setattr(pipeline, "text_of", counted)
    return asked


def skipped(response: Any) -> dict[str, str]:
    return {row["path"]: row["reason"] for row in response.metadata["skipped"]}


async def test_an_unreadable_resource_is_parsed_once_until_its_content_changes(
    make_port_app: MakePortApp, parses: list[str]
) -> None:
    """Three unreadable resources and a good one, scanned three times: each unreadable one is parsed
    on the first scan only; the later scans skip it with the remembered reason and say it was not read
    again. A changed file is read again (and, readable now, gets its card)."""
    app = make_port_app(**scripted(READ_AND_WRITE))
    put(app, SLOW, b"%PDF-hostile\n" + b"0" * 100)
    put(app, LOCKED, encrypted_pdf())
    put(app, BLOB, b"\x00\x01binary")
    put(app, f"resource/{DAY}/good.md", "Revenue grew 14%.\n")
    first = await app.run("auto_resource")
    assert first.success, first.answer
    assert sorted(parses) == ["md", "pdf", "pdf", "txt"]
    reasons = skipped(first)
    assert reasons[SLOW] == TIMED_OUT
    assert reasons[LOCKED] == "PDF is encrypted with a password; put an unencrypted copy in its place"
    assert reasons[BLOB] == "binary data, not text"
    for scan in range(2):
        again = await app.run("auto_resource")
        assert again.success, again.answer
        assert sorted(parses) == ["md", "pdf", "pdf", "txt"], f"scan {scan + 2} parsed again"
        remembered = skipped(again)
        for path, reason in reasons.items():
            assert remembered[path].startswith("not read again: unchanged since it was found unreadable")
            assert remembered[path].endswith(reason)
    put(app, BLOB, "Now it is text: the budget is 42.\n")
    changed = await app.run("auto_resource", paths=[BLOB, LOCKED])
    assert changed.success, changed.answer
    assert parses[-1:] == ["txt"] and len(parses) == 5
    assert [row["path"] for row in changed.metadata["processed"]] == [BLOB]
    assert (app.workspace_dir / f"daily/{DAY}/blob.md").is_file()


async def test_the_memory_is_derived_state_and_bounded(
    make_port_app: MakePortApp, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleting `metadata/` only costs a parse again; a damaged record is ignored, not trusted; and
    the record keeps at most its bound of files (the oldest are forgotten first)."""
    monkeypatch.setattr(pipeline, "MAX_REMEMBERED", 2)
    app = make_port_app(**scripted(READ_AND_WRITE))
    blobs = [put(app, f"resource/{DAY}/blob{i}.txt", b"\x00" + bytes([i])) for i in range(3)]
    assert (await app.run("auto_resource")).success
    assert len(parses) == 3
    state = app.workspace_dir / "metadata/resource_unreadable.json"
    kept = [entry["path"] for entry in json.loads(state.read_text(encoding="utf-8"))["files"]]
    assert kept == [f"resource/{DAY}/blob1.txt", f"resource/{DAY}/blob2.txt"]
    assert (await app.run("auto_resource", paths=[f"resource/{DAY}/blob2.txt"])).success
    assert len(parses) == 3
    assert (await app.run("auto_resource", paths=[f"resource/{DAY}/blob0.txt"])).success
    assert len(parses) == 4  # blob0 was forgotten: read once more, and now blob1 is the one forgotten
    kept = [entry["path"] for entry in json.loads(state.read_text(encoding="utf-8"))["files"]]
    assert kept == [f"resource/{DAY}/blob2.txt", f"resource/{DAY}/blob0.txt"]
    state.write_text('{"files": [{"path": "resource/2026-06-01/blob0.txt", "sha256": 7}]}', encoding="utf-8")
    assert (await app.run("auto_resource", paths=[f"resource/{DAY}/blob0.txt"])).success
    assert len(parses) == 5
    state.unlink()
    response = await app.run("auto_resource", paths=[f"resource/{DAY}/blob2.txt"])
    assert response.success and len(parses) == 6
    assert skipped(response)[f"resource/{DAY}/blob2.txt"] == "binary data, not text"
    assert all(blob.exists() for blob in blobs)


async def test_a_longer_time_limit_reads_a_timed_out_file_again(
    make_port_app: MakePortApp, parses: list[str]
) -> None:
    """The timeout's reason tells the user to raise extract_seconds: once raised, the file is tried again."""
    app = make_port_app(**scripted(READ_AND_WRITE))
    put(app, SLOW, b"%PDF-hostile\n")
    assert (await app.run("auto_resource")).success
    assert (await app.run("auto_resource")).success
    assert len(parses) == 1
    spec = app.jobs["auto_resource"]
    longer = {**spec.steps[0].settings, "extract_seconds": 120}
    app.jobs = {**app.jobs, "auto_resource": replace(spec, steps=(replace(spec.steps[0], settings=longer),))}
    assert (await app.run("auto_resource")).success
    assert len(parses) == 2


async def test_a_failed_first_run_leaves_no_empty_day_folder(make_port_app: MakePortApp) -> None:
    """The model fails on a new resource: its card is removed and so is the day folder made for it;
    a folder that held something before is kept."""
    app = make_port_app(
        **scripted([{"tool": "write", "args": {"path": f"daily/{DAY}/report.md", "content": "HALF"}}])
    )
    put(app, f"resource/{DAY}/report.md", "Revenue grew 14%.\n")
    response = await app.run("auto_resource", paths=[f"resource/{DAY}/report.md"])
    assert not response.success and "not processed" in response.answer
    assert not (app.workspace_dir / f"daily/{DAY}").exists()
    assert not await app.port.remove_empty_folder("daily") and (app.workspace_dir / "daily").is_dir()
    other = "resource/2026-06-02/report.md"
    put(app, other, "Costs fell.\n")
    put(app, "daily/2026-06-02/mine.md", "my own note\n")
    app.component("llm").script = []  # type: ignore[attr-defined]
    assert not (await app.run("auto_resource", paths=[other])).success
    assert sorted(p.name for p in (app.workspace_dir / "daily/2026-06-02").iterdir()) == ["mine.md"]


async def test_a_reader_stopped_from_outside_is_not_remembered(
    make_port_app: MakePortApp, parses: list[str]
) -> None:
    """A reader killed by a signal (the service shutting down) says nothing about the file: it is
    read again next time. A child that failed on its own, or answered unreadable, is remembered."""
    app = make_port_app(**scripted(READ_AND_WRITE))
    put(app, f"resource/{DAY}/paper.pdf", b"%PDF-killed\n")
    for _ in range(2):
        response = await app.run("auto_resource")
        assert response.success and skipped(response)[f"resource/{DAY}/paper.pdf"] == KILLED
    assert len(parses) == 2
    assert not _lasting(b"", -9) and _lasting(b"", 1)
    assert _lasting(b'{"unreadable": "PDF has no text layer"}', 0)
    assert not _lasting(b'{"unreadable": "PDF text needs the optional extra", "lasting": false}', 0)


def _lasting(out: bytes, status: int) -> bool:
    with pytest.raises(Unreadable) as raised:
        _answer("pdf", out, b"", status)
    return raised.value.lasting

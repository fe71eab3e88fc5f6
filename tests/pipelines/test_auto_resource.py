"""auto_resource and resource_watch_loop on a real workspace, with the scripted model (docs/spec.md §11)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from tests.pipelines.conftest import MakeApp, scripted, served_by
from tests.pipelines.port_jobs import MakePortApp, port_app_fixture  # noqa: F401  (the fixture)
from tests.pipelines.test_auto_memory import front_matter

from reme import ReMe
from reme.llm.testing.fake_openai import FakeOpenAI
from reme.pipelines.memory.auto_resource import RESOURCE_NAMESPACE

READ_AND_WRITE = [
    {"tool": "read", "args": {"path": "$card_path"}},
    {"tool": "write", "args": {"path": "$card_path", "content": "# Reading\n\n$material\n"}},
    {"output": {"name": "Reading of $resource_path", "description": "A $resource_kind file."}},
]


def put(app: ReMe, path: str, content: str | bytes) -> Path:
    target = app.workspace_dir / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8")
    return target


async def test_resource_becomes_a_card_linked_to_its_source(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(READ_AND_WRITE))
    put(app, "resource/2026-06-01/report.md", "# Q2\n\nRevenue grew 14% to 3.2M.\n")
    response = await app.run("auto_resource", paths=["resource/2026-06-01/report.md"])
    assert response.success, response.answer
    assert response.metadata["processed"] == [
        {"path": "resource/2026-06-01/report.md", "card": "daily/2026-06-01/report.md", "action": "created"}
    ]
    card = app.workspace_dir / "daily/2026-06-01/report.md"
    meta = front_matter(card)
    assert meta["source_resource"] == "[[resource/2026-06-01/report.md]]"
    assert meta["session_id"] == str(uuid.uuid5(RESOURCE_NAMESPACE, "resource/2026-06-01/report.md"))
    assert meta["name"] == "Reading of resource/2026-06-01/report.md" and "pending" not in meta
    assert "Revenue grew 14% to 3.2M." in card.read_text(encoding="utf-8")
    assert "[[daily/2026-06-01/report.md]]" in (app.workspace_dir / "daily/2026-06-01.md").read_text(
        encoding="utf-8"
    )
    assert response.metadata["usage"]["requests"] == 3


async def test_modified_resource_updates_its_card_and_unchanged_is_skipped(
    make_port_app: MakePortApp,
) -> None:
    app = make_port_app(**scripted(READ_AND_WRITE))
    source = put(app, "resource/2026-06-01/report.md", "Revenue 3.2M.\n")
    assert (await app.run("auto_resource", paths=["resource/2026-06-01/report.md"])).success
    unchanged = await app.run("auto_resource", paths=["resource/2026-06-01/report.md"])
    assert unchanged.success and unchanged.metadata["processed"] == [] and unchanged.metadata["usage"] == {}
    assert "unchanged" in unchanged.metadata["skipped"][0]["reason"]
    source.write_text("Revenue 3.5M after restatement.\n", encoding="utf-8")
    updated = await app.run("auto_resource", paths=["resource/2026-06-01/report.md"])
    assert updated.success and updated.metadata["processed"][0]["action"] == "updated"
    text = (app.workspace_dir / "daily/2026-06-01/report.md").read_text(encoding="utf-8")
    assert "3.5M" in text and "3.2M" not in text
    assert sorted(p.name for p in (app.workspace_dir / "daily/2026-06-01").iterdir()) == ["report.md"]


async def test_deleted_resource_loses_its_card_and_index_line(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(READ_AND_WRITE))
    source = put(app, "resource/2026-06-01/report.md", "Revenue 3.2M.\n")
    put(app, "resource/2026-06-01/notes.txt", "Call the auditor.\n")
    assert (await app.run("auto_resource")).success  # no paths: every resource
    source.unlink()
    response = await app.run("auto_resource", deleted=["resource/2026-06-01/report.md"])
    assert response.success, response.answer
    assert response.metadata["processed"] == [
        {"path": "resource/2026-06-01/report.md", "card": "daily/2026-06-01/report.md", "action": "deleted"}
    ]
    assert not (app.workspace_dir / "daily/2026-06-01/report.md").exists()
    index = (app.workspace_dir / "daily/2026-06-01.md").read_text(encoding="utf-8")
    assert "report.md" not in index and "[[daily/2026-06-01/notes.md]]" in index


async def test_loose_files_are_todays_material(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(READ_AND_WRITE))
    put(app, "resource/memo.txt", "Budget frozen until July.\n")
    response = await app.run("auto_resource", paths=["resource/memo.txt"])
    assert response.success, response.answer
    assert response.metadata["processed"][0]["card"] == f"daily/{app.today().isoformat()}/memo.md"


async def test_name_collisions_get_a_short_stable_suffix(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(READ_AND_WRITE))
    put(app, "daily/2026-06-01/report.md", "---\nname: my own note\n---\nmine\n")
    put(app, "resource/2026-06-01/report.md", "md version\n")
    put(app, "resource/2026-06-01/sub/report.md", "other folder\n")
    paths = ["resource/2026-06-01/report.md", "resource/2026-06-01/sub/report.md"]
    response = await app.run("auto_resource", paths=paths)
    assert response.success, response.answer
    cards = [p["card"] for p in response.metadata["processed"]]
    assert len(set(cards)) == 2 and all(c.startswith("daily/2026-06-01/report-") for c in cards)
    assert (app.workspace_dir / "daily/2026-06-01/report.md").read_text(
        encoding="utf-8"
    ) == "---\nname: my own note\n---\nmine\n"
    again = await app.run("auto_resource", paths=paths)  # the same cards are found again, not new suffixes
    assert again.success and again.metadata["processed"] == []
    assert len(list((app.workspace_dir / "daily/2026-06-01").iterdir())) == 3


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF whose text layer holds `text`."""
    stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return pdf_file(objects)


def pdf_file(objects: list[bytes]) -> bytes:
    """A PDF of these objects (numbered from 1, the first the catalog) with its cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


async def test_formats_are_read_as_text(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(READ_AND_WRITE))
    files: dict[str, Any] = {
        "resource/2026-06-01/page.html": "<html><head><style>p{}</style><script>var x=1</script></head><body><h1>Launch</h1><p>Ships &amp; docks in May.</p></body></html>",
        "resource/2026-06-01/rows.csv": "city,population\nKyoto,1460000\n",
        "resource/2026-06-01/data.json": '{"sensor": "A7", "reading": 42}',
        "resource/2026-06-01/log.jsonl": '{"event": "start"}\n{"event": "stop"}\n',
        "resource/2026-06-01/conf.yaml": "retries: 3\n",
        "resource/2026-06-01/paper.pdf": minimal_pdf("Perovskite cells reach 26 percent"),
    }
    for path, content in files.items():
        put(app, path, content)
    response = await app.run("auto_resource", paths=list(files))
    assert response.success, response.answer
    assert len(response.metadata["processed"]) == 6
    read = {
        p: (app.workspace_dir / f"daily/2026-06-01/{Path(p).stem}.md").read_text(encoding="utf-8")
        for p in files
    }
    html = read["resource/2026-06-01/page.html"]
    assert "Launch\nShips & docks in May." in html and "var x" not in html and "p{}" not in html
    assert "Kyoto,1460000" in read["resource/2026-06-01/rows.csv"]
    assert '"reading": 42' in read["resource/2026-06-01/data.json"]
    assert "Perovskite cells reach 26 percent" in read["resource/2026-06-01/paper.pdf"]
    assert front_matter(app.workspace_dir / "daily/2026-06-01/paper.md")["description"] == "A pdf file."


async def test_unreadable_and_oversize_files_are_skipped_with_a_reason(make_app: MakeApp) -> None:
    steps = [{"backend": "auto_resource", "max_bytes": 1000, "max_chars": 60000}]
    app = await make_app(**scripted(READ_AND_WRITE), **{"jobs.auto_resource.steps": steps})
    put(app, "resource/2026-06-01/big.txt", "x" * 1001)
    put(app, "resource/2026-06-01/blob.txt", b"\x00\x01binary")
    put(app, "resource/2026-06-01/latin.txt", "caf\xe9".encode("latin-1"))
    put(app, "resource/2026-06-01/photo.png", b"\x89PNG")
    paths = [f"resource/2026-06-01/{n}" for n in ("big.txt", "blob.txt", "latin.txt", "photo.png")]
    response = await app.run("auto_resource", paths=paths)
    assert response.success, response.answer
    reasons = {s["path"].rsplit("/", 1)[1]: s["reason"] for s in response.metadata["skipped"]}
    assert reasons["big.txt"] == "too large: 1001 bytes > max_bytes 1000"
    assert reasons["blob.txt"] == "binary data, not text"
    assert reasons["latin.txt"] == "not UTF-8 text"
    assert reasons["photo.png"] == "unsupported format .png"
    assert not (app.workspace_dir / "daily/2026-06-01").exists()


async def test_bad_paths_are_refused_before_anything_is_written(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted(READ_AND_WRITE))
    put(app, "resource/2026-06-01/ok.md", "fine\n")
    for bad in ("daily/2026-06-01.md", "resource/../daily/x.md", "/etc/passwd"):
        response = await app.run("auto_resource", paths=["resource/2026-06-01/ok.md", bad])
        assert not response.success, bad
    assert not (app.workspace_dir / "daily/2026-06-01").exists()


async def test_without_llm_nothing_is_written_and_the_next_run_catches_up(make_port_app: MakePortApp) -> None:
    app = make_port_app(**scripted([]))
    put(app, "resource/2026-06-01/report.md", "Revenue 3.2M.\n")
    response = await app.run("auto_resource", paths=["resource/2026-06-01/report.md"])
    assert not response.success and "components.llm.script" in response.answer
    assert response.metadata["pending"] == ["resource/2026-06-01/report.md"]
    assert not (app.workspace_dir / "daily/2026-06-01").exists()
    app.component("llm").script = READ_AND_WRITE  # type: ignore[attr-defined]
    caught_up = await app.run("auto_resource")
    assert caught_up.success and caught_up.metadata["processed"][0]["card"] == "daily/2026-06-01/report.md"


async def test_model_failures_leave_no_new_card_and_old_cards_untouched(
    make_app: MakeApp, fake_server: FakeOpenAI
) -> None:
    app = await make_app(**served_by(fake_server, max_retries=1))
    source = put(app, "resource/2026-06-01/report.md", "Revenue 3.2M.\n")
    card_path = "daily/2026-06-01/report.md"
    broken = [
        {"tool": "write", "args": {"path": card_path, "content": "HALF"}},
        {"fault": "http", "status": 500},
    ]
    fake_server.set_script(broken)
    failed = await app.run("auto_resource", paths=["resource/2026-06-01/report.md"])
    assert (
        not failed.success
        and "not processed: LLM request failed: the server answered HTTP 500 (3 requests sent)"
        in failed.answer
    )
    assert not (app.workspace_dir / card_path).exists()
    fake_server.set_script(
        [
            {"tool": "write", "args": {"path": card_path, "content": "Revenue 3.2M\n"}},
            {"output": {"name": "Q2", "description": "Q2."}},
        ]
    )
    assert (await app.run("auto_resource")).success
    before = (app.workspace_dir / card_path).read_text(encoding="utf-8")
    source.write_text("Revenue 3.5M.\n", encoding="utf-8")
    fake_server.set_script(broken)
    again = await app.run("auto_resource", paths=["resource/2026-06-01/report.md"])
    assert not again.success and f"card {card_path} left unchanged and pending" in again.answer
    after = (app.workspace_dir / card_path).read_text(encoding="utf-8")
    assert (
        after.replace("pending: true\n", "") == before
        and front_matter(app.workspace_dir / card_path)["pending"] is True
    )


async def wait_for(condition: Any, seconds: float = 60.0) -> bool:
    for _ in range(int(seconds / 0.1)):
        if condition():
            return True
        await asyncio.sleep(0.1)
    return condition()


def distilled(card: Path) -> Any:
    """A condition: the card exists and its agent run has finished (the pending mark is gone).

    A card exists from the moment its stub is written; waiting for that alone races the agent,
    whose writes (temporary file, rename) are still landing in the folder.
    """

    def done() -> bool:
        try:
            return "pending: true" not in card.read_text(encoding="utf-8")
        except FileNotFoundError:
            return False

    return done


async def test_watch_loop_follows_added_and_deleted_files(make_app: MakeApp) -> None:
    steps = [{"backend": "resource_watch", "debounce_ms": 100, "scan_on_start": True}]
    app = await make_app(**scripted(READ_AND_WRITE), **{"jobs.resource_watch_loop.steps": steps})
    put(app, "resource/2026-06-01/early.md", "Present before start.\n")
    app.start_background()
    early = app.workspace_dir / "daily/2026-06-01/early.md"
    assert await wait_for(
        lambda: early.exists() and "Present before start" in early.read_text(encoding="utf-8")
    )
    source = put(app, "resource/2026-06-02/minutes.md", "Decided: hire two engineers.\n")
    card = app.workspace_dir / "daily/2026-06-02/minutes.md"
    assert await wait_for(
        lambda: card.exists() and "hire two engineers" in card.read_text(encoding="utf-8")
    ), app.job_runs
    source.unlink()
    assert await wait_for(lambda: not card.exists())
    index = app.workspace_dir / "daily/2026-06-02.md"
    assert await wait_for(lambda: "minutes.md" not in index.read_text(encoding="utf-8"))


def test_watch_batches_scan_new_folders_and_keep_the_last_word(tmp_path: Path) -> None:
    from watchfiles import Change

    from reme.app.steps.resource import split_batch

    root = tmp_path / "resource"
    (root / "2026-06-02/sub").mkdir(parents=True)
    (root / "2026-06-02/sub/a.md").write_text("a", encoding="utf-8")
    (root / "2026-06-02/photo.png").write_bytes(b"png")
    (root / "kept.txt").write_text("k", encoding="utf-8")
    changes = [
        (Change.added, str(root / "2026-06-02")),  # its files were written before the watch reached it
        (Change.deleted, str(root / "gone.md")),
        (Change.deleted, str(root / "kept.txt")),  # deleted, then written again
        (Change.added, str(root / "kept.txt")),
        (Change.added, str(tmp_path / "elsewhere.md")),
    ]
    paths, deleted = split_batch(changes, root.resolve(), "resource")
    assert sorted(paths) == ["resource/2026-06-02/sub/a.md", "resource/kept.txt"]
    assert deleted == ["resource/gone.md"]


async def test_a_rescan_reads_each_card_a_bounded_number_of_times(
    make_port_app: MakePortApp, monkeypatch: Any
) -> None:
    app = make_port_app(**scripted(READ_AND_WRITE))
    count = 12
    for i in range(count):
        put(app, f"resource/2026-06-01/r{i}.md", f"resource {i}\n")
    put(app, "resource/loose.md", "loose\n")
    assert (await app.run("auto_resource")).success
    reads: list[str] = []
    run = app.run

    async def counting(job: str, /, **params: Any) -> Any:
        if job == "frontmatter_read":
            reads.append(params["path"])
        return await run(job, **params)

    monkeypatch.setattr(app, "run", counting)
    rescan = await app.run("auto_resource")
    assert rescan.success and len(rescan.metadata["skipped"]) == count + 1
    assert len(reads) <= 2 * (count + 1), len(reads)  # was one read per card per resource


async def test_watch_loop_skips_a_badly_named_file_but_not_its_batch(make_app: MakeApp) -> None:
    steps = [{"backend": "resource_watch", "debounce_ms": 300, "scan_on_start": True}]
    app = await make_app(**scripted(READ_AND_WRITE), **{"jobs.resource_watch_loop.steps": steps})
    put(app, "resource/2026-06-01/early.md", "Present before start.\n")
    app.start_background()
    assert await wait_for(distilled(app.workspace_dir / "daily/2026-06-01/early.md"))  # the loop is running
    put(app, "resource/2026-06-01/notes: draft.md", "A colon is refused in workspace names.\n")
    put(app, "resource/2026-06-01/agenda.md", "Kick-off on Monday.\n")
    card = app.workspace_dir / "daily/2026-06-01/agenda.md"
    assert await wait_for(distilled(card), seconds=30), app.job_runs
    assert sorted(p.name for p in card.parent.iterdir()) == ["agenda.md", "early.md"]

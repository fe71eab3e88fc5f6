"""The file jobs of docs/spec.md §7 through `app.run`, asserting the files on disk byte for byte."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator

import pytest

from reme import ReMe


def disk(app, path: str) -> str:
    return (app.workspace_dir / path).read_text(encoding="utf-8")


# read ----------------------------------------------------------------------------------------------


async def test_read_of_a_small_file_answers_exactly_its_text(app):
    (app.workspace_dir / "digest/a.md").write_bytes(b"one\r\ntwo\n\nfour")
    response = await app.run("read", path="digest/a.md")
    assert response.success and response.answer == "one\r\ntwo\n\nfour"
    assert response.metadata == {
        "path": "digest/a.md",
        "start_line": 1,
        "end_line": 4,
        "total_lines": 4,
        "next_start_line": None,
    }


async def test_read_counts_lines_as_an_editor_and_resolves_md(app):
    (app.workspace_dir / "digest/a.md").write_text("1\n2\n3\n")
    response = await app.run("read", path="digest/a", start_line=2, end_line=9)
    assert response.answer == "2\n3\n"
    assert response.metadata["total_lines"] == 3 and response.metadata["end_line"] == 3
    assert response.metadata["path"] == "digest/a.md"
    empty = await app.run("write", path="digest/empty.md", content="")
    assert empty.success
    assert (await app.run("read", path="digest/empty.md")).metadata["total_lines"] == 0


async def test_read_pages_large_files_with_the_next_start_line(app):
    (app.workspace_dir / "resource/big.txt").write_text("".join(f"line {i}\n" for i in range(1, 5001)))
    first = await app.run("read", path="resource/big.txt")
    assert len(first.answer) <= 10_000 and first.answer.endswith("\n")
    last = first.metadata["end_line"]
    assert first.metadata["start_line"] == 1 and 1000 <= last < 5000
    assert first.metadata["next_start_line"] == last + 1 and first.metadata["total_lines"] == 5000
    pages, start = [first.answer], first.metadata["next_start_line"]
    while start is not None:
        page = await app.run("read", path="resource/big.txt", start_line=start)
        assert page.metadata["start_line"] == start and len(page.answer) <= 10_000
        pages.append(page.answer)
        start = page.metadata["next_start_line"]
    assert "".join(pages) == disk(app, "resource/big.txt")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"path": "digest/a.md", "start_line": 3, "end_line": 2}, "start_line"),
        ({"path": "digest/a.md", "start_line": 0}, "start_line"),
        ({"path": "digest/a.md", "start_line": 9}, "past the end"),
        ({"path": "digest/missing.md"}, "no file"),
        ({"path": "digest"}, "folder"),
        ({"path": "resource/blob.bin"}, "binary"),
        ({"path": "resource/latin1.txt"}, "UTF-8"),
    ],
)
async def test_read_refusals(app, params, message):
    (app.workspace_dir / "digest/a.md").write_text("1\n2\n")
    (app.workspace_dir / "resource/blob.bin").write_bytes(b"\x00\x01\x02")
    (app.workspace_dir / "resource/latin1.txt").write_bytes("café".encode("latin-1"))
    response = await app.run("read", **params)
    assert not response.success and message in response.answer


# read_image ----------------------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


async def test_read_image_returns_base64_and_mime(app):
    (app.workspace_dir / "resource/pic.png").write_bytes(PNG)
    response = await app.run("read_image", path="resource/pic.png")
    assert response.success and base64.b64decode(response.answer) == PNG
    assert response.metadata == {"path": "resource/pic.png", "mime_type": "image/png", "size": len(PNG)}


async def test_read_image_refuses_big_files_and_non_images(app):
    (app.workspace_dir / "resource/huge.png").write_bytes(PNG + b"\x00" * (5 * 1024 * 1024))
    (app.workspace_dir / "resource/fake.png").write_bytes(b"not an image")
    assert "5242880" in (await app.run("read_image", path="resource/huge.png")).answer
    assert "not an image" in (await app.run("read_image", path="resource/fake.png")).answer


# write / edit --------------------------------------------------------------------------------------


async def test_write_creates_markdown_with_front_matter_and_parent_folders(app):
    response = await app.run(
        "write",
        path="digest/wiki/solar",
        content="# Solar\n[[digest/wiki/ev.md]]\n",
        name="Solar",
        description="Photovoltaics",
        metadata={"tags": ["energy"], "source": "[[daily/2026-06-01.md]]"},
    )
    assert response.success and response.metadata == {
        "path": "digest/wiki/solar.md",
        "created": True,
        "indexed": True,
    }
    assert disk(app, "digest/wiki/solar.md") == (
        "---\nname: Solar\ndescription: Photovoltaics\ntags:\n- energy\nsource: '[[daily/2026-06-01.md]]'\n---\n"
        "# Solar\n[[digest/wiki/ev.md]]\n"
    )


async def test_write_merges_with_the_existing_front_matter(app):
    (app.workspace_dir / "digest/a.md").write_text("---\nname: A  # mine\nkeep: 1\n---\nold body\n")
    response = await app.run("write", path="digest/a.md", content="new body\n", description="D")
    kept = response.metadata.pop("previous_version")  # issue 23.11: the replaced text stays recoverable
    assert response.metadata == {
        "path": "digest/a.md",
        "created": False,
        "replaced": True,
        "size": 56,
        "previous_size": 41,
        "indexed": True,
    }
    assert disk(app, kept) == "---\nname: A  # mine\nkeep: 1\n---\nold body\n"
    assert disk(app, "digest/a.md") == "---\nname: A  # mine\nkeep: 1\ndescription: D\n---\nnew body\n"
    await app.run("write", path="digest/a.md", content="---\nkeep: 2\nextra: x\n---\nthird\n")
    assert disk(app, "digest/a.md") == "---\nname: A  # mine\nkeep: 2\ndescription: D\nextra: x\n---\nthird\n"


async def test_write_of_other_files_is_verbatim(app):
    content = "---\nnot: front matter here\n---\r\nraw\x01text"
    assert (await app.run("write", path="resource/raw.txt", content=content)).success
    assert (app.workspace_dir / "resource/raw.txt").read_bytes() == content.encode()
    refused = await app.run("write", path="resource/raw.txt", content="x", name="n")
    assert not refused.success and "not Markdown" in refused.answer
    assert (app.workspace_dir / "resource/raw.txt").read_bytes() == content.encode()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"content": "a\x00b"}, "NUL"),
        ({"content": "x", "name": "n", "metadata": {"name": 1}}, "reserved"),
        ({"content": "---\nbad: [\n---\nbody"}, "cannot be read"),
        ({"content": "x", "metadata": {"description": ["not", "a", "string"]}}, "reserved"),
    ],
)
async def test_write_refusals_leave_the_file_unchanged(app, params, message):
    (app.workspace_dir / "digest/a.md").write_text("---\nname: A\n---\nbody\n")
    response = await app.run("write", path="digest/a.md", **params)
    assert not response.success and message in response.answer
    assert disk(app, "digest/a.md") == "---\nname: A\n---\nbody\n"


async def test_edit_replaces_every_occurrence_in_the_body_only(app):
    (app.workspace_dir / "digest/a.md").write_text("---\nname: cat\n---\ncat and cat\n")
    response = await app.run("edit", path="digest/a", old="cat", new="dog")
    assert response.success and response.metadata == {"path": "digest/a.md", "count": 2}
    assert disk(app, "digest/a.md") == "---\nname: cat\n---\ndog and dog\n"


async def test_edit_with_absent_or_empty_old_fails_unchanged(app):
    (app.workspace_dir / "digest/a.md").write_text("---\nname: cat\n---\nbody\n")
    for old in ("cat", "missing", ""):
        response = await app.run("edit", path="digest/a.md", old=old, new="x")
        assert not response.success
    assert disk(app, "digest/a.md") == "---\nname: cat\n---\nbody\n"


# delete / move -------------------------------------------------------------------------------------


@pytest.fixture(params=["index", "scan"])
async def linked_app(request, workspace_dir) -> AsyncIterator[ReMe]:
    """The app with the index's link graph, and without an index (inbound links found by a scan)."""
    overrides = {} if request.param == "index" else {"components.index.enabled": False}
    async with ReMe(workspace_dir=workspace_dir, timezone="UTC", **overrides) as started:
        assert ("index" in started.components) == (request.param == "index")
        yield started


async def test_delete_reports_inbound_links_and_never_rewrites_them(linked_app):
    app = linked_app
    root = app.workspace_dir
    (root / "digest/wiki").mkdir()
    (root / "digest/wiki/solar.md").write_text("solar\n")
    (root / "digest/wiki/ev.md").write_text("see [[digest/wiki/solar.md]]\n")
    (root / "daily/2026-06-01.md").write_text("---\nsource: '[[digest/wiki/solar.md]]'\n---\n")
    response = await app.run("delete", path="digest/wiki/solar.md")
    assert response.success and not (root / "digest/wiki/solar.md").exists()
    assert response.metadata["inbound"] == [
        {
            "source_path": "daily/2026-06-01.md",
            "target_path": "digest/wiki/solar.md",
            "resolved_path": "digest/wiki/solar.md",
        },
        {
            "source_path": "digest/wiki/ev.md",
            "target_path": "digest/wiki/solar.md",
            "resolved_path": "digest/wiki/solar.md",
        },
    ]
    assert disk(app, "digest/wiki/ev.md") == "see [[digest/wiki/solar.md]]\n"


async def test_delete_of_a_folder_ignores_links_from_inside_it(linked_app):
    app = linked_app
    root = app.workspace_dir
    (root / "digest/wiki").mkdir()
    (root / "digest/wiki/a.md").write_text("[[digest/wiki/b.md]]\n")
    (root / "digest/wiki/b.md").write_text("b\n")
    (root / "digest/out.md").write_text("[[digest/wiki/a.md]]\n")
    response = await app.run("delete", path="digest/wiki")
    assert response.success and not (root / "digest/wiki").exists()
    assert response.metadata["inbound"] == [
        {
            "source_path": "digest/out.md",
            "target_path": "digest/wiki/a.md",
            "resolved_path": "digest/wiki/a.md",
        }
    ]
    assert not (await app.run("delete", path="digest/wiki")).success
    assert not (await app.run("delete", path="daily")).success and (root / "daily").is_dir()


async def test_move_rewrites_inbound_links_byte_for_byte(linked_app):
    app = linked_app
    root = app.workspace_dir
    (root / "digest/wiki").mkdir()
    (root / "digest/wiki/catl.md").write_text("---\nname: CATL\n---\nself [[digest/wiki/catl.md#top]]\n")
    source = (
        "---\nrelated: '[[digest/wiki/catl.md]]'\n---\n"
        "[[digest/wiki/catl.md|CATL]] ![[digest/wiki/catl.md]] rival:: [[digest/wiki/catl.md#x]]\n"
        "`[[digest/wiki/catl.md]]` [[digest/wiki/catl.mdx]]\n"
    )
    (root / "digest/wiki/ev.md").write_text(source)
    response = await app.run("move", src="digest/wiki/catl.md", dst="digest/companies/catl")
    assert response.success
    assert response.metadata == {
        "src": "digest/wiki/catl.md",
        "dst": "digest/companies/catl.md",
        "retargeted_files": ["digest/companies/catl.md", "digest/wiki/ev.md"],
        "retargeted_links": 5,
    }
    assert disk(app, "digest/wiki/ev.md") == source.replace(
        "[[digest/wiki/catl.md", "[[digest/companies/catl.md", 4
    )
    assert (
        disk(app, "digest/companies/catl.md")
        == "---\nname: CATL\n---\nself [[digest/companies/catl.md#top]]\n"
    )


async def test_move_finds_a_link_written_to_disk_after_the_index_was_built(linked_app):
    app = linked_app
    assert (await app.run("write", path="digest/wiki/solar.md", content="Solar.\n")).success
    if "index" in app.components:
        assert (await app.run("search", query="solar")).success  # the index is built and live
    (app.workspace_dir / "daily").mkdir(exist_ok=True)
    (app.workspace_dir / "daily/2026-06-01.md").write_text("by hand: [[digest/wiki/solar.md]]\n")
    response = await app.run("move", src="digest/wiki/solar.md", dst="digest/wiki/pv.md")
    assert response.success and response.metadata["retargeted_files"] == ["daily/2026-06-01.md"]
    assert disk(app, "daily/2026-06-01.md") == "by hand: [[digest/wiki/pv.md]]\n"


async def test_move_without_retarget_and_overwrite_rules(linked_app):
    app = linked_app
    root = app.workspace_dir
    (root / "digest/a.md").write_text("a\n")
    (root / "digest/b.md").write_text("b\n")
    (root / "digest/ref.md").write_text("[[digest/a.md]]\n")
    refused = await app.run("move", src="digest/a.md", dst="digest/b.md")
    assert not refused.success and "overwrite" in refused.answer and disk(app, "digest/b.md") == "b\n"
    response = await app.run("move", src="digest/a.md", dst="digest/b.md", overwrite=True, retarget=False)
    assert response.success and response.metadata["retargeted_links"] == 0
    assert disk(app, "digest/b.md") == "a\n" and not (root / "digest/a.md").exists()
    assert disk(app, "digest/ref.md") == "[[digest/a.md]]\n"


async def test_move_refuses_a_name_a_link_cannot_hold_rather_than_break_links(linked_app):
    app = linked_app
    root = app.workspace_dir
    (root / "digest/a.md").write_text("a\n")
    (root / "digest/ref.md").write_text("see [[digest/a.md]]\n")
    for dst in ("digest/c#1.md", "digest/x[1].md"):
        refused = await app.run("move", src="digest/a.md", dst=dst)
        assert not refused.success and "retarget=false" in refused.answer, dst
        assert disk(app, "digest/a.md") == "a\n" and not (root / dst).exists()
        assert disk(app, "digest/ref.md") == "see [[digest/a.md]]\n"
    kept = await app.run("move", src="digest/a.md", dst="digest/c#1.md", retarget=False)
    assert kept.success and disk(app, "digest/c#1.md") == "a\n"


async def test_move_of_a_folder_retargets_links_into_it(linked_app):
    app = linked_app
    root = app.workspace_dir
    (root / "digest/wiki").mkdir()
    (root / "digest/wiki/a.md").write_text("[[digest/wiki/b.md]]\n")
    (root / "digest/wiki/b.md").write_text("b\n")
    (root / "daily/ref.md").write_text("[[digest/wiki/a.md]] [[digest/wiki]]\n")
    response = await app.run("move", src="digest/wiki", dst="digest/kb")
    assert response.success and response.metadata["retargeted_links"] == 3
    assert disk(app, "digest/kb/a.md") == "[[digest/kb/b.md]]\n"
    assert disk(app, "daily/ref.md") == "[[digest/kb/a.md]] [[digest/kb]]\n"
    into_itself = await app.run("move", src="digest/kb", dst="digest/kb/inner")
    assert not into_itself.success and (root / "digest/kb/a.md").exists()


# list / stat ---------------------------------------------------------------------------------------


async def test_list_hides_metadata_and_hidden_files_and_filters(app):
    root = app.workspace_dir
    (root / "digest/_buckets.md").unlink()  # the generated bucket page; these tests list their own files
    (root / "digest/a.md").write_text("a")
    (root / "digest/b.txt").write_text("bb")
    (root / "digest/.hidden.md").write_text("h")
    top = await app.run("list")
    assert [e["path"] for e in top.metadata["entries"]] == ["daily", "digest", "resource", "session"]
    assert all(e["type"] == "dir" for e in top.metadata["entries"])
    deep = await app.run("list", recursive=True, extensions=["md"])
    assert deep.metadata["entries"] == [
        {"path": "digest/a.md", "type": "file", "size": 1, "mtime": (root / "digest/a.md").stat().st_mtime}
    ]
    limited = await app.run("list", path="digest", sort_by="name", limit=1)
    assert [e["path"] for e in limited.metadata["entries"]] == ["digest/a.md"]
    assert limited.metadata["truncated"] is True
    assert not (await app.run("list", sort_by="size")).success
    assert not (await app.run("list", path="digest/a.md")).success


async def test_list_skips_a_dangling_symlink_instead_of_failing(app):
    root = app.workspace_dir
    (root / "digest/_buckets.md").unlink()  # the generated bucket page; these tests list their own files
    (root / "digest/a.md").write_text("a")
    (root / "digest/dangling.md").symlink_to(root / "digest/gone.md")
    response = await app.run("list", path="digest")
    assert response.success, response.answer
    assert [e["path"] for e in response.metadata["entries"]] == ["digest/a.md"]


async def test_list_sorts_by_mtime_newest_first(app):
    import os

    root = app.workspace_dir
    (root / "digest/_buckets.md").unlink()  # the generated bucket page
    for name, when in (("old.md", 1_000_000), ("new.md", 2_000_000), ("mid.md", 1_500_000)):
        (root / "digest" / name).write_text(name)
        os.utime(root / "digest" / name, (when, when))
    response = await app.run("list", path="digest", sort_by="mtime")
    assert [e["path"] for e in response.metadata["entries"]] == [
        "digest/new.md",
        "digest/mid.md",
        "digest/old.md",
    ]


async def test_stat_reports_front_matter_and_link_counts(linked_app):
    app = linked_app
    root = app.workspace_dir
    (root / "digest/a.md").write_text(
        "---\nname: A\nsrc: '[[digest/b.md]]'\n---\n[[digest/b.md]] [[digest/b.md]]\nis_a:: [[digest/b.md]]\n"
    )
    (root / "digest/b.md").write_text("[[digest/a.md]]\n")
    response = await app.run("stat", path="digest/a")
    info = (root / "digest/a.md").stat()
    assert response.metadata == {
        "path": "digest/a.md",
        "type": "file",
        "size": info.st_size,
        "mtime": info.st_mtime,
        "front_matter": {"name": "A", "src": "[[digest/b.md]]"},
        "outlink_count": 3,
        "inlink_count": 1,
    }
    target = await app.run("stat", path="digest/b.md")
    assert target.metadata["inlink_count"] == 3  # the edges a.md counts as outlinks: src, plain, is_a
    folder = await app.run("stat", path="digest")
    assert folder.metadata["type"] == "dir" and folder.metadata["inlink_count"] == 4  # a->b thrice, b->a


# front matter jobs ---------------------------------------------------------------------------------


async def test_frontmatter_jobs_keep_the_body_byte_identical(app):
    body = "Body with --- and [[digest/x.md]]\r\n\ttabs  \n"
    (app.workspace_dir / "digest/a.md").write_text("---\nname: A\n# note\nold: 1\n---\n" + body, newline="")
    read = await app.run("frontmatter_read", path="digest/a")
    assert read.metadata == {"path": "digest/a.md", "front_matter": {"name": "A", "old": 1}}
    update = await app.run(
        "frontmatter_update", path="digest/a.md", metadata={"old": 2, "new": "[[digest/y.md]]"}
    )
    assert update.metadata["front_matter"] == {"name": "A", "old": 2, "new": "[[digest/y.md]]"}
    assert (app.workspace_dir / "digest/a.md").read_bytes().decode() == (
        "---\nname: A\n# note\nold: 2\nnew: '[[digest/y.md]]'\n---\n" + body
    )
    delete = await app.run("frontmatter_delete", path="digest/a.md", keys=["old", "absent"])
    assert delete.metadata == {"path": "digest/a.md", "deleted": ["old"], "missing": ["absent"]}
    assert (app.workspace_dir / "digest/a.md").read_bytes().decode() == (
        "---\nname: A\n# note\nnew: '[[digest/y.md]]'\n---\n" + body
    )


async def test_frontmatter_read_reports_broken_yaml_without_failing(app):
    text = "---\nname: [broken\n---\nbody\n"
    (app.workspace_dir / "digest/a.md").write_text(text)
    read = await app.run("frontmatter_read", path="digest/a.md")
    assert read.success and read.metadata["front_matter"] == {} and "not valid YAML" in read.metadata["error"]
    update = await app.run("frontmatter_update", path="digest/a.md", metadata={"x": 1})
    assert not update.success and disk(app, "digest/a.md") == text
    assert not (await app.run("frontmatter_update", path="resource/a.txt", metadata={"x": 1})).success


# load / save ---------------------------------------------------------------------------------------


async def test_load_and_save_with_optimistic_concurrency(app):
    (app.workspace_dir / "digest/a.md").write_text("v1\n")
    loaded = await app.run("load", path="digest/a.md")
    assert loaded.answer == "v1\n" and loaded.metadata["content"] == "v1\n"
    assert loaded.metadata["sha256"] == hashlib.sha256(b"v1\n").hexdigest()
    saved = await app.run("save", path="digest/a.md", content="v2\n", expected_mtime=loaded.metadata["mtime"])
    assert saved.success and disk(app, "digest/a.md") == "v2\n"
    assert saved.metadata["sha256"] == hashlib.sha256(b"v2\n").hexdigest()
    assert saved.metadata["mtime"] == (app.workspace_dir / "digest/a.md").stat().st_mtime
    stale = await app.run(
        "save", path="digest/a.md", content="v3\n", expected_sha256=loaded.metadata["sha256"]
    )
    assert not stale.success and "conflict" in stale.answer and stale.metadata["conflict"] is True
    assert stale.metadata["sha256"] == saved.metadata["sha256"]
    assert disk(app, "digest/a.md") == "v2\n"
    stale_mtime = await app.run(
        "save", path="digest/a.md", content="v3\n", expected_mtime=loaded.metadata["mtime"] - 5
    )
    assert not stale_mtime.success and disk(app, "digest/a.md") == "v2\n"


async def test_save_with_a_nan_mtime_is_refused_not_a_match(app):
    """JSON bodies may carry NaN; it matches no mtime: refused by name, the file untouched."""
    (app.workspace_dir / "digest/a.md").write_text("v1\n")
    saved = await app.run("save", path="digest/a.md", content="v2\n", expected_mtime=float("nan"))
    assert not saved.success and "expected_mtime" in saved.answer and "finite" in saved.answer
    assert disk(app, "digest/a.md") == "v1\n"


async def test_save_creates_files_and_conflicts_on_a_deleted_file(app):
    assert (await app.run("save", path="digest/new", content="x")).metadata["path"] == "digest/new.md"
    gone = await app.run("save", path="digest/gone.md", content="x", expected_sha256="0" * 64)
    assert not gone.success and not (app.workspace_dir / "digest/gone.md").exists()


async def test_unknown_parameters_are_refused_before_any_step(app):
    response = await app.run("write", path="digest/a.md", content="x", bogus=1)
    assert not response.success and not (app.workspace_dir / "digest/a.md").exists()


async def test_writes_are_searchable_at_once(app):
    assert "index" in app.components
    await app.run("write", path="digest/wiki/zebra.md", content="The quokkaphant lives here.\n")
    found = await app.run("search", query="quokkaphant")
    assert [hit["path"] for hit in found.metadata["results"]] == ["digest/wiki/zebra.md"]
    await app.run("move", src="digest/wiki/zebra.md", dst="digest/wiki/okapi.md")
    moved = await app.run("search", query="quokkaphant")
    assert [hit["path"] for hit in moved.metadata["results"]] == ["digest/wiki/okapi.md"]
    await app.run("edit", path="digest/wiki/okapi.md", old="quokkaphant", new="giraffe")
    assert (await app.run("search", query="quokkaphant")).metadata["results"] == []
    await app.run("delete", path="digest/wiki/okapi.md")
    assert (await app.run("search", query="giraffe")).metadata["results"] == []


async def test_a_file_cannot_be_written_below_a_file(app):
    (app.workspace_dir / "digest/a.md").write_text("a\n")
    for job, params in [
        ("write", {"path": "digest/a.md/x.md", "content": "x"}),
        ("save", {"path": "digest/a.md/x.md", "content": "x"}),
        ("daily_create", {"date": "2026-06-01", "name": "x"}),
    ]:
        if job == "daily_create":
            (app.workspace_dir / "daily/2026-06-01").write_text("a file where the day folder belongs")
        response = await app.run(job, **params)
        assert not response.success and "is a file" in response.answer, job
    assert (app.workspace_dir / "digest/a.md").read_text() == "a\n"


async def test_move_never_rewrites_raw_material_in_resource(linked_app):
    app = linked_app
    root = app.workspace_dir
    (root / "digest/a.md").write_text("a\n")
    (root / "resource/2026-06-01").mkdir()
    (root / "resource/2026-06-01/clip.md").write_text("raw [[digest/a.md]]\n")
    (root / "daily/n.md").write_text("[[digest/a.md]]\n")
    response = await app.run("move", src="digest/a.md", dst="digest/b.md")
    assert response.metadata["retargeted_files"] == ["daily/n.md"]
    assert (root / "resource/2026-06-01/clip.md").read_text() == "raw [[digest/a.md]]\n"

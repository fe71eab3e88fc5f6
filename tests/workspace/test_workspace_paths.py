"""Path safety (docs/spec.md §14): every unsafe path is refused by every job, and nothing is written anywhere."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support import snapshot

from reme.workspace.layout import Workspace
from reme.workspace.paths import ProtectedPathError, UnsafePathError, check_relative

UNSAFE = [
    "/etc/passwd",
    "/tmp/x.md",
    "C:/notes/x.md",
    "c:x.md",
    "../outside.md",
    "digest/../../outside.md",
    "digest/../daily/x.md",
    "~/x.md",
    "~root/x.md",
    "digest/~x.md",
    "a\x00b.md",
    "a\nb.md",
    "a\tb.md",
    "a\x7fb.md",
    "a\x85b.md",
    "CON.md",
    "digest/aux",
    "digest/com1.txt",
    "lpt9",
    "nul.tar.gz",
    "a<b.md",
    "a>b.md",
    'a"b.md',
    "a|b.md",
    "a?b.md",
    "a*b.md",
    "a:b.md",
    "digest\\x.md",
    "digest/trailing./x.md",
    "digest/trailing /x.md",
    " leading.md",
    "a//b.md",
    "./a.md",
    "digest/./a.md",
    "",
    "x" * 2000,
    "digest/" + "n" * 300 + ".md",
]


@pytest.mark.parametrize("path", UNSAFE)
def test_unsafe_paths_are_refused_with_a_message(path):
    with pytest.raises(UnsafePathError) as refused:
        check_relative(path)
    assert str(refused.value)


@pytest.mark.parametrize(
    ("path", "canonical"),
    [
        ("digest/wiki/solar.md", "digest/wiki/solar.md"),
        ("光伏/a b.md", "光伏/a b.md"),
        ("digest/wiki/", "digest/wiki"),
    ],
)
def test_safe_paths_are_kept(path, canonical):
    assert check_relative(path) == canonical


def test_root_only_where_allowed(tmp_path):
    assert check_relative("", allow_root=True) == ""
    assert Workspace(tmp_path).resolve("", allow_root=True) == tmp_path.resolve()


def test_metadata_is_readable_but_not_writable(tmp_path):
    ws = Workspace(tmp_path)
    assert ws.resolve("metadata/index.db") == tmp_path.resolve() / "metadata/index.db"
    for path in ("metadata/x.md", "Metadata/x.md", "metadata"):
        with pytest.raises(ProtectedPathError):
            ws.resolve(path, write=True)


def test_markdown_jobs_complete_a_missing_extension(tmp_path):
    ws = Workspace(tmp_path)
    ws.ensure_layout()
    assert ws.relative_for("digest/solar", markdown=True) == "digest/solar.md"
    (tmp_path / "digest/Makefile").write_text("all:\n")
    assert ws.relative_for("digest/Makefile", markdown=True) == "digest/Makefile"
    assert ws.relative_for("digest", markdown=True) == "digest"
    assert ws.relative_for("digest/solar", markdown=False) == "digest/solar"


def write_jobs(path: str) -> list[tuple[str, dict]]:
    """Every job that writes, aimed at `path` (as source and as destination where it has both)."""
    return [
        ("write", {"path": path, "content": "x"}),
        ("save", {"path": path, "content": "x"}),
        ("edit", {"path": path, "old": "a", "new": "b"}),
        ("delete", {"path": path}),
        ("move", {"src": path, "dst": "digest/moved.md"}),
        ("move", {"src": "digest/keep.md", "dst": path}),
        ("frontmatter_update", {"path": path, "metadata": {"a": 1}}),
        ("frontmatter_delete", {"path": path, "keys": ["name"]}),
    ]


def read_jobs(path: str) -> list[tuple[str, dict]]:
    return [
        ("read", {"path": path}),
        ("read_image", {"path": path}),
        ("load", {"path": path}),
        ("stat", {"path": path}),
        ("list", {"path": path}),
        ("frontmatter_read", {"path": path}),
    ]


@pytest.fixture
def guarded(app, tmp_path):
    """A started app with a note, a secret outside the workspace and escaping symlinks inside it."""
    root = app.workspace_dir
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\nname: classified\n---\nclassified [[x.md]]\n")
    (root / "digest/keep.md").write_text("---\nname: keep\n---\nkeep a\n")
    (root / "digest/out").symlink_to(outside, target_is_directory=True)
    (root / "digest/secret.md").symlink_to(outside / "secret.md")
    (root / "digest/meta").symlink_to(root / "metadata", target_is_directory=True)
    return app


ESCAPES = ["digest/out/secret.md", "digest/out/new.md", "digest/secret.md", "digest/out"]


async def test_every_write_job_refuses_every_unsafe_path_and_writes_nothing(guarded, tmp_path):
    before = snapshot(tmp_path)
    escapes = [path for path in ESCAPES if path != "digest/out"]  # as a move target it means digest/out.md
    for path in [*UNSAFE, *escapes, "metadata/x.md", "metadata", "Metadata/y.md", "digest/meta/x.md"]:
        for job, params in write_jobs(path):
            response = await guarded.run(job, **params)
            assert not response.success, (job, path)
            assert isinstance(response.answer, str) and response.answer, (job, path)
        assert snapshot(tmp_path) == before, path


async def test_every_read_job_refuses_paths_leaving_the_workspace(guarded, tmp_path):
    before = snapshot(tmp_path)
    for path in [*UNSAFE, *ESCAPES]:
        if path == "":
            continue  # the workspace itself may be listed and stat'ed
        for job, params in read_jobs(path):
            response = await guarded.run(job, **params)
            assert not response.success, (job, path)
            assert "classified" not in str(response.answer) + str(response.metadata), (job, path)
    assert snapshot(tmp_path) == before


async def test_daily_jobs_refuse_unsafe_names_and_dates(guarded, tmp_path):
    before = snapshot(tmp_path)
    for params in [
        {"date": "2026-06-01", "name": "../escape"},
        {"date": "2026-06-01", "name": "a/b"},
        {"date": "2026-06-01", "session_id": "../../x"},
        {"date": "2026-06-01", "name": "CON"},
        {"date": "../../x"},
        {"date": "2026-13-01"},
        {"date": "2026-02-30"},
        {"date": "20260601"},
        {"date": "2026-6-1"},
    ]:
        response = await guarded.run("daily_create", **params)
        assert not response.success, params
    for job in ("daily_list", "daily_reindex"):
        for day in ("2026-02-30", "yesterday", "../2026-06-01"):
            assert not (await guarded.run(job, date=day)).success
    assert snapshot(tmp_path) == before


async def test_a_symlink_inside_the_workspace_that_stays_inside_is_followed(app):
    root = app.workspace_dir
    (root / "digest/real.md").write_text("real\n")
    (root / "digest/alias.md").symlink_to(root / "digest/real.md")
    assert (await app.run("read", path="digest/alias.md")).answer == "real\n"
    assert (await app.run("write", path="digest/alias.md", content="changed\n")).success
    assert (root / "digest/alias.md").is_symlink()
    assert (root / "digest/real.md").read_text() == "changed\n"


PIECES = [*'ab./\\~:*?<>|"\x00\n é光C', "..", "CON", "metadata", "Metadata"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
def test_no_accepted_path_leaves_the_workspace_or_touches_metadata(tmp_path_factory, path):
    root = tmp_path_factory.getbasetemp() / "property-ws"
    ws = Workspace(root)
    try:
        resolved = ws.resolve(path, write=True)
    except UnsafePathError:
        return
    assert resolved.is_relative_to(ws.root) and resolved != ws.root
    relative = resolved.relative_to(ws.root).as_posix()
    assert relative == path.rstrip("/") and relative.split("/")[0].casefold() != "metadata"
    assert all(ord(ch) >= 32 for ch in relative) and ".." not in relative.split("/")


@pytest.mark.parametrize(
    "name", ["digest/evil\u202edm.exe.md", "digest/zero\u200bwidth.md", "digest/line\u2028sep.md"]
)
async def test_invisible_format_characters_are_refused_in_new_names(app, name):
    (app.workspace_dir / "digest/keep.md").write_text("keep\n")
    before = snapshot(app.workspace_dir)
    for job, params in [
        ("write", {"path": name, "content": "x"}),
        ("daily_create", {"date": "2026-06-01", "name": name.split("/")[-1][:-3]}),
    ]:
        response = await app.run(job, **params)
        assert not response.success and "invisible character U+" in response.answer, (job, response.answer)
    moved = await app.run("move", src="digest/keep.md", dst=name)
    assert not moved.success and "invisible character" in moved.answer
    assert snapshot(app.workspace_dir) == before


async def test_an_existing_file_with_a_format_character_can_still_be_read_and_renamed(app):
    odd = app.workspace_dir / "digest/odd\u200bname.md"
    odd.write_text("odd\n")
    assert (await app.run("read", path="digest/odd\u200bname.md")).answer == "odd\n"
    assert (await app.run("move", src="digest/odd\u200bname.md", dst="digest/oddname.md")).success
    assert (app.workspace_dir / "digest/oddname.md").read_text() == "odd\n"


async def test_persian_names_with_a_zero_width_non_joiner_are_fine(app):
    assert (
        await app.run("write", path="digest/\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645.md", content="x")
    ).success

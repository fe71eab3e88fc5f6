"""Reading an import's source from the host: caps, text checks, symbolic links, dot-folders."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from reme import ReMe
from reme.app.import_sources import FolderLimits, read_folder, read_text_file, read_zip_member
from reme.errors import ReMeError


def test_a_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "big.json"
    source.write_text("[" + "1," * 600 + "1]", encoding="utf-8")
    with pytest.raises(ReMeError, match=r"over the limit of 1000 \(max_bytes\)"):
        read_text_file(source, 1000)
    assert read_text_file(source, 10_000).startswith("[1,1")


def test_text_is_utf8_and_a_bom_is_dropped(tmp_path: Path) -> None:
    source = tmp_path / "bom.json"
    source.write_bytes(b"\xef\xbb\xbf[]")
    assert read_text_file(source, 100) == "[]"
    source.write_bytes(b"caf\xe9")
    with pytest.raises(ReMeError, match="not UTF-8 text"):
        read_text_file(source, 100)
    with pytest.raises(ReMeError, match="is not a file"):
        read_text_file(tmp_path, 100)


def test_a_folder_skips_dot_entries_and_oversize_files(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "app.json").write_text("{}")
    (vault / ".DS_Store").write_bytes(b"\x00")
    (vault / "a.md").write_text("a")
    (vault / "big.pdf").write_bytes(b"x" * 2000)
    files, skipped = read_folder(vault, FolderLimits(max_file_bytes=1000))
    assert [f.relative for f in files] == ["a.md"]
    assert skipped == [{"item": "big.pdf", "reason": "2000 bytes, over max_file_bytes 1000"}]


def test_a_folder_over_the_file_count_is_refused(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for number in range(4):
        (vault / f"{number}.md").write_text("x")
    with pytest.raises(ReMeError, match="more than 3 files"):
        read_folder(vault, FolderLimits(max_files=3))


def test_symbolic_links_inside_are_noted_and_links_out_refused(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "real").mkdir(parents=True)
    (vault / "real" / "n.md").write_text("n")
    (vault / "alias").symlink_to(vault / "real")
    files, skipped = read_folder(vault, FolderLimits())
    assert [f.relative for f in files] == ["real/n.md"]
    assert skipped == [{"item": "alias", "reason": "symbolic link to a folder"}]
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / "escape").symlink_to(outside)
    with pytest.raises(ReMeError, match="leading out of"):
        read_folder(vault, FolderLimits())


async def test_the_job_caps_are_configurable_and_refuse_before_writing(tmp_path: Path) -> None:
    source = tmp_path / "mem0.json"
    source.write_text('[{"id": "m1", "memory": "' + "x" * 500 + '"}]', encoding="utf-8")
    steps = [{"backend": "import_mem0", "max_bytes": 100}]
    async with ReMe(
        workspace_dir=tmp_path / "ws", timezone="UTC", **{"jobs.import_mem0.steps": steps}
    ) as app:
        response = await app.run("import_mem0", source=str(source))
    assert not response.success and "over the limit of 100" in response.answer
    assert not (tmp_path / "ws" / "imports").exists()


def test_a_zip_member_is_found_at_any_depth_and_read_within_the_cap(tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("chat.html", "<html></html>")
        bundle.writestr("2024-06-01-export/conversations.json", "[]" + " " * 5000)
    assert read_zip_member(archive, "conversations.json", 10_000).startswith("[]")
    # compressed, the member is tiny; read, it is over the cap: refused whatever the header says
    with pytest.raises(ReMeError, match="over the limit of 100 bytes"):
        read_zip_member(archive, "conversations.json", 100)
    with pytest.raises(ReMeError, match="holds no memories.json"):
        read_zip_member(archive, "memories.json", 10_000)
    not_zip = tmp_path / "fake.zip"
    not_zip.write_text("plain text")
    with pytest.raises(ReMeError, match="cannot be read as a zip file"):
        read_zip_member(not_zip, "conversations.json", 100)


async def test_a_chatgpt_export_zip_imports_as_downloaded(tmp_path: Path) -> None:
    archive = tmp_path / "chatgpt-export.zip"
    data = Path(__file__).resolve().parents[1] / "pipelines" / "imports_data" / "conversations.json"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.write(data, "conversations.json")
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC") as app:
        response = await app.run("import_chatgpt", source=str(archive))
    assert response.success, response.answer
    assert len(response.metadata["created"]) == 4

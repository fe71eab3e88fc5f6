"""What a new user trips over on the CLI (issue 15): the wrong workspace, value typing, bare words,
help, mistyped jobs, broken pipes — through the real `reme` script and a default-config service."""

from __future__ import annotations

import json
import shutil
import subprocess

import httpx
import pytest
from tests.support import REME, reme_env

from reme.service import identity

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)


@pytest.fixture(scope="module")
def service(module_services, tmp_path_factory):
    workspace = tmp_path_factory.mktemp("first_use") / "ws"
    return module_services(workspace, "service.port=0")


def files_of(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def user_files_of(folder):
    """The files outside metadata/: the running service's own index segments and logs come and go."""
    return [path for path in files_of(folder) if not path.startswith("metadata/")]


# 1. never the wrong workspace -------------------------------------------------------------------


def test_workspace_dir_without_a_service_fails_and_writes_nowhere(service, run_reme, tmp_path):
    other = tmp_path / "other-notes"
    other.mkdir()
    before = user_files_of(service.workspace)
    result = run_reme("write", f"workspace_dir={other}", "path=a.md", "content=hello")
    assert result.returncode == 1
    assert f"no reme service runs for workspace {other}" in result.stderr
    assert f"reme start workspace_dir={other}" in result.stderr
    assert files_of(other) == [] and user_files_of(service.workspace) == before


def test_a_service_of_another_workspace_refuses_before_running(service, run_reme, tmp_path):
    """A service file copied along with a workspace (or host=/port=) leads to another workspace's service."""
    copy = tmp_path / "copy"
    (copy / "metadata").mkdir(parents=True)
    shutil.copy(service.workspace / "metadata" / "service.json", copy / "metadata" / "service.json")
    before = user_files_of(service.workspace)
    for where in ([f"workspace_dir={copy}"], [f"workspace_dir={copy}", f"port={service.info['port']}"]):
        result = run_reme("write", *where, "path=b.md", "content=hello")
        assert result.returncode == 1, result.stderr
        assert (
            f"this service serves workspace {service.workspace.resolve()}, not {copy.resolve()}"
            in result.stderr
        )
    assert user_files_of(service.workspace) == before


def test_a_copied_default_workspace_is_not_served_by_the_original(service, run_reme, tmp_path):
    """`.reme/` copied with its service file: the CLI run beside the copy must not write into the original."""
    copy = tmp_path / ".reme"
    (copy / "metadata").mkdir(parents=True)
    shutil.copy(service.workspace / "metadata" / "service.json", copy / "metadata" / "service.json")
    before = user_files_of(service.workspace)
    result = run_reme("write", "path=c.md", "content=hello", cwd=tmp_path)
    assert result.returncode == 1
    assert (
        f"this service serves workspace {service.workspace.resolve()}, not {copy.resolve()}" in result.stderr
    )
    assert user_files_of(service.workspace) == before


def test_every_answer_names_its_workspace(service):
    for job, body in (("version", {}), ("no_such_job", {}), ("search", {"limit": "x"})):
        answer = httpx.post(f"{service.url}/{job}", json=body)
        assert identity.decode(answer.headers[identity.HEADER]) == str(service.workspace.resolve()), job
    assert json.loads((service.workspace / "metadata" / "service.json").read_text())["workspace_dir"] == str(
        service.workspace.resolve()
    )


def test_the_right_workspace_is_served(service, run_reme):
    wrote = service.cli("write", "path=notes/right.md", "content=right place")
    assert wrote.returncode == 0, wrote.stderr
    assert "right place" in (service.workspace / "notes" / "right.md").read_text()


# 2. values typed by the job's schema -----------------------------------------------------------


def test_values_are_typed_by_the_parameter_schema(service):
    wrote = service.cli("write", "path=a.json", 'content={"a":1}')
    assert wrote.returncode == 0, wrote.stderr
    assert (service.workspace / "a.json").read_bytes() == b'{"a":1}'
    assert service.cli("write", "path=prices.md", "content=costs 10 dollars").returncode == 0
    edited = service.cli("edit", "path=prices.md", "old=10", "new=ten")
    assert edited.returncode == 0, edited.stderr
    assert "costs ten dollars" in (service.workspace / "prices.md").read_text()
    searched = service.cli("search", "query=2024", "limit=2", "--json")
    assert searched.returncode == 0, searched.stderr
    assert json.loads(searched.stdout)["success"] is True


# 9. smaller things -----------------------------------------------------------------------------


def test_a_bare_word_is_the_first_required_parameter(service):
    assert service.cli("write", "path=digest/wiki/solar.md", "content=Solar panels.").returncode == 0
    found = service.cli("search", "solar", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["metadata"]["results"][0]["path"] == "digest/wiki/solar.md"


def test_a_mistyped_job_gets_a_suggestion(service):
    for args in (("serch", "query=solar"), ("serch",)):
        result = service.cli(*args)
        assert result.returncode == 1
        assert "did you mean 'search'?" in result.stderr


def test_job_help_shows_type_default_and_description(service):
    result = service.cli("search", "--help")
    assert result.returncode == 0, result.stderr
    assert "  limit (integer 1..100; default 5)" in result.stdout
    assert "  query (string; required) — " in result.stdout


def test_output_cut_short_by_the_reader_ends_quietly(service):
    """`reme status | head`: the reader is gone before the answer is printed."""
    args = [REME, "status", f"workspace_dir={service.workspace}"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=reme_env(), text=True)
    proc.stdout.close()
    stderr = proc.stderr.read()
    assert proc.wait(30) == 141
    assert stderr == ""


def test_a_workspace_dir_with_a_tilde_finds_its_service(service, run_reme, tmp_path):
    home = service.workspace.parent
    result = run_reme("version", "workspace_dir=~/ws", env=reme_env(HOME=str(home)))
    assert result.returncode == 0, result.stderr

"""Access tokens: refusing to expose the service without one, 401 without it, acceptance with it."""

from __future__ import annotations

import httpx
import pytest

from reme import __version__

pytestmark = pytest.mark.slow  # starts processes or services (docs/testing.md)

TOKEN = "s3cret-token"


def test_non_loopback_bind_without_token_refuses_to_start(tmp_path, run_reme, service_config):
    workspace = tmp_path / "ws"
    for backend in (["service.backend=http"], ["service.backend=mcp", "service.transport=sse"]):
        result = run_reme(
            "start",
            f"config={service_config}",
            f"workspace_dir={workspace}",
            "service.host=0.0.0.0",
            *backend,
        )
        assert result.returncode == 2
        assert "refusing to bind 0.0.0.0" in result.stderr
        assert "service.auth_token" in result.stderr and "REME_API_TOKEN" in result.stderr
    assert not (workspace / "metadata" / "service.json").exists()


@pytest.fixture(scope="module")
def token_service(module_services, tmp_path_factory, service_config):
    workspace = tmp_path_factory.mktemp("auth") / "ws"
    return module_services(
        workspace, f"config={service_config}", f"service.auth_token={TOKEN}", "service.port=0"
    )


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Basic {TOKEN}", TOKEN])
def test_requests_without_the_token_get_401(token_service, header):
    headers = {"Authorization": header} if header else {}
    for method, path in (("POST", "/version"), ("GET", "/openapi.json"), ("POST", "/no_such_job")):
        reply = httpx.request(method, f"{token_service.url}{path}", headers=headers, json={})
        assert reply.status_code == 401
        assert reply.json()["success"] is False
        assert "Authorization: Bearer" in reply.json()["answer"]


def test_requests_with_the_token_are_served(token_service):
    reply = httpx.post(f"{token_service.url}/version", headers={"Authorization": f"Bearer {TOKEN}"})
    assert reply.status_code == 200
    assert reply.json()["answer"] == __version__
    # behind a local reverse proxy the Host header is foreign; the token alone decides
    proxied = {"Authorization": f"Bearer {TOKEN}", "Host": "notes.example", "Origin": "https://notes.example"}
    assert httpx.post(f"{token_service.url}/version", headers=proxied).status_code == 200


def test_cli_sends_the_token_from_the_environment(token_service, run_reme, reme_env, tmp_path):
    port = f"port={token_service.info['port']}"
    ok = run_reme("version", port, env=reme_env(REME_API_TOKEN=TOKEN))
    assert (ok.returncode, ok.stdout.strip()) == (0, __version__)
    refused = run_reme("version", port, cwd=tmp_path)
    assert refused.returncode == 1 and "invalid access token" in refused.stderr
    (tmp_path / ".env").write_text(f"REME_API_TOKEN={TOKEN}\n")
    from_dotenv = run_reme("version", port, cwd=tmp_path)
    assert from_dotenv.returncode == 0


def test_wildcard_bind_with_env_token_starts_and_requires_it(
    tmp_path, reme_service, reme_env, service_config
):
    service = reme_service(
        tmp_path / "ws",
        f"config={service_config}",
        "service.host=0.0.0.0",
        "service.port=0",
        env=reme_env(REME_API_TOKEN=TOKEN),
    )
    assert service.info["host"] == "127.0.0.1"  # the service file names an address a local client can dial
    assert httpx.post(f"{service.url}/version").status_code == 401
    reply = httpx.post(f"{service.url}/version", headers={"Authorization": f"Bearer {TOKEN}"})
    assert reply.json()["answer"] == __version__

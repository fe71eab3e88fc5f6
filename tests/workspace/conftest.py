"""A real `reme start` service on the default config, for the file and daily jobs over HTTP and the CLI."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support import ServiceProcess, start_service_process


@pytest.fixture(scope="module")
def workspace_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """One HTTP service on the packaged default config and a fresh workspace, per test module."""
    workspace = tmp_path_factory.mktemp("workspace-service") / "ws"
    service = start_service_process(workspace, "service.port=0", "timezone=UTC")
    yield service
    service.stop()

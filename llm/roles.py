"""Which model plays which role: ``generator`` (under test), ``helper`` (mappings, configs), ``judge``.

From YAML (a bare string is a model name)::

    models:
      generator: {model: openai/qwen2.5-coder, api_base: "http://127.0.0.1:8000/v1", concurrency: 4}
      helper: openai/gpt-4o-mini
      judge: {model: anthropic/claude-3-5-sonnet-20240620, temperature: 0}
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from sysmo.errors import ConfigError

Role = Literal["generator", "helper", "judge"]
ROLES: tuple[Role, ...] = ("generator", "helper", "judge")


ModelKind = Literal["live", "control", "replay"]
# how a tool-calling agent (openhands) calls its tools: the provider's ``tools=`` (native), a fenced JSON block in
# the reply (text), or native unless litellm's model map says the model has no function calling (auto)
ToolCalling = Literal["native", "text", "auto"]
KIND_LABELS: dict[str, str] = {"live": "", "control": "CONTROL", "replay": "REPLAY"}


def is_control_model(model: str) -> bool:
    """``reference`` and ``mockllm/...`` are offline controls, labelled as such everywhere."""
    return model == "reference" or model.startswith("mockllm/")


def is_replay_model(model: str) -> bool:
    """``replay/<source>:<model>[/<strategy>]`` answers with published outputs (labelled REPLAY everywhere);
    ``replay`` as the judge answers with the generator's source's stored judge answers."""
    return model == "replay" or model.startswith("replay/")


def is_offline_model(model: str) -> bool:
    """Controls and replays: no model is called, so no cache, no retries, nothing spent."""
    return is_control_model(model) or is_replay_model(model)


def model_kind(model: str) -> ModelKind:
    """``control`` (reference, mockllm), ``replay`` (published outputs) or ``live`` (a real model)."""
    return "control" if is_control_model(model) else "replay" if is_replay_model(model) else "live"


def run_kind(models: list[str]) -> ModelKind:
    """One label for a run of several models: control or replay only when every model is; else live."""
    kinds = {model_kind(m) for m in models}
    return kinds.pop() if len(kinds) == 1 else "live"


class RoleConfig(BaseModel):
    """How to reach one model. ``model``: a litellm provider string, ``langchain:openai/<model>`` or
    ``langchain:<module>:<factory>`` (a LangChain chat model), ``mockllm/<script>`` or ``reference``."""

    model: str
    api_base: str | None = None  # OpenAI-compatible server (vLLM, Ollama, llama.cpp, a litellm proxy)
    api_key_env: str | None = None  # env var holding the key; default: what litellm expects for the provider
    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float = 300.0
    max_retries: int = 5  # retries after the first attempt, on 429 / 5xx / timeouts only
    retry_initial_s: float = 1.0  # exponential backoff start; doubled per retry (with jitter)
    retry_max_s: float = 60.0  # cap on one wait, Retry-After included
    concurrency: int = 8  # in-flight calls per provider / api_base
    cache: bool = True
    max_reply_chars: int | None = 2_000_000  # a longer reply is refused (None: no cap); it would be stored many times
    extra: dict[str, Any] = Field(default_factory=dict)  # passed to litellm: top_p, seed, mock_response, ...
    price_per_mtok: tuple[float, float] | None = (
        None  # (input, output) USD per million tokens, overrides litellm's map
    )
    script: Path | None = None  # mockllm: the script file (default: found from the name)
    tool_calling: ToolCalling = "auto"  # llm/tool_calling.py: how the openhands agent's tool calls travel

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"model": value} if isinstance(value, str) else value

    @field_validator("price_per_mtok")
    @classmethod
    def _price_counts_up(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        # a negative price would make spending lower the run's cost, and a cost cap would never be reached
        if value is not None and not all(math.isfinite(p) and p >= 0 for p in value):
            raise ValueError(f"price_per_mtok {list(value)} must be two finite prices of 0 or more (USD per "
                             "million input and output tokens)")
        return value

    @property
    def is_control(self) -> bool:
        return is_control_model(self.model)

    @property
    def is_offline(self) -> bool:
        """A control or a replay: answered without calling a model (not cached, not retried)."""
        return is_offline_model(self.model)

    @property
    def limit_key(self) -> str:
        """Calls sharing this key share one concurrency limit: the server, else the provider."""
        if self.api_base:
            return self.api_base.rstrip("/")
        return self.model.split("/", 1)[0] if "/" in self.model else self.model


class ModelRoles(BaseModel):
    """The three roles. ``helper`` and ``judge`` default to the generator's model, except for the
    ``reference`` control, which answers only generator calls."""

    generator: RoleConfig
    helper: RoleConfig | None = None
    judge: RoleConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"generator": value} if isinstance(value, str | RoleConfig) else value

    def for_role(self, role: str) -> RoleConfig:
        if role not in ROLES:
            raise ConfigError(f"unknown LLM role {role!r}: use one of {', '.join(ROLES)}")
        config = getattr(self, role)
        if config is not None:
            return config
        if self.generator.model == "reference" or is_replay_model(self.generator.model):
            raise ConfigError(
                f"no model for the {role} role: {self.generator.model} only answers generator calls; "
                f"set models.{role} (e.g. {role}: openai/gpt-4o-mini or a mockllm/<script>)"
            )
        return self.generator

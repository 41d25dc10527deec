"""An experiment's settings: ``ExperimentConfig`` (a YAML file or CLI flags override its defaults) and ``Budget``."""

from __future__ import annotations

import hashlib
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sysmo.agents.registry import AGENT_NAMES as ALL_AGENTS
from sysmo.benchmarks.selection import TaskSelection
from sysmo.contracts.arms import ARM_FACTORS, Arm, FeedbackLevel, StrategyName, expand_arms, factor_values
from sysmo.errors import ConfigError, describe_invalid_settings

CONTROL_MODELS = ["reference", "mockllm/control"]
DEFAULT_ATTEMPT_TIMEOUT_S = 1800.0


def arm_field(name: str) -> Any:
    """The field of arm factor ``name`` (``ARM_FACTORS``): a list of values, its default one value."""
    factor = ARM_FACTORS[name]
    return Field(default_factory=lambda: [factor.default], min_length=1, description=factor.help)


class Budget(BaseModel):
    """Stop scheduling new attempts once spending passes a cap (finished work is kept)."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None


MAX_ID_LENGTH = 100  # a folder, a lock file and a store are named after it: well under a file name's 255 bytes


def check_experiment_id(value: str) -> None:
    """ConfigError unless ``value`` can name an experiment's folder and be typed after ``--resume``: letters,
    digits, '.', '_' and '-', at most ``MAX_ID_LENGTH`` characters, not starting with '.' or '-'."""
    shown = value if len(value) <= 40 else value[:40] + "..."
    if len(value) > MAX_ID_LENGTH:
        raise ConfigError(f"experiment id {shown!r} has {len(value)} characters; use at most {MAX_ID_LENGTH}")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", value) or value[0] in ".-":
        raise ConfigError(f"experiment id {shown!r} may use only letters, digits, '.', '_' and '-', "
                          "and may not start with '.' or '-'")


class ExperimentConfig(BaseModel):
    """One experiment. Every field has a default; a YAML file or CLI flags override them."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None  # default: derived from the date and the settings
    agents: list[str] = Field(default_factory=lambda: list(ALL_AGENTS))
    models: list[Any] = Field(default_factory=lambda: list(CONTROL_MODELS))  # generator models (str or RoleConfig dict)
    helper: Any = None  # helper role model (str or RoleConfig dict); default: none for controls
    judge: Any = None  # judge role model
    tasks: TaskSelection = Field(default_factory=lambda: TaskSelection(benchmarks=["starter"]))
    data_dir: Path | None = None
    sources_dir: Path | None = None  # checkouts of the modelled systems (SysMoBench), one folder per task
    samples: int = Field(default=5, ge=1)
    # the arm factors (sysmo.contracts.arms.ARM_FACTORS): each a list, every combination an arm; a scalar (an
    # experiment file from before arms) is a list of one
    max_rounds: list[int] = arm_field("max_rounds")
    feedback: list[FeedbackLevel] = arm_field("feedback")  # repair feedback ablation
    strategy: list[StrategyName | None] = arm_field("strategy")  # prompting strategy (None: sysmo's own)
    temperature: list[float | None] = arm_field("temperature")
    max_tokens: int | None = None
    seed: int = 0  # the per-sample seeds derive from it (sysmo.contracts.arms.sample_seed), and task sampling
    # wall-clock seconds one attempt may take (0: no limit); past it the attempt is an infrastructure error
    attempt_timeout: float = Field(default=DEFAULT_ATTEMPT_TIMEOUT_S, ge=0)
    concurrency: int = Field(default=4, ge=1)  # attempts in flight (their LLM calls overlap)
    tool_concurrency: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1), ge=1)
    budget: Budget = Field(default_factory=Budget)
    executor: Literal["local", "ray"] = "local"
    # the local executor's processes: 1 runs every attempt on the driver's event loop; N (or "auto": one per
    # core, at most ``concurrency``) runs them in N worker processes, each with its own event loop, LLM clients
    # and warm tool servers, while the driver only stores (runner/process_executor.py)
    processes: Annotated[int, Field(ge=1)] | Literal["auto"] = 1
    ray_address: str | None = None
    ray_workers: int | None = Field(default=None, ge=1)  # Ray actors (default: one per node of the cluster)
    output_dir: Path = Path("runs")
    score: bool = True
    scoring: dict[str, Any] = Field(default_factory=dict)  # per-stage options, e.g. {"runtime.runs": 5}
    # "sysmo": corrected, load-independent definitions; "harness": the reference harnesses' (docs/scoring-modes.md)
    scoring_mode: Literal["sysmo", "harness"] = "sysmo"
    selection_metric: dict[str, str] = Field(default_factory=dict)  # kind -> metric for best-of-n
    # "steps": LangGraph's checkpoint of every step of every attempt, in checkpoints.sqlite (list, fork);
    # "none": only the attempt records (results.sqlite), for the fastest runs
    checkpoints: Literal["steps", "none"] = "steps"

    @model_validator(mode="before")
    @classmethod
    def _arm_lists(cls, data: Any) -> Any:
        """Every arm factor as a list of validated values (a scalar, "a,b" or a list of them)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name in ARM_FACTORS:
            if name in data:
                data[name] = factor_values(name, data[name])
        return data

    def arm_lists(self) -> dict[str, list[Any]]:
        return {name: list(getattr(self, name)) for name in ARM_FACTORS}

    def arms(self) -> list[Arm]:
        """Every combination of the arm factors' values; the first is the experiment's base arm."""
        return expand_arms(self.arm_lists())

    @property
    def varied_factors(self) -> list[str]:
        """The arm factors given more than one value."""
        return [name for name, values in self.arm_lists().items() if len(values) > 1]

    @field_validator("agents", "models", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @classmethod
    def control(cls, **overrides: Any) -> ExperimentConfig:
        """The offline control experiment: starter suite, `reference` + `mockllm/control`, all five agents."""
        return cls(**overrides)

    @classmethod
    def from_yaml(cls, path: Path) -> ExperimentConfig:
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
            return cls.model_validate(data)
        except OSError as exc:
            raise ConfigError(f"cannot read experiment file {path}: {exc}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"experiment file {path} is not valid YAML: {exc}") from exc
        except ValidationError as exc:
            raise ConfigError(f"experiment file {path} is invalid: {describe_invalid_settings(exc, cls)}") from exc

    def scoring_options(self) -> dict[str, Any]:
        """The cascade options of this experiment, its scoring mode included (``mode``)."""
        return {"mode": self.scoring_mode, **self.scoring}

    @property
    def model_names(self) -> list[str]:
        return [m if isinstance(m, str) else m["model"] for m in self.models]

    @property
    def is_control(self) -> bool:
        from sysmo.llm.roles import is_control_model

        return all(is_control_model(n) for n in self.model_names)

    @property
    def kind(self) -> str:
        """``control``, ``replay`` (every model is one) or ``live``: how the run is labelled everywhere."""
        from sysmo.llm.roles import run_kind

        return run_kind(self.model_names)

    @property
    def label(self) -> str:
        """``CONTROL``, ``REPLAY`` or "" (a live run carries no label)."""
        from sysmo.llm.roles import KIND_LABELS

        return KIND_LABELS[self.kind]

    def experiment_id(self) -> str:
        if self.id:
            check_experiment_id(self.id)
            return self.id
        # how many processes run the attempts changes nothing they yield (nor the ids of earlier experiments)
        digest = hashlib.sha256(self.model_dump_json(exclude={"id", "output_dir", "processes"}).encode()).hexdigest()[:8]
        prefix = {"control": "control", "replay": "replay"}.get(self.kind, "exp")
        return f"{prefix}-{datetime.now(UTC):%Y%m%d}-{digest}"

    def directory(self) -> Path:
        return self.output_dir / self.experiment_id()

    def process_count(self) -> int:
        """How many processes the local executor runs attempts in (``processes``, "auto" resolved)."""
        if self.processes == "auto":
            return max(1, min(os.cpu_count() or 1, self.concurrency))
        return self.processes

    def with_free_id(self) -> tuple[ExperimentConfig, str | None]:
        """This config with an id no experiment under ``output_dir`` has yet, and the taken id it replaced.

        Only a derived id moves (the same settings run again the same day get ``<id>-2``, ``<id>-3``...); an id
        given with ``--id`` is the user's choice and is kept (a taken one is refused by the run)."""
        if self.id:
            return self, None
        derived = self.experiment_id()
        candidate, n = derived, 1
        while (self.output_dir / candidate / "results.sqlite").exists() or (self.output_dir / candidate).is_file():
            n += 1
            candidate = f"{derived}-{n}"
        if candidate == derived:
            return self, None
        return self.model_copy(update={"id": candidate}), derived

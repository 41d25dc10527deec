"""Work units: one (task, agent, model, sample, arm) of an experiment, its attempt id and seed, and the
experiment's list of them."""

from __future__ import annotations

import functools
import hashlib
import platform
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sysmo.contracts.arms import Arm, sample_seed
from sysmo.contracts.task import Task
from sysmo.errors import ConfigError
from sysmo.runner.config import ExperimentConfig
from sysmo.runner.summary import SkippedPair


@dataclass(frozen=True)
class WorkUnit:
    task: Task
    agent: str
    model: str
    sample: int
    experiment_id: str
    arm: Arm | None = None  # None: the settings' defaults (a unit made outside an experiment)
    arm_key: str = ""  # how ``arm`` differs from the experiment's first arm ("" for the first arm)
    seed: int | None = None  # the (task, sample)'s seed, the same in every arm (``sample_seed``)

    @functools.cached_property  # read several times per attempt (a frozen dataclass: its fields never change)
    def attempt_id(self) -> str:
        """Stable within an experiment (resume finds finished units by it) and distinct across experiments and
        arms; the first arm's ids are those of an experiment without arms."""
        key = f"{self.experiment_id}|{self.task.id}|{self.agent}|{self.model}|{self.sample}"
        if self.arm_key:
            key += f"|{self.arm_key}"
        return hashlib.sha256(key.encode()).hexdigest()[:16]


def task_meta(task: Task) -> dict[str, Any]:
    return {"benchmark": task.benchmark, "kind": task.kind.value, "domain": task.domain, "difficulty": task.difficulty}


def missing_inputs(units: list[WorkUnit]) -> list[str]:
    """The (agent, task) pairs of ``units`` that run without an input the agent reads when present (the
    source), and why; one note per pair, in the units' order."""
    from sysmo.agents.registry import get_agent

    pairs = {(u.agent, u.task.id): u.task for u in units}
    return [note for (agent, _), task in pairs.items() for note in get_agent(agent).missing_inputs(task)]


def expand(config: ExperimentConfig, tasks: list[Task], experiment_id: str) -> tuple[list[WorkUnit], list[SkippedPair]]:
    """All work units, in a stable order (the arms of one sample next to each other, so arms that share a
    first request are asked it together and the LLM client answers them with one reply), and what was skipped
    because the agent cannot do it: a task, or a replay model (published outputs stand in only for an agent's
    round calls)."""
    from sysmo.agents.registry import UnsupportedTaskError, get_agent

    arms = config.arms()
    keys = [arm.key(arms[0]) for arm in arms]
    units: list[WorkUnit] = []
    skipped: list[SkippedPair] = []
    for agent in config.agents:
        spec = get_agent(agent)
        models = []
        for model in config.model_names:
            refusal = spec.replay_refusal(model)
            if refusal is None:
                models.append(model)
            else:
                skipped.append(SkippedPair(agent, refusal, model=model, cause="replays no published outputs"))
        for task in tasks:
            try:
                spec.check_supports(task)
            except UnsupportedTaskError as exc:
                skipped.append(SkippedPair(agent, str(exc), task_id=task.id, cause=exc.cause))
                continue
            for model in models:
                for sample in range(config.samples):
                    seed = sample_seed(config.seed, task.id, sample)
                    units.extend(WorkUnit(task, agent, model, sample, experiment_id, arm, key, seed)
                                 for arm, key in zip(arms, keys))
    return units, skipped


def environment_record() -> dict[str, Any]:
    from sysmo import __version__
    from sysmo.sandbox.confine import describe_isolation
    from sysmo.tools.tla import run_cache

    isolation = describe_isolation()  # named in the experiment record and the report's provenance
    cache = run_cache.directory()
    return {"sysmo": __version__, "python": platform.python_version(), "platform": platform.platform(),
            "host": platform.node(), "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "tool_isolation": f"{isolation['level']} ({isolation['detail']})",
            "tla_run_cache": str(cache) if cache else None}


def load_selected_tasks(config: ExperimentConfig) -> list[Task]:
    from sysmo.benchmarks.registry import load_tasks

    families = config.tasks.benchmarks or None
    tasks = load_tasks(config.data_dir, families=families, sources_dir=config.sources_dir)
    chosen = config.tasks.apply(tasks)
    if not chosen:
        raise ConfigError("the task selection matches no task; try `sysmo tasks list` with the same filters")
    return chosen

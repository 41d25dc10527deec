"""Which tasks to run: filters (family, kind, domain, difficulty, key grammar, id globs) and seeded sampling.

A ``TaskSelection`` is plain data, so an experiment file can hold one:

>>> sel = TaskSelection.model_validate({"benchmarks": "sysmbench", "difficulties": ["1-2"], "sample": 10, "seed": 7})
>>> chosen = sel.apply(tasks)   # the same 10 tasks for the same seed and task set, in id order
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import ConfigError, describe_invalid_settings


def _as_list(value: Any) -> Any:
    """Accept a single value or a comma-separated string where a list is expected (CLI and YAML convenience)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (int, TaskKind)):
        return [value]
    return value


def _difficulty_range(token: str | int) -> set[int]:
    if isinstance(token, int):
        return {token}
    text = str(token).strip()
    try:
        if "-" in text:
            low, high = (int(x) for x in text.split("-", 1))
            return set(range(low, high + 1))
        return {int(text)}
    except ValueError as exc:
        raise ValueError(f"difficulty {token!r} is not a number or a range like 1-3") from exc


def _matches_any(value: str | None, patterns: list[str]) -> bool:
    """Case-insensitive exact match or glob match of ``value`` against any pattern."""
    if value is None:
        return False
    v = value.lower()
    return any(fnmatch.fnmatchcase(v, p.lower()) for p in patterns)


class TaskSelection(BaseModel):
    """Filters (all given filters must hold; an empty filter admits everything) and an optional seeded sample.

    ``ablations`` concerns only tasks that carry an ``ablation`` label (R2ABench); by default only the full input.
    Sampling ranks tasks by a hash of (seed, task id), so a sample does not depend on load order or Python version,
    and growing ``sample`` keeps the earlier choices.
    """

    model_config = ConfigDict(extra="forbid")

    benchmarks: list[str] = Field(default_factory=list)
    kinds: list[TaskKind] = Field(default_factory=list)
    domains: list[str] = Field(default_factory=list)  # case-insensitive, globs allowed
    difficulties: list[str | int] = Field(default_factory=list)  # 3, "1-2"
    grammars: list[str] = Field(default_factory=list)  # key grammar labels; case-insensitive, globs allowed
    ids: list[str] = Field(default_factory=list)  # globs over task ids, e.g. "sysmbench/1*"
    exclude_ids: list[str] = Field(default_factory=list)
    ablations: list[str] = Field(default_factory=lambda: ["full"])  # "*" for all
    sample: int | None = Field(default=None, ge=1)
    seed: int = 0
    sample_per: Literal["all", "benchmark"] = "all"  # sample N overall, or N from each benchmark

    @field_validator(
        "benchmarks", "kinds", "domains", "difficulties", "grammars", "ids", "exclude_ids", "ablations", mode="before"
    )
    @classmethod
    def _listify(cls, value: Any) -> Any:
        return _as_list(value)

    @field_validator("difficulties")
    @classmethod
    def _valid_difficulties(cls, value: list[str | int]) -> list[str | int]:
        for token in value:
            _difficulty_range(token)
        return value

    def _difficulty_set(self) -> set[int]:
        return set().union(*(_difficulty_range(t) for t in self.difficulties)) if self.difficulties else set()

    def matches(self, task: Task) -> bool:
        """True if the task passes every filter (sampling aside)."""
        if self.benchmarks and task.benchmark not in self.benchmarks:
            return False
        if self.kinds and task.kind not in self.kinds:
            return False
        if self.domains and not _matches_any(task.domain, self.domains):
            return False
        if self.difficulties and task.difficulty not in self._difficulty_set():
            return False
        if self.grammars and not any(_matches_any(g, self.grammars) for g in task.key_grammar):
            return False
        if self.ids and not any(fnmatch.fnmatchcase(task.id, p) for p in self.ids):
            return False
        if self.exclude_ids and any(fnmatch.fnmatchcase(task.id, p) for p in self.exclude_ids):
            return False
        ablation = task.labels.get("ablation")
        # the default (only the full input) yields to --ids that name an ablation, e.g. 'r2abench/*/min'
        named = any(p.rsplit("/", 1)[-1] in ("full", "no-arch", "min", "srs") for p in self.ids)
        explicit = "ablations" in self.model_fields_set or not named
        wanted = {"*" if a == "all" else a for a in self.ablations}
        if ablation is not None and explicit and "*" not in wanted and ablation not in wanted:
            return False
        return True

    def _rank(self, task: Task) -> str:
        return hashlib.sha256(f"{self.seed}\0{task.id}".encode()).hexdigest()

    def apply(self, tasks: Iterable[Task]) -> list[Task]:
        """The selected tasks in id order."""
        chosen = [t for t in tasks if self.matches(t)]
        if self.sample is not None:
            if self.sample_per == "benchmark":
                groups: dict[str, list[Task]] = {}
                for t in chosen:
                    groups.setdefault(t.benchmark, []).append(t)
                chosen = [t for group in groups.values() for t in sorted(group, key=self._rank)[: self.sample]]
            else:
                chosen = sorted(chosen, key=self._rank)[: self.sample]
        return sorted(chosen, key=lambda t: (t.benchmark, _id_key(t.id)))

    def families(self) -> list[str] | None:
        """The families worth loading for this selection (None = all present)."""
        return list(self.benchmarks) or None


def _id_key(task_id: str) -> tuple[Any, ...]:
    """Sort ids naturally: ``sysmbench/2`` before ``sysmbench/10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", task_id))


def selection_from_options(**options: Any) -> TaskSelection:
    """A TaskSelection from CLI-style keyword options; invalid values raise ConfigError, not a traceback."""
    try:
        return TaskSelection.model_validate({k: v for k, v in options.items() if v not in (None, [], ())})
    except ValidationError as exc:
        raise ConfigError(f"invalid task selection: {describe_invalid_settings(exc, TaskSelection)}") from exc

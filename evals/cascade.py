"""The cascade framework: an ordered list of stages per task kind; a stage runs only if those before it passed.

>>> card = cascade_for(TaskKind.UML_CLASS).score(artifact, task, ScoringContext())
>>> [s.stage for s in card.stages]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import ConfigError, SysmoError
from sysmo.contracts.scorecard import ScoreCard, StageResult
from sysmo.log import get_logger
from sysmo.contracts.check import CheckResult, Outcome

log = get_logger(__name__)

SCORING_MODES = ("sysmo", "harness")
DEFAULT_SCORING_MODE = "sysmo"
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


@dataclass
class ScoringContext:
    """What stages may use beyond the artifact and task: LLM roles (helper, judge), embedding, limits."""

    helper: Any = None  # sysmo.llm client for the helper role (mappings, invariant concretisation)
    judge: Any = None  # sysmo.llm client for the judge role
    embedding: Any = None  # a string-embedding callable, or None for exact-match metrics
    options: dict[str, Any] = field(default_factory=dict)  # per-stage settings, e.g. {"runtime.runs": 20}

    def option(self, key: str, default: Any) -> Any:
        return self.options.get(key, default)

    @property
    def mode(self) -> str:
        """The scoring mode (option ``mode``): ``sysmo`` (default: the corrected, load-independent definitions)
        or ``harness`` (the reference harness's definitions, its flaws included, to reproduce published numbers).
        docs/scoring-modes.md lists every divergence."""
        value = str(self.options.get("mode", DEFAULT_SCORING_MODE)).strip().lower()
        if value not in SCORING_MODES:
            raise ConfigError(f"scoring mode must be one of {', '.join(SCORING_MODES)}, not {value!r}")
        return value

    def by_mode(self, key: str, *, sysmo: Any, harness: Any) -> Any:
        """Option ``key`` when set, else the default of the current mode."""
        if key in self.options:
            return self.options[key]
        return harness if self.mode == "harness" else sysmo

    def flag_by_mode(self, key: str, *, sysmo: bool, harness: bool) -> bool:
        """A true/false option whose default depends on the scoring mode."""
        return self.flag(key, sysmo if self.mode == "sysmo" else harness)

    def flag(self, key: str, default: bool) -> bool:
        """A true/false option, given as a bool or as text (``true/false``, ``1/0``, ``yes/no``, ``on/off``: the
        command line and YAML give either); any other text is a ConfigError naming the option."""
        value = self.option(key, default)
        if not isinstance(value, str):
            return bool(value)
        word = value.strip().lower()
        if word not in TRUE_WORDS + FALSE_WORDS:
            raise ConfigError(f"{key} must be true or false, not {value!r}")
        return word in TRUE_WORDS


class Stage(Protocol):
    name: str
    gate: bool  # True: later stages run only if this one passed

    def __call__(self, artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult: ...


@dataclass
class FunctionStage:
    """A stage made from a function ``(artifact, task, ctx) -> StageResult``."""

    name: str
    fn: Callable[[Artifact, Task, ScoringContext], StageResult]
    gate: bool = True
    # an optional stage: for a task it does not apply to (False), it reports "not applicable" even when an
    # earlier stage's failure gates the rest (a gated skip counts 0; not applicable has no value)
    applies: Callable[[Task], bool] | None = None
    # what the run lacks for this stage (e.g. "no judge model configured"), or None: such a stage is not scored
    # (no value) whatever came before it, never a gated 0
    missing: Callable[[ScoringContext], str | None] | None = None

    def __call__(self, artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
        return self.fn(artifact, task, ctx)


@dataclass
class Cascade:
    """Stages in order; a stage that gates and does not pass skips every later stage.

    ``concurrent``: consecutive stages that gate nothing run at the same time (option ``cascade.concurrent``,
    default true, turns it off), the last of them started first; their results keep the stage order. Each
    stage's ``duration_s`` is then its own wall time, and the stages' times overlap. It may be a function of
    the context (a stage whose budget is wall-clock time across several tool runs wants the tools to itself).
    """

    name: str
    stages: list[Stage]
    concurrent: bool | Callable[[ScoringContext], bool] = False

    def score(self, artifact: Artifact | None, task: Task, ctx: ScoringContext | None = None) -> ScoreCard:
        ctx = ctx or ScoringContext()
        card = ScoreCard(task_id=task.id, cascade=self.name, mode=ctx.mode)
        blocked_by: str | None = "no artifact was produced" if artifact is None or artifact.is_empty() else None
        wanted = self.concurrent(ctx) if callable(self.concurrent) else self.concurrent
        concurrent = wanted and ctx.flag("cascade.concurrent", True)
        index = 0
        while index < len(self.stages):
            stage = self.stages[index]
            lacking = _missing(stage, ctx)
            if lacking is not None:
                card.stages.append(StageResult(stage=stage.name, value=0.0, passed=False, outcome="skipped",
                                               skipped_because=lacking))
                index += 1
                continue
            if blocked_by is not None and not _applies(stage, task):
                card.stages.append(_run_stage(stage, artifact, task, ctx))  # its own "not applicable" result
                index += 1
                continue
            if blocked_by is not None:
                card.stages.append(StageResult(stage=stage.name, value=0.0, passed=False, outcome="skipped",
                                               skipped_because=blocked_by, detail={"gated": True}))
                index += 1
                continue
            batch = [stage]
            while concurrent and not batch[-1].gate and index + len(batch) < len(self.stages) \
                    and not self.stages[index + len(batch)].gate:
                batch.append(self.stages[index + len(batch)])
            if len(batch) == 1:
                results = [_run_stage(stage, artifact, task, ctx)]
            else:
                with ThreadPoolExecutor(max_workers=len(batch), thread_name_prefix=f"{self.name}-stage") as pool:
                    futures = {s.name: pool.submit(_run_stage, s, artifact, task, ctx) for s in reversed(batch)}
                    results = [futures[s.name].result() for s in batch]
            for done, result in zip(batch, results):
                card.stages.append(result)
                if done.gate and not result.passed:
                    blocked_by = f"stage {done.name!r} did not pass ({result.outcome})"
            index += len(batch)
        return card


def _applies(stage: Stage, task: Task) -> bool:
    applies = getattr(stage, "applies", None)
    return True if applies is None else bool(applies(task))


def _missing(stage: Stage, ctx: ScoringContext) -> str | None:
    missing = getattr(stage, "missing", None)
    return None if missing is None else missing(ctx)


def _run_stage(stage: Stage, artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    started = time.monotonic()
    try:
        result = stage(artifact, task, ctx)
    except SysmoError as exc:
        result = StageResult(stage=stage.name, value=0.0, outcome="error", detail={"error": str(exc)})
        log.warning("stage.error", stage=stage.name, task=task.id, error=str(exc))
    result.duration_s = time.monotonic() - started
    return result


def stage_from_check(stage: str, result: CheckResult, max_diagnostics: int = 20, **detail: Any) -> StageResult:
    """A tool's verdict as a stage: 1 when the tool accepts the artifact, with its diagnostics and identity."""
    ok = result.outcome == Outcome.OK
    return StageResult(
        stage=stage,
        value=1.0 if ok else 0.0,
        passed=ok,
        outcome=result.outcome.value,
        metrics={"valid": 1.0 if ok else 0.0, "errors": float(len(result.errors))},
        detail={"diagnostics": [d.render() for d in result.diagnostics[:max_diagnostics]],
                "n_diagnostics": len(result.diagnostics), **detail},
        provenance={"tool": result.tool, "tool_version": result.tool_version},
    )


_CASCADES: dict[str, Callable[[], Cascade]] = {}
CASCADE_MODULES = {TaskKind.TLA: "tla", TaskKind.SYSML: "sysml", TaskKind.UML_CLASS: "uml_class",
                   TaskKind.ARCHITECTURE: "architecture"}


def register_cascade(kind: TaskKind):
    def wrap(factory: Callable[[], Cascade]) -> Callable[[], Cascade]:
        _CASCADES[kind.value] = factory
        return factory

    return wrap


def cascade_for(kind: TaskKind | str) -> Cascade:
    import importlib

    kind = TaskKind(kind)
    if kind.value not in _CASCADES:
        importlib.import_module(f"sysmo.evals.cascades.{CASCADE_MODULES[kind]}")
    return _CASCADES[kind.value]()

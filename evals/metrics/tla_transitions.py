"""TLA+ transition conformance: the task's recorded windows (one pre/post state per occurrence of an action) checked
as single steps of the model's actions; per-action pass rates and one headline.

A task provides windows through ``references.windows``: a folder of ``windows_<Action>.ndjson`` files (SysMoBench's
tv-eval format, read by ``sysmo.tools.tla.transition_validation``). Per action the mapping from recorded names to
the model's is, in this order: ``mapping_<Action>.json`` in that folder (a ``TransitionMapping``); a harness
``TV_<Action>.tla``/``WV_<Action>.tla`` there when it INSTANCEs the model's module and every variable it sets is
one of the model's; else the names themselves (``mapping_by_names``). An action the mapping cannot be made for
(the model has no such action, say) scores 0 on each of its windows, with the reason.

Headline (``value``), by scoring mode (option ``transitions.headline`` overrides):
- sysmo: the mean over actions of the pass rate (passed windows / windows). Each action is one unit of the
  model, as in the harness's guide; weighting by windows would let the most recorded action decide (etcd
  ai_spec_1's HandleAppendEntries is 154 of 215 windows: ElectionTimeout at 0/11 still leaves 94.9 % of
  transitions);
- harness: the guide's Phase-3 rule before its audit: an action scores 1 when every window passes, else 0,
  averaged over the actions that have windows (14/21 counts as 0/21).
Both, and transitions passed / transitions, are in ``metrics``. A window TLC could not decide within its bounds
is inconclusive: never a pass, and the stage's outcome says so.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, ValidationError

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.scorecard import StageResult
from sysmo.contracts.check import Outcome
from sysmo.contracts.task import Task
from sysmo.errors import SysmoError, TaskError
from sysmo.log import get_logger
from sysmo.tools.tla import transition_validation as tv
from sysmo.tools.tla.jvm import default_parallel
from sysmo.tools.tla.source import prepare
from sysmo.tools.tla.trace_validation import signature

if TYPE_CHECKING:
    from sysmo.evals.cascade import ScoringContext

log = get_logger(__name__)

STAGE = "transitions"
NO_WINDOWS = "the task provides no recorded windows (references.windows)"
HEADLINES = ("mean_pass_rate", "all_pass_share", "transitions")


class ActionScore(BaseModel):
    """One action's windows: the validation result, or why it could not be checked (then every window fails)."""

    action: str
    result: tv.ActionResult
    mapping_source: str = ""
    mapping_notes: list[str] = Field(default_factory=list)


class TransitionsScore(BaseModel):
    actions: list[ActionScore] = Field(default_factory=list)

    @property
    def scored(self) -> list[tv.ActionResult]:
        return [a.result for a in self.actions if a.result.windows]

    @property
    def mean_pass_rate(self) -> float:
        scored = self.scored
        return sum(r.pass_rate for r in scored) / len(scored) if scored else 0.0

    @property
    def all_pass_share(self) -> float:
        scored = self.scored
        return sum(r.all_passed for r in scored) / len(scored) if scored else 0.0

    @property
    def transitions(self) -> float:
        scored = self.scored
        total = sum(r.windows for r in scored)
        return sum(r.passed for r in scored) / total if total else 0.0

    def headline(self, which: str) -> float:
        if which not in HEADLINES:
            raise TaskError(f"transitions.headline must be one of {', '.join(HEADLINES)}, not {which!r}")
        return float(getattr(self, which))

    @property
    def outcome(self) -> Outcome:
        outcomes = {a.result.outcome for a in self.actions}
        if not self.actions:
            return Outcome.ERROR
        for kind in (Outcome.FAILED, Outcome.ERROR, Outcome.INCONCLUSIVE):
            if kind in outcomes:
                return kind
        return Outcome.OK


def _harness_mapping(folder: Path, action: str, artifact: Artifact) -> tv.TransitionMapping | None:
    """The folder's harness module for ``action``, when it is written for this model (its module, its variables)."""
    module = next((folder / n for n in (f"TV_{action}.tla", f"WV_{action}.tla") if (folder / n).is_file()), None)
    if module is None:
        return None
    cfg = next((folder / n for n in (f"TV_{action}.cfg", f"WV_{action}.cfg") if (folder / n).is_file()), None)
    mapping, instance, _ = tv.from_harness_module(module.read_text(encoding="utf-8"),
                                                  cfg.read_text(encoding="utf-8") if cfg else None)
    sig = signature(artifact)
    if instance != prepare(artifact).main_module or not {b.variable for b in mapping.variables} <= set(sig.variables):
        log.info("tla_transitions.harness_module_not_for_this_model", action=action, instance=instance)
        return None
    return mapping


def resolve_mapping(artifact: Artifact, windows: tv.WindowSet, folder: Path | None) -> tv.TransitionMapping:
    """``mapping_<Action>.json``, else the folder's harness module written for this model, else the names."""
    if folder is not None:
        given = folder / f"mapping_{windows.action}.json"
        if given.is_file():
            try:
                return tv.TransitionMapping.model_validate(json.loads(given.read_text(encoding="utf-8")))
            except (json.JSONDecodeError, ValidationError) as exc:
                raise TaskError(f"{given} is not a transition mapping: {str(exc).splitlines()[0]}") from exc
        harness = _harness_mapping(folder, windows.action, artifact)
        if harness is not None:
            return harness
    return tv.mapping_by_names(artifact, windows)


def _score_action(artifact: Artifact, window_set: tv.WindowSet, folder: Path | None,
                  mapping: tv.TransitionMapping | None, max_states: int, timeout_s: float) -> ActionScore:
    action = window_set.action
    try:
        mapping = mapping or resolve_mapping(artifact, window_set, folder)
        result = tv.validate_action(artifact, mapping, window_set, max_states=max_states, timeout_s=timeout_s)
        return ActionScore(action=action, result=result, mapping_source=mapping.source, mapping_notes=mapping.notes)
    except SysmoError as exc:  # no mapping (no such action, ...) or a module TLC cannot take: each window fails
        n = len(window_set.windows)
        first = window_set.windows[0]
        result = tv.ActionResult(action=action, windows=n, passed=0, failed=n, inconclusive=0, errors=n,
                                 error=str(exc), first_failure={"id": first.id, "trace_id": first.trace_id,
                                                                "pre": first.pre, "post": first.post,
                                                                "input": first.input, "explanation": str(exc)})
        return ActionScore(action=action, result=result, mapping_source="none")


def score(artifact: Artifact, windows: dict[str, tv.WindowSet], *, folder: Path | None = None,
          mappings: dict[str, tv.TransitionMapping] | None = None, max_states: int = tv.DEFAULT_MAX_STATES,
          timeout_s: float = tv.DEFAULT_TIMEOUT_S, parallel: int | None = None) -> TransitionsScore:
    """Every action's windows against the model, one TLC run per action; up to ``parallel`` actions at once
    (default one per core, at most 2, as the other TLC stages). The results are in action order either way."""
    ordered = [windows[a].model_copy(update={"action": a}) for a in sorted(windows)]
    with ThreadPoolExecutor(max_workers=max(1, parallel or default_parallel())) as pool:
        scores = pool.map(lambda w: _score_action(artifact, w, folder, (mappings or {}).get(w.action), max_states,
                                                  timeout_s), ordered)
        return TransitionsScore(actions=list(scores))


def task_windows(task: Task) -> Path | None:
    folder = task.references.windows
    return Path(folder) if folder is not None else None


def transitions_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    """The ``transitions`` stage: skipped (not applicable) unless the task provides windows."""
    folder = task_windows(task)
    if folder is None:
        # an optional stage: most tasks have no windows, and a report need not say so for each of them
        return StageResult(stage=STAGE, value=0.0, passed=True, outcome="skipped", skipped_because=NO_WINDOWS,
                           metrics={"windows": 0.0}, detail={"optional": True})
    windows = tv.windows_in(folder)
    if not windows:
        return StageResult(stage=STAGE, value=0.0, passed=True, outcome="skipped",
                           skipped_because=f"no windows_<Action>.ndjson in {folder}", metrics={"windows": 0.0})
    result = score(artifact, windows, folder=folder,
                   max_states=int(ctx.option("transitions.max_states", tv.DEFAULT_MAX_STATES)),
                   timeout_s=float(ctx.option("transitions.timeout_s", tv.DEFAULT_TIMEOUT_S)),
                   parallel=None if ctx.option("tlc.parallel", None) is None else int(ctx.option("tlc.parallel", 1)))
    which = str(ctx.by_mode("transitions.headline", sysmo="mean_pass_rate", harness="all_pass_share"))
    outcome = result.outcome
    results = [a.result for a in result.actions]
    return StageResult(
        stage=STAGE,
        value=result.headline(which),
        passed=outcome == Outcome.OK,
        outcome=outcome.value,
        metrics={
            "actions": float(len(results)),
            "windows": float(sum(r.windows for r in results)),
            "passed": float(sum(r.passed for r in results)),
            "failed": float(sum(r.failed for r in results)),
            "inconclusive": float(sum(r.inconclusive for r in results)),
            "mean_pass_rate": result.mean_pass_rate,
            "all_pass_share": result.all_pass_share,
            "transitions": result.transitions,
            **{f"pass_rate.{r.action}": r.pass_rate for r in results},
        },
        detail={
            "headline": which,
            "windows_folder": str(folder),
            "actions": [{"action": a.action, "windows": a.result.windows, "passed": a.result.passed,
                         "failed": a.result.failed, "inconclusive": a.result.inconclusive,
                         "pass_rate": a.result.pass_rate, "error": a.result.error,
                         "first_failure": a.result.first_failure, "mapping": a.mapping_source,
                         "mapping_notes": a.mapping_notes} for a in result.actions],
        },
        provenance={"tool": "tlc", "tool_version": next((r.tool_version for r in results if r.tool_version), ""),
                    "value": {"mean_pass_rate": "mean over actions of passed windows / windows",
                              "all_pass_share": "share of actions whose every window passed (harness)",
                              "transitions": "passed windows / windows"}[which]},
    )

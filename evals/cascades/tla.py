"""The TLA+ scoring cascade (SysMoBench): syntax gates; runtime, conformance and invariants each stand alone.

The paper's four metrics, "normalized to percentages":
``Syntax = 0.5 S_full + 0.5 n_c/n_t``, ``M_r = n_r/n_t``, ``M_c = n_c/n_t``, ``M_i = n_i/n_t``.
"Only models with 100% syntax proceed to subsequent metrics" — the rest are scored "for executable models",
each on its own: a runtime error does not hide the consistency or invariant scores (the paper reports Etcd
Raft at runtime 25%, consistency 7.69%, invariants 69.23% for one model). SysMoBench's harness does the
same: compilation gates the runtime and invariant checks, which do not gate each other.

Stages and their metric keys (``card.flat()``):

- ``syntax`` = 0.5 x S_full + 0.5 x n_c/n_t (``sysmo.evals.metrics.tla_syntax``). "A full model passing
  SANY gets full marks (S_full as PASS/FAIL) ... a per-action partial score is introduced — encapsulating
  each action along with necessary dependencies (constant declarations, variable definitions) into small
  independent models for SANY checks; n_c/n_t is the ratio of passing actions." n_t counts the action
  formulas (definitions that prime a variable or say UNCHANGED). Passed iff S_full = 1: the ONLY gate.
  A SANY timeout is ``inconclusive``.
- ``runtime`` = M_r = n_r/n_t (``sysmo.evals.metrics.tla_runtime``): "n_r is the number of actions covered
  without runtime errors during state space exploration" — actions of TLC's coverage report that generated
  a state in one of the seeded simulations and were never blamed for an error, over all actions listed.
  Passed iff no run hit an error or a timeout. Does not gate.
- ``conformance`` = M_c = n_c/n_t (``sysmo.evals.metrics.tla_consistency``): "n_c is the number of code
  actions covered and without consistency errors — using the number of instrumented code actions as the
  denominator (rather than model actions)". Code actions are the traces' event names; one is covered when
  a line with it lies in the prefix TLC reproduced, and has a consistency error when it is the first line
  of a trace the model cannot reproduce. The per-trace share (accepted traces / traces) is in
  ``metrics["trace_share"]``, per trace and per action detail in ``detail["traces"]`` /
  ``detail["actions"]``. Passed iff every trace was accepted. A task without traces skips it
  (``outcome="skipped"``, value 0). Does not gate. The replay itself is ``sysmo.tools.tla.trace_validation``.
  In the ``sysmo`` scoring mode every replayed step must also satisfy the model's ``[Next]_vars``
  (``conformance.refinement``) and the value is M_c x the mapping's coverage of the traces' event names and
  fields (``conformance.coverage=scale``; ``metrics["m_c"]`` keeps M_c): docs/conformance.md.
- ``transitions`` (``sysmo.evals.metrics.tla_transitions``, optional): where the task provides recorded
  pre/post windows per action (``references.windows``), each window checked as one step of the model's action;
  the mean pass rate over actions (``sysmo`` mode) or the share of actions with every window passing
  (``harness``). Not applicable, with no value, for a task without windows: docs/transition-validation.md.
- ``invariants`` = M_i = n_i/n_t (``sysmo.evals.metrics.tla_invariants``): "runs TLC for each invariant
  separately; n_i is the number of invariants that hold within the state space". Violated, inconclusive
  (a bound, a timeout or exhausted resources: never a pass, except a time-out with no violation under
  ``invariants.bounded="harness"``, the ``harness`` mode's default, which counts it as holding as SysMoBench's
  harness does, and a state predicate that holds up to the state bound under ``invariants.bounded="sysmo"``, the
  ``sysmo`` mode's default), errors (including a spec that ends TLC's check early) and unconcretised templates
  are listed apart. Scoring modes (``ctx.mode``, docs/scoring-modes.md, docs/tla-verdicts.md): ``sysmo`` bounds
  each invariant check by states (``invariants.max_states`` 100,000) with a generous clock (600 s), never counts a
  time-out as holding, and drops the coverage of a simulation cut short (``runtime.timeout_s`` 180 s);
  ``harness`` keeps SysMoBench's 60 s / 30 s limits and counting.

Options (``ScoringContext.options``; defaults are SysMoBench's where it has one):
``syntax.timeout_s`` (60), ``syntax.check_definitions`` ("auto" | "always");
``runtime.runs`` (20), ``runtime.num`` (50), ``runtime.depth`` (50), ``runtime.seed`` (1; the runs' seeds
derive from it), ``runtime.timeout_s`` (harness 30 per run, sysmo 180), ``runtime.cut_short_coverage`` (harness
true: the coverage a run cut short printed counts; sysmo false); ``conformance.timeout_s`` (120), ``conformance.walks_per_trace`` (25: random
walks of the replay before breadth-first search, a trace a walk reproduces to its last line is accepted; 0: off;
``sysmo.tools.tla.trace_validation.validate_traces``);
``invariants.timeout_s`` (harness 60 per check, the harness's; sysmo 600), ``invariants.max_states`` (harness
None: unbounded; sysmo 100,000; ``none`` for no bound) / ``invariants.max_depth`` (None: unbounded),
``invariants.helper_attempts`` (2), ``invariants.grouped`` (true: the safety templates checked together in
one TLC run, each keeping its own verdict; false: one TLC run per template), ``invariants.grouped_liveness``
(true: the liveness templates expected to hold checked in one TLC run under PROPERTY, one run each after a
violation; needs ``invariants.grouped``), ``invariants.merge_liveness`` (true: the safety group and the liveness
group of one cfg share one TLC run; needs ``invariants.grouped``), ``invariants.liveness_at_end`` (sysmo true:
temporal properties checked once after the search, TLC's ``-lncheck final``; harness false),
``invariants.by_instance`` (sysmo true: a template expected to be violated, ``\\A i, j \\in S : F`` over a constant
set, checked one instance per TLC run until one is violated; harness false), ``invariants.instance_batches`` (sysmo
true: after the first instance, batches of doubling size in one TLC run each; harness false),
``invariants.merge_same_bound`` (sysmo true: a safety group with a ``[][A]_v`` template, under the temporal state
bound like the liveness group of its cfg, shares that group's run, which decides both when the bound ends it;
harness false), ``invariants.dedupe_liveness`` (sysmo
true: a liveness template stating another's formula over sets TLC shows equal is decided by that one's check in
their shared run, ``sysmo.evals.metrics.tla_invariants.twins``; harness false), ``invariants.sany_first`` (false:
examples that use only the model's names go to TLC without a SANY run of their own, SANY first only if TLC's parse rejects one; true: SANY always first),
``invariants.bounded`` ("harness", the harness mode's: a time-out without violation counts as
holding, as SysMoBench's harness counts it; "strict": inconclusive; "sysmo", the sysmo mode's: a state predicate
holds within the state bound, a time-out is inconclusive), ``invariants.strategy`` ("bfs", or "hunt": BFS, simulation, smaller
constants, for bug controls; ``sysmo.tools.tla.bug_hunt``), ``invariants.templates`` ("task", or "cfg": the checks the model's own cfg
lists, as for SysMoBench's bug-reproduction specs); ``runtime.batched`` (false; true: one simulation of
runs x num behaviours, the seeded runs only after an error: faster, values can differ); ``runtime.shared_parse``
(true: the seeded runs in one JVM per parallel slot, the spec parsed once per JVM, the same values); ``tlc.parallel``
(TLC processes a stage runs at once, default min(2, cores)); ``cascade.concurrent`` (true: runtime,
conformance and invariants run at the same time, sharing one JVM slot per core, ``tools.tla.jvm.max_jvms``;
never with ``invariants.strategy=hunt``, several TLC runs under one wall-clock safety net). The model runs under its own cfg; without one a cfg is generated
(``tla_runtime.model_config``). The helper role (``ctx.helper``) maps trace names and concretises templates.
"""

from __future__ import annotations

from typing import Any

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TaskKind
from sysmo.evals.cascade import Cascade, FunctionStage, ScoringContext, register_cascade
from sysmo.evals.metrics import (tla_conformance, tla_consistency, tla_invariants, tla_runtime, tla_syntax,
                                 tla_transitions)
from sysmo.contracts.scorecard import StageResult
from sysmo.contracts.check import Outcome
from sysmo.errors import ConfigError

MAX_DIAGNOSTICS = 20
NO_TRACES = "the task has no traces"
NO_TEMPLATES = "the task has no invariant templates"


def _option(ctx: ScoringContext, key: str, default: Any, kind: type) -> Any:
    value = ctx.option(key, default)
    return value if value is None else kind(value)


def _bound(value: Any) -> int | None:
    """A state or depth bound option: a number, or none/0 for no bound (``-o invariants.max_states=none``)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "off")):
        return None
    return int(value) or None


def syntax_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    score = tla_syntax.score(
        artifact,
        timeout_s=_option(ctx, "syntax.timeout_s", tla_syntax.DEFAULT_TIMEOUT_S, float),
        check_definitions=ctx.option("syntax.check_definitions", "auto"),
    )
    full = score.full
    return StageResult(
        stage="syntax",
        value=score.value,
        passed=full.outcome == Outcome.OK,
        outcome=score.outcome.value,
        metrics={
            "s_full": score.s_full,
            "actions_share": score.share,
            "actions_passed": float(score.actions_passed),
            "actions_total": float(score.actions_total),
            "definitions_share": score.definitions_share,
            "definitions_passed": float(score.definitions_passed),
            "definitions_total": float(score.definitions_total),
        },
        detail={
            "diagnostics": [d.render() for d in full.diagnostics[:MAX_DIAGNOSTICS]],
            "failing_definitions": [
                {"name": d.name, "line": d.line, "outcome": d.outcome.value, "message": d.message}
                for d in score.definitions
                if not d.passed
            ],
            "definitions_checked": score.definitions_checked,
            "definitions": [d.name for d in score.definitions],
            "partial_over": score.partial_over,
            "actions": [d.name for d in score.counted],
            "failing_actions": [d.name for d in score.counted if not d.passed],
        },
        provenance={"tool": "sany", "tool_version": score.sany_version},
    )


def runtime_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    config = tla_runtime.model_config(artifact, task)
    score = tla_runtime.score(
        artifact,
        config,
        runs=_option(ctx, "runtime.runs", tla_runtime.DEFAULT_RUNS, int),
        num=_option(ctx, "runtime.num", tla_runtime.DEFAULT_NUM, int),
        depth=_option(ctx, "runtime.depth", tla_runtime.DEFAULT_DEPTH, int),
        seed=_option(ctx, "runtime.seed", tla_runtime.DEFAULT_SEED, int),
        timeout_s=float(ctx.by_mode("runtime.timeout_s", sysmo=tla_runtime.SYSMO_TIMEOUT_S,
                                    harness=tla_runtime.DEFAULT_TIMEOUT_S)),
        parallel=_option(ctx, "tlc.parallel", None, int),
        batched=ctx.flag("runtime.batched", False),
        shared_parse=ctx.flag("runtime.shared_parse", True),
        cut_short_coverage=ctx.flag_by_mode("runtime.cut_short_coverage", sysmo=False, harness=True),
    )
    return StageResult(
        stage="runtime",
        value=score.value,
        passed=score.passed,
        outcome=score.outcome.value,
        metrics={
            "actions": float(len(score.actions)),
            "covered": float(len(score.covered)),
            "error_actions": float(len(score.error_actions)),
            "runs": float(len(score.runs)),
            "failed_runs": float(sum(r.outcome != Outcome.OK for r in score.runs)),
        },
        detail={
            "actions": score.actions,
            "actions_source": score.actions_source,
            "covered": score.covered,
            "uncovered": [
                a for a in score.actions
                if a not in score.covered and a not in score.error_actions and a not in score.excused
            ],
            "error_actions": score.error_actions,
            "excused": score.excused,
            "runs": [
                {
                    "seed": r.seed,
                    "outcome": r.outcome.value,
                    "covered": len(r.covered),
                    "error": r.error,
                    "error_action": r.error_action,
                    "blamed_by": r.blamed_by,
                }
                for r in score.runs
            ],
            "cfg": score.cfg,
            "cfg_source": score.cfg_source,
            "cfg_notes": score.cfg_notes,
            "settings": score.settings,
        },
        provenance={
            "tool": "tlc",
            "tool_version": score.tlc_version,
            "actions": "TLC coverage of the next-state relation (message 2772), union over the runs",
        },
    )


def conformance_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    """M_c over the code actions; in ``sysmo`` mode every step must also be a step of the model's ``Next``
    (``conformance.refinement``) and the value is scaled by the mapping's coverage (``conformance.coverage``:
    "scale", or "report" as ``harness`` mode does): a model that shares nothing with the system scores 0."""
    if tla_conformance.task_traces(task) is None:
        return StageResult(
            stage="conformance",
            value=0.0,
            passed=True,
            outcome="skipped",
            skipped_because=NO_TRACES,
            metrics={"traces": 0.0},
        )
    config = tla_runtime.model_config(artifact, task)
    refinement = ctx.flag_by_mode("conformance.refinement", sysmo=True, harness=False)
    scaled = _coverage_scales(ctx)
    score = tla_conformance.score(
        artifact,
        task,
        config,
        helper=ctx.helper,
        timeout_s=_option(ctx, "conformance.timeout_s", tla_conformance.DEFAULT_TIMEOUT_S, float),
        parallel=_option(ctx, "tlc.parallel", None, int),
        walks_per_trace=_option(ctx, "conformance.walks_per_trace", tla_conformance.DEFAULT_WALKS_PER_TRACE, int),
        refinement=refinement,
    )
    result = score.result
    outcome = result.outcome
    consistency = tla_consistency.per_action(score.traces, result.traces, result.mapping.init_event)
    coverage = score.coverage()
    value = consistency.value * coverage.value if scaled else consistency.value
    if scaled and coverage.unplaced and outcome == Outcome.OK:  # every trace accepted, but not all of it checked
        outcome = Outcome.FAILED
    provenance = {
        "tool": "tlc",
        "tool_version": result.runs[0].tool_version if result.runs else "",
        "mapping": result.mapping.source,
        "value": "code actions covered without a consistency error / code actions (SysMoBench M_c)"
        + (" x mapping coverage" if scaled else ""),
    }
    if score.helper_model:
        provenance["helper_model"] = score.helper_model
    relation = score.next_relation
    return StageResult(
        stage="conformance",
        value=value,
        passed=outcome == Outcome.OK,
        outcome=outcome.value,
        metrics={
            "code_actions": float(consistency.n_t),
            "consistent_actions": float(consistency.n_c),
            "m_c": consistency.value,
            "mapping_coverage": coverage.value,
            "accepted": float(result.accepted),
            "traces": float(len(result.traces)),
            "trace_share": consistency.trace_share,
            "rejected": float(sum(v.outcome == Outcome.FAILED for v in result.traces)),
            "inconclusive": float(sum(v.outcome == Outcome.INCONCLUSIVE for v in result.traces)),
        },
        detail={
            "first_failure": score.first_failure(),
            "actions": [
                {**a.model_dump(), "consistent": a.consistent} for a in consistency.actions
            ],
            "consistent_actions": consistency.names(True),
            "inconsistent_actions": consistency.names(False),
            "traces": [
                {
                    "trace": v.trace,
                    "accepted": v.accepted,
                    "outcome": v.outcome.value,
                    "lines": v.lines,
                    "events_consumed": v.events_consumed,
                    "first_failing_event": v.first_failing_event,
                    "failing_event": v.failing_event,
                    "reason": v.reason,
                }
                for v in result.traces
            ],
            "mapping": result.mapping.model_dump(),
            "unplaced": coverage.unplaced,
            "coverage": {**coverage.model_dump(), "value": coverage.value, "scaled": scaled},
            "refinement": (
                {"checked": False, "note": "not asked for (conformance.refinement=false)"} if relation is None
                else {"checked": relation.found, **relation.model_dump()}
            ),
            "trace_format": score.trace_format,
            "helper_error": score.helper_error,
            "cfg": score.cfg,
            "cfg_source": config.source,
            "cfg_notes": config.notes,
        },
        provenance=provenance,
    )


def _coverage_scales(ctx: ScoringContext) -> bool:
    """``conformance.coverage``: "scale" (the value is M_c x mapping coverage) or "report" (M_c; coverage shown)."""
    value = str(ctx.by_mode("conformance.coverage", sysmo="scale", harness="report")).strip().lower()
    if value not in ("scale", "report"):
        raise ConfigError(f"conformance.coverage must be scale or report, not {value!r}")
    return value == "scale"


def invariants_stage(artifact: Artifact, task: Task, ctx: ScoringContext) -> StageResult:
    source = ctx.option("invariants.templates", "task")
    templates = tla_invariants.templates_from_cfg(artifact) if source == "cfg" else task.references.invariants
    if not templates:
        because = NO_TEMPLATES if source != "cfg" else "the model's cfg lists no INVARIANT or PROPERTY"
        return StageResult(
            stage="invariants", value=0.0, passed=False, outcome="skipped", skipped_because=because
        )
    config = tla_runtime.model_config(artifact, task)
    score = tla_invariants.score(
        artifact,
        templates,
        config,
        helper=ctx.helper,
        task_id=task.id,
        timeout_s=float(ctx.by_mode("invariants.timeout_s", sysmo=tla_invariants.SYSMO_TIMEOUT_S,
                                    harness=tla_invariants.DEFAULT_TIMEOUT_S)),
        max_states=_bound(ctx.by_mode("invariants.max_states", sysmo=tla_invariants.SYSMO_MAX_STATES,
                                      harness=None)),
        max_depth=_bound(ctx.option("invariants.max_depth", None)),
        max_states_temporal=_bound(ctx.by_mode("invariants.max_states_temporal",
                                               sysmo=tla_invariants.SYSMO_MAX_TEMPORAL_STATES, harness=None)),
        helper_attempts=_option(
            ctx, "invariants.helper_attempts", tla_invariants.DEFAULT_HELPER_ATTEMPTS, int
        ),
        parallel=_option(ctx, "tlc.parallel", None, int),
        strategy=str(ctx.option("invariants.strategy", "bfs")),
        bounded=str(ctx.by_mode("invariants.bounded", sysmo=tla_invariants.SYSMO_BOUNDED,
                                harness=tla_invariants.DEFAULT_BOUNDED)),
        grouped=ctx.flag("invariants.grouped", tla_invariants.DEFAULT_GROUPED),
        group_liveness=ctx.flag("invariants.grouped_liveness", tla_invariants.DEFAULT_GROUP_LIVENESS),
        sany_first=ctx.flag("invariants.sany_first", tla_invariants.DEFAULT_SANY_FIRST),
        merge_liveness=ctx.flag("invariants.merge_liveness", tla_invariants.DEFAULT_MERGE_LIVENESS),
        liveness_at_end=ctx.flag_by_mode("invariants.liveness_at_end", sysmo=tla_invariants.SYSMO_LIVENESS_AT_END,
                                         harness=tla_invariants.DEFAULT_LIVENESS_AT_END),
        by_instance=ctx.flag_by_mode("invariants.by_instance", sysmo=tla_invariants.SYSMO_BY_INSTANCE,
                                     harness=tla_invariants.DEFAULT_BY_INSTANCE),
        dedupe_liveness=ctx.flag_by_mode("invariants.dedupe_liveness", sysmo=tla_invariants.SYSMO_DEDUPE_LIVENESS,
                                         harness=tla_invariants.DEFAULT_DEDUPE_LIVENESS),
        instance_batches=ctx.flag_by_mode("invariants.instance_batches", sysmo=tla_invariants.SYSMO_INSTANCE_BATCHES,
                                          harness=tla_invariants.DEFAULT_INSTANCE_BATCHES),
        merge_same_bound=ctx.flag_by_mode("invariants.merge_same_bound", sysmo=tla_invariants.SYSMO_MERGE_SAME_BOUND,
                                          harness=tla_invariants.DEFAULT_MERGE_SAME_BOUND),
    )
    verdicts = score.verdicts

    def names(outcome: Outcome) -> list[str]:
        return [v.name for v in verdicts if v.outcome == outcome]

    provenance = {
        "tool": "tlc",
        "tool_version": score.tlc_version,
        "sany_version": score.sany_version,
        "templates": str(source),
        "bounded": score.bounded,
    }
    if score.helper_model:
        provenance["helper_model"] = score.helper_model
    return StageResult(
        stage="invariants",
        value=score.value,
        passed=score.outcome == Outcome.OK,
        outcome=score.outcome.value,
        metrics={
            "holding": float(score.count(Outcome.OK)),
            "violated": float(score.count(Outcome.FAILED)),
            "inconclusive": float(score.count(Outcome.INCONCLUSIVE)),
            "errors": float(score.count(Outcome.ERROR)),
            "templates": float(len(verdicts)),
            "safety_holding": float(sum(v.holds for v in verdicts if v.type == "safety")),
            "liveness_holding": float(sum(v.holds for v in verdicts if v.type == "liveness")),
        },
        detail={
            "holding": names(Outcome.OK),
            "violated": names(Outcome.FAILED),
            "inconclusive": names(Outcome.INCONCLUSIVE),
            "errors": names(Outcome.ERROR),
            "invariants": [v.model_dump(mode="json") for v in verdicts],
            "cfg_source": config.source,
            "cfg_notes": config.notes,
            "bounded": score.bounded,
            "timed_out_counted_holding": [
                v.name for v in verdicts if any(n.startswith("bounded=harness") for n in v.notes)
            ],
            "holding_within_bound": [
                v.name for v in verdicts if any(n.startswith(tla_invariants.WITHIN_BOUND_NOTE) for n in v.notes)
            ],
            "max_states": score.max_states,
            "max_states_temporal": score.max_states_temporal,
            "timeout_s": score.timeout_s,
        },
        provenance=provenance,
    )


@register_cascade(TaskKind.TLA)
def tla_cascade() -> Cascade:
    return Cascade(
        name="tla",
        stages=[
            FunctionStage("syntax", syntax_stage),  # the only gate: TLC cannot run what SANY rejects
            FunctionStage("runtime", runtime_stage, gate=False),
            # recorded traces are the task's: without them the stage is not scored, even after a syntax failure
            FunctionStage("conformance", conformance_stage, gate=False,
                          applies=lambda task: tla_conformance.task_traces(task) is not None),
            FunctionStage("invariants", invariants_stage, gate=False),
            # per-action transition validation, where the task provides recorded windows (skipped otherwise)
            FunctionStage("transitions", tla_transitions.transitions_stage, gate=False,
                          applies=lambda task: tla_transitions.task_windows(task) is not None),
        ],
        concurrent=_concurrent,
    )


def _concurrent(ctx: ScoringContext) -> bool:
    """Runtime, conformance and invariants at once, sharing the JVM slots (``tools.tla.jvm.max_jvms``); not for
    a bug hunt, several TLC runs under one wall-clock safety net (a wait for a slot would eat it)."""
    return str(ctx.option("invariants.strategy", "bfs")) != "hunt"

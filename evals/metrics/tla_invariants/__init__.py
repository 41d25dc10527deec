"""TLA+ invariant score: concretise each invariant template for the model's names, then TLC checks each.

The parts, in the order a stage uses them: ``settings`` (bounds and switches per scoring mode), ``formulas`` (a
template's text as a candidate definition and its wrapper modules), ``concretisation`` (SANY-accepted formulas,
the helper model's answers), ``checks`` (one template's TLC check and its cfg), ``runs`` (the TLC runs: alone,
grouped, merged), ``hunt`` (the bug-hunt strategy), ``verdicts`` (what a run means for a template; the score) and
``scoring`` (``score``, the stage as a whole).

Outcomes: ``ok`` (holds), ``failed`` (violated, with the counterexample's length), ``inconclusive`` (time
or state bound: reported, counted as not holding, never a pass), ``error`` (no formula, or TLC could not
evaluate it). Score = holding / templates.

>>> s = score(artifact, task.references.invariants, model_config(artifact, task))
>>> s.value, [v.name for v in s.verdicts if v.outcome == "failed"]
"""

from __future__ import annotations

from sysmo.evals.metrics.tla_invariants.checks import (
    DEFINITION,
    constraint_conjuncts,
    groupable,
    liveness_groupable,
)
from sysmo.evals.metrics.tla_invariants.concretisation import (
    CODE_BLOCK,
    PROMPT_FILE,
    concretise,
    templates_from_cfg,
)
from sysmo.evals.metrics.tla_invariants.formulas import (
    ACTION,
    BUILT_IN_NAMES,
    CHECKED_NAME,
    IDENT,
    STANDARD_MODULES,
    TEMPORAL,
    VACUOUS,
    WRAPPER_PREFIX,
    Candidate,
    combined_definitions,
    combined_module,
    member_name,
    parse_candidate,
    unknown_names,
    wrapper_module,
)
from sysmo.evals.metrics.tla_invariants.scoring import score
from sysmo.evals.metrics.tla_invariants.settings import (
    BOUNDED_POLICIES,
    DEFAULT_BOUNDED,
    DEFAULT_GROUP_LIVENESS,
    DEFAULT_GROUPED,
    DEFAULT_HELPER_ATTEMPTS,
    DEFAULT_BY_INSTANCE,
    DEFAULT_INSTANCE_BATCHES,
    DEFAULT_MERGE_SAME_BOUND,
    DEFAULT_DEDUPE_LIVENESS,
    DEFAULT_LIVENESS_AT_END,
    DEFAULT_MERGE_LIVENESS,
    DEFAULT_SANY_FIRST,
    DEFAULT_TIMEOUT_S,
    SYSMO_BOUNDED,
    SYSMO_BY_INSTANCE,
    SYSMO_INSTANCE_BATCHES,
    SYSMO_MERGE_SAME_BOUND,
    SYSMO_DEDUPE_LIVENESS,
    SYSMO_LIVENESS_AT_END,
    SYSMO_MAX_STATES,
    SYSMO_MAX_TEMPORAL_STATES,
    SYSMO_TIMEOUT_S,
    WITHIN_BOUND_NOTE,
)
from sysmo.evals.metrics.tla_invariants.verdicts import InvariantsScore, InvariantVerdict
from sysmo.evals.metrics.tla_syntax import check_modules

__all__ = [
    "ACTION", "BOUNDED_POLICIES", "BUILT_IN_NAMES", "CHECKED_NAME", "CODE_BLOCK", "DEFAULT_BOUNDED",
    "DEFAULT_BY_INSTANCE", "DEFAULT_INSTANCE_BATCHES", "DEFAULT_MERGE_SAME_BOUND", "DEFAULT_DEDUPE_LIVENESS", "DEFAULT_GROUPED", "DEFAULT_GROUP_LIVENESS", "DEFAULT_HELPER_ATTEMPTS", "DEFAULT_LIVENESS_AT_END", "DEFAULT_MERGE_LIVENESS",
    "DEFAULT_SANY_FIRST", "DEFAULT_TIMEOUT_S", "DEFINITION", "IDENT", "PROMPT_FILE", "STANDARD_MODULES",
    "SYSMO_BOUNDED", "SYSMO_BY_INSTANCE", "SYSMO_INSTANCE_BATCHES", "SYSMO_MERGE_SAME_BOUND", "SYSMO_DEDUPE_LIVENESS", "SYSMO_LIVENESS_AT_END", "SYSMO_MAX_STATES", "SYSMO_MAX_TEMPORAL_STATES", "SYSMO_TIMEOUT_S", "TEMPORAL", "VACUOUS",
    "WITHIN_BOUND_NOTE", "WRAPPER_PREFIX", "Candidate", "InvariantVerdict", "InvariantsScore", "check_modules",
    "combined_definitions", "combined_module", "concretise", "constraint_conjuncts", "groupable",
    "liveness_groupable", "member_name", "parse_candidate", "score", "templates_from_cfg", "unknown_names",
    "wrapper_module",
]

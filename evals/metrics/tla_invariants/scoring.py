"""The TLA+ invariant score of one model: concretise every template, build its check, run the checks, count.

SANY first only when needed (``sany_first``, cascade option ``invariants.sany_first``, default false): when every
template's ``tla_example`` uses only names the model defines (``unknown_names``: its own helpers, parameters and
bound variables, TLA+'s words and the standard modules' operators aside), the wrappers go to TLC without a SANY run
of their own: TLC parses them with the same SANY, so the verdicts are the ones the SANY-first path gives (tested);
one JVM less per stage (a gold or reference model, or a model that kept the names; the PGo raftkvs spec's parse
alone is about 4 s). If TLC's parse rejects one of them, the stage is scored again from the start with SANY first
(``true``: always, as the harness does). The stage's ``sany_version`` then names TLC's. Temporal checks are
started first (they take longest).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import InvariantTemplate
from sysmo.errors import ConfigError
from sysmo.contracts.check import Outcome
from sysmo.evals.metrics.tla_invariants.checks import (
    _check_config,
    _Check,
    _under_constraint,
    constraint_conjuncts,
    groupable,
    liveness_groupable,
)
from sysmo.evals.metrics.tla_invariants.concretisation import _examples_as_written, concretise
from sysmo.evals.metrics.tla_invariants.runs import TlcRuns
from sysmo.evals.metrics.tla_invariants.settings import (
    BOUNDED_POLICIES,
    DEFAULT_BOUNDED,
    DEFAULT_BY_INSTANCE,
    DEFAULT_DEDUPE_LIVENESS,
    DEFAULT_INSTANCE_BATCHES,
    DEFAULT_GROUP_LIVENESS,
    DEFAULT_GROUPED,
    DEFAULT_HELPER_ATTEMPTS,
    DEFAULT_LIVENESS_AT_END,
    DEFAULT_MERGE_LIVENESS,
    DEFAULT_MERGE_SAME_BOUND,
    DEFAULT_SANY_FIRST,
    DEFAULT_TIMEOUT_S,
)
from sysmo.evals.metrics.tla_invariants.verdicts import InvariantsScore, InvariantVerdict
from sysmo.evals.metrics.tla_runtime import ModelConfig, without_checks
from sysmo.log import get_logger
from sysmo.tools.tla import jvm
from sysmo.tools.tla.source import prepare
from sysmo.tools.tla.trace_validation import signature

log = get_logger(__name__)


def score(
    artifact: Artifact,
    templates: list[InvariantTemplate],
    config: ModelConfig,
    *,
    helper: Any = None,
    task_id: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_states: int | None = None,
    max_depth: int | None = None,
    max_states_temporal: int | None = None,
    helper_attempts: int = DEFAULT_HELPER_ATTEMPTS,
    parallel: int | None = None,
    strategy: str = "bfs",
    bounded: str = DEFAULT_BOUNDED,
    grouped: bool = DEFAULT_GROUPED,
    group_liveness: bool = DEFAULT_GROUP_LIVENESS,
    sany_first: bool = DEFAULT_SANY_FIRST,
    merge_liveness: bool = DEFAULT_MERGE_LIVENESS,
    liveness_at_end: bool = DEFAULT_LIVENESS_AT_END,
    by_instance: bool = DEFAULT_BY_INSTANCE,
    dedupe_liveness: bool = DEFAULT_DEDUPE_LIVENESS,
    instance_batches: bool = DEFAULT_INSTANCE_BATCHES,
    merge_same_bound: bool = DEFAULT_MERGE_SAME_BOUND,
) -> InvariantsScore:
    """Concretise every template, then check each with TLC: the safety templates together in one run per
    cfg when ``grouped``, every other template alone (see the module doc). ``sany_first=False``: when every
    template's example uses only the model's names, the examples go to TLC without a SANY run of their own (TLC
    parses them with the same SANY); if TLC's parse rejects one, the whole stage is scored again with SANY first.
    ``liveness_at_end``: temporal properties are checked once, after the search (``tlc.model_check``);
    ``by_instance``: a template expected to be violated, quantified over a constant set, is checked one instance
    per TLC run until one is violated (``instances``), after the first in batches of doubling size when
    ``instance_batches``; ``merge_same_bound``: a safety group with a temporal property of its own (so under the
    temporal bound too) shares the liveness group's run, and a run ended by that bound decides both groups;
    ``dedupe_liveness``: a liveness template stating another's
    formula over sets TLC shows equal is decided by that one's check in their shared run (``twins``)."""
    if bounded not in BOUNDED_POLICIES:
        raise ConfigError(f"invariants.bounded must be one of {', '.join(BOUNDED_POLICIES)}, not {bounded!r}")
    temporal_bound = max_states if max_states_temporal is None else max_states_temporal

    written = None if sany_first else _examples_as_written(artifact, templates)
    if written is not None:
        concretised, sany_version, helper_model = written, "", None
    else:
        concretised, sany_version, helper_model = concretise(
            artifact, templates, helper=helper, task_id=task_id, attempts=helper_attempts
        )
    spec = prepare(artifact)
    tla_files = {n: t for n, t in spec.files.items() if n.endswith(".tla")}
    sig = signature(Artifact(language=Language.TLA, files=tla_files), spec.main_module)
    operators = set(sig.operators)
    reserved = operators | set(sig.variables) | set(sig.constants)
    constraints = list(config.config.constraints)
    conjuncts = constraint_conjuncts(constraints, list(tla_files.values())) if constraints else set()
    verdicts: dict[int, InvariantVerdict] = {}
    checks: list[_Check] = []
    for index, template in enumerate(templates):
        candidate, wrapper, source, notes = concretised[index]
        if candidate is None or wrapper is None:
            verdicts[index] = InvariantVerdict(
                name=template.name,
                type=template.type,
                outcome=Outcome.ERROR,
                notes=notes,
                reason="no formula for the model's names was found",
            )
            continue
        guarded = _under_constraint(template, candidate, wrapper, constraints, conjuncts)
        if guarded is not None:
            candidate, wrapper = guarded
            notes = notes + [f"a conjunct of the model's state CONSTRAINT ({', '.join(constraints)}): checked "
                             f"as Constraint => {template.name} (TLC prunes the states that violate it)"]
        as_property = not candidate.possibility and (template.type == "liveness" or candidate.temporal)
        config_, cfg_notes = _check_config(config.config, operators, as_property, template.type == "liveness")
        checks.append(_Check(index=index, template=template, candidate=candidate, wrapper=wrapper, source=source,
                             notes=notes, as_property=as_property, config=config_, cfg_notes=cfg_notes))

    runs = TlcRuns(tla_files=tla_files, main_module=spec.main_module, reserved=reserved,
                   unchecked=written is not None, strategy=strategy, bounded=bounded, timeout_s=timeout_s,
                   max_states=max_states, max_states_temporal=temporal_bound, max_depth=max_depth,
                   liveness_at_end=liveness_at_end, constants=set(sig.constants), by_instances=by_instance,
                   instance_batches=instance_batches, dedupe=dedupe_liveness, same_bound=merge_same_bound)

    jobs: list[list[_Check]] = []
    if grouped and strategy != "hunt":
        groups: dict[tuple[str, bool, bool], list[_Check]] = {}
        for check in checks:
            live = group_liveness and liveness_groupable(check)
            if live or groupable(check):
                # merge_liveness: the safety and the liveness templates of one cfg make one group (``merged``)
                key = (without_checks(check.config).render(), check.standard, live and not merge_liveness)
                groups.setdefault(key, []).append(check)
        jobs += [part for g in groups.values()
                 for part in _shareable(g, temporal_bound != max_states, merge_same_bound) if len(part) > 1]
    in_groups = {c.index for g in jobs for c in g}
    jobs += [[c] for c in checks if c.index not in in_groups]
    # temporal checks first (they take longest: liveness over the tableau): the last one to start ends sooner
    jobs.sort(key=lambda job: not any(c.as_property and not c.candidate.possibility for c in job))

    versions: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, parallel or jvm.default_parallel())) as pool:
        for done in pool.map(runs.run, jobs):
            for index, verdict, version in done:
                verdicts[index] = verdict
                versions.append(version)
    if runs.rejected:
        log.info("tla_invariants.examples_rejected_by_tlc", module=spec.main_module,
                 templates=[templates[i].name for i in runs.rejected])
        return score(artifact, templates, config, helper=helper, task_id=task_id, timeout_s=timeout_s,
                     max_states=max_states, max_depth=max_depth, max_states_temporal=max_states_temporal,
                     helper_attempts=helper_attempts, parallel=parallel,
                     strategy=strategy, bounded=bounded, grouped=grouped, group_liveness=group_liveness,
                     sany_first=True, merge_liveness=merge_liveness, liveness_at_end=liveness_at_end,
                     by_instance=by_instance, dedupe_liveness=dedupe_liveness, instance_batches=instance_batches,
                     merge_same_bound=merge_same_bound)
    tlc_version = next((t for t in versions if t), "")
    if written is not None and tlc_version:
        sany_version = f"the SANY of {tlc_version} (the formulas were parsed by the TLC runs)"
    score_ = InvariantsScore(
        verdicts=[verdicts[i] for i in range(len(templates))],
        sany_version=sany_version,
        tlc_version=tlc_version,
        helper_model=helper_model,
        cfg_notes=config.notes,
        bounded=bounded,
        max_states=max_states,
        max_states_temporal=temporal_bound,
        timeout_s=timeout_s,
    )
    log.info(
        "tla_invariants.scored",
        module=spec.main_module,
        value=round(score_.value, 3),
        outcome=score_.outcome.value,
        templates=len(templates),
        helper=helper_model,
        tlc_runs_grouped=sum(len(j) for j in jobs if len(j) > 1),
    )
    return score_


def _shareable(group: list[_Check], own_temporal_bound: bool, same_bound: bool = False) -> list[list[_Check]]:
    """The checks of one cfg that share TLC runs: the group itself, or its safety and its liveness part apart.

    With a state bound of their own for temporal properties (``max_states_temporal``), the shared run is bounded
    by it, and what it decides for a safety template is still the verdict of the safety group's own run: a complete
    run is the whole state space under either bound, and a state predicate violated is violated whatever the bound
    (the first violating state comes in the same place of the same breadth-first order); a bounded or timed-out
    run decides only the liveness templates (``TlcRuns.merged``). A temporal safety formula (``[][A]_v``) violated
    beyond the temporal bound would be inconclusive there and violated in its own run: with one, the parts run
    apart, unless ``same_bound``: a safety group with a temporal property of its own runs under the temporal bound
    too (``TlcRuns.bound_of``), so the shared run explores the very states its own run would, and a shared run
    ended by that bound decides the safety group as well (``TlcRuns.merged``)."""
    safety = [c for c in group if c.template.type != "liveness"]
    liveness = [c for c in group if c.template.type == "liveness"]
    if own_temporal_bound and safety and liveness and any(c.as_property for c in safety) and not same_bound:
        return [safety, liveness]
    return [group]

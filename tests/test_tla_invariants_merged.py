"""The safety group and the liveness group of one cfg share one TLC run (``invariants.merge_liveness``, the
default): every template keeps the verdict it gets in its group's own run, a correct model costs one JVM less,
and a model that breaks a liveness or safety template costs no JVM more than without the merge."""

from __future__ import annotations

import pytest
from steps_spec import steps_artifact
from sysmo.benchmarks.starter import STARTER_DIR, load_task_folder
from sysmo.contracts.check import Outcome
from sysmo.contracts.task import InvariantTemplate
from sysmo.errors import ConfigError
from sysmo.evals.cascade import ScoringContext
from sysmo.evals.cascades import tla
from sysmo.evals.metrics import tla_invariants, tla_runtime
from sysmo.tools.tla import tlc

# merged and not, the same template often needs the very same TLC run: each distinct run is made once for the
# file (the run cache), the comparisons still see real TLC output
pytestmark = pytest.mark.usefixtures("tla_run_cache")

ARTIFACT = steps_artifact()


def _template(name: str, kind: str, body: str) -> InvariantTemplate:
    return InvariantTemplate(name=name, type=kind, natural_language=name, tla_example=f"{name} == {body}")


HOLDS = [_template("XBounded", "safety", "x <= 6"), _template("YBounded", "safety", "y <= 2"),
         _template("YReaches", "liveness", "<>(y = 2)")]
SAFETY_BROKEN = [*HOLDS, _template("SumSmall", "safety", "x + y < 4")]
RETURNS = _template("XReturns", "liveness", "[]<>(x = 0)")  # x never returns to 0: violated
LIVENESS_BROKEN = [HOLDS[0], HOLDS[1], RETURNS]  # the only liveness template: TLC's violation is pinned on it
LIVENESS_BROKEN_OF_TWO = [*HOLDS, RETURNS]  # TLC does not say which of the two failed


def _key(verdict: tla_invariants.InvariantVerdict) -> tuple:
    return (verdict.name, verdict.outcome, verdict.checked_as, verdict.counterexample_states,
            verdict.distinct_states, verdict.reason, verdict.formula, verdict.source)


def _score(templates: list[InvariantTemplate], monkeypatch: pytest.MonkeyPatch, **options):
    runs: list[str] = []
    original = tlc.model_check
    monkeypatch.setattr(tlc, "model_check", lambda *a, **k: runs.append(k.get("module", "")) or original(*a, **k))
    found = {}
    for merge in (True, False):
        runs.clear()
        found[merge] = (tla_invariants.score(ARTIFACT, templates, tla_runtime.model_config(ARTIFACT), timeout_s=60,
                                             merge_liveness=merge, **options), list(runs))
    (merged, merged_runs), (apart, apart_runs) = found[True], found[False]
    assert [_key(v) for v in merged.verdicts] == [_key(v) for v in apart.verdicts]
    return merged, len(merged_runs), len(apart_runs)


@pytest.mark.slow
def test_a_correct_model_is_decided_by_one_run(monkeypatch: pytest.MonkeyPatch) -> None:
    merged, runs, apart = _score(HOLDS, monkeypatch)
    assert merged.value == 1.0 and (runs, apart) == (1, 2)
    assert all("invariants.merge_liveness" in " ".join(v.notes) for v in merged.verdicts)


@pytest.mark.slow
@pytest.mark.parametrize(("templates", "failed", "runs"), [
    (SAFETY_BROKEN, {"SumSmall"}, 3),  # the shared run stops at SumSmall; the safety rest, then the liveness run
    (LIVENESS_BROKEN, {"XReturns"}, 2),  # the shared run decides XReturns; the safety group runs on its own
    (LIVENESS_BROKEN_OF_TWO, {"XReturns"}, 4),  # each liveness template alone, and the safety group
])
def test_a_broken_model_keeps_its_verdicts_and_costs_no_run_more(
        monkeypatch: pytest.MonkeyPatch, templates: list[InvariantTemplate], failed: set[str], runs: int) -> None:
    merged, merged_runs, apart_runs = _score(templates, monkeypatch)
    assert {v.name for v in merged.verdicts if v.outcome == Outcome.FAILED} == failed
    assert merged_runs == runs and merged_runs <= apart_runs


@pytest.mark.slow
def test_a_bounded_shared_run_decides_the_liveness_templates_and_the_safety_group_runs_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    merged, runs, apart = _score(HOLDS, monkeypatch, max_states=5, bounded="strict")
    assert {v.outcome for v in merged.verdicts} == {Outcome.INCONCLUSIVE} and (runs, apart) == (2, 2)


@pytest.mark.slow
@pytest.mark.parametrize(("bounds", "runs"), [
    ((300, 60), 1),  # both bounds above the 21 states: the shared run is complete and decides all three
    ((300, 5), 2),  # the shared run stops at the temporal bound: it decides YReaches, the safety group runs alone
])
def test_a_temporal_bound_of_its_own_still_shares_the_run_with_the_state_predicates(
        monkeypatch: pytest.MonkeyPatch, bounds: tuple[int, int], runs: int) -> None:
    merged, merged_runs, apart_runs = _score(HOLDS, monkeypatch, max_states=bounds[0], max_states_temporal=bounds[1],
                                             bounded="sysmo")
    assert merged.value == 1.0 and (merged_runs, apart_runs) == (runs, 2)


@pytest.mark.slow
def test_a_temporal_safety_formula_keeps_the_safety_bound_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = _template("XSteps", "safety", "[][x' >= x]_x")  # violated past a temporal bound: inconclusive there
    _, merged_runs, apart_runs = _score([*HOLDS, steps], monkeypatch, max_states=300, max_states_temporal=60,
                                        bounded="sysmo")
    assert merged_runs == apart_runs == 2


def _same_bound(templates: list[InvariantTemplate], monkeypatch: pytest.MonkeyPatch, temporal_bound: int):
    runs: list[str] = []
    original = tlc.model_check
    monkeypatch.setattr(tlc, "model_check", lambda *a, **k: runs.append(k.get("module", "")) or original(*a, **k))
    found = []
    for same in (True, False):
        runs.clear()
        scored = tla_invariants.score(ARTIFACT, templates, tla_runtime.model_config(ARTIFACT), timeout_s=60,
                                      max_states=300, max_states_temporal=temporal_bound, bounded="sysmo",
                                      merge_same_bound=same)
        found.append(([_key(v) for v in scored.verdicts], len(runs)))
    (shared, shared_runs), (apart, apart_runs) = found
    assert shared == apart
    return shared, shared_runs, apart_runs


@pytest.mark.slow
@pytest.mark.parametrize(("temporal_bound", "runs"), [(5, 1), (10, 1), (60, 1)])
def test_a_safety_group_under_the_temporal_bound_shares_the_liveness_run(
        monkeypatch: pytest.MonkeyPatch, temporal_bound: int, runs: int) -> None:
    # XSteps puts the safety group under the temporal bound too: the shared run, ended by that bound or complete,
    # explores the states the safety group's own run explores, and decides it (invariants.merge_same_bound)
    steps = _template("XSteps", "safety", "[][x' >= x]_x")
    verdicts, shared_runs, apart_runs = _same_bound([*HOLDS, steps], monkeypatch, temporal_bound)
    assert {v[1] for v in verdicts} == {Outcome.OK} and {v[4] for v in verdicts} == {min(temporal_bound, 21)}
    assert (shared_runs, apart_runs) == (runs, 2)


@pytest.mark.slow
def test_a_violated_temporal_safety_formula_in_the_shared_run_keeps_its_verdicts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    never_back = _template("XNeverBack", "safety", "[][x' = x]_x")  # violated at the first step of x
    verdicts, shared_runs, apart_runs = _same_bound([*HOLDS, never_back], monkeypatch, 5)
    assert [v[1] for v in verdicts] == [Outcome.OK, Outcome.OK, Outcome.OK, Outcome.FAILED]
    assert [v[4] for v in verdicts] == [21, 21, 5, 2]  # the safety group alone again, without the temporal bound
    assert shared_runs == apart_runs == 3


@pytest.mark.slow
def test_liveness_checked_after_the_search_gives_the_same_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    templates = [*LIVENESS_BROKEN_OF_TWO, _template("YAlways", "liveness", "[]<>(y = 2)")]
    at_end, _, _ = _score(templates, monkeypatch, liveness_at_end=True)
    periodic, _, _ = _score(templates, monkeypatch, liveness_at_end=False)
    assert [_key(v) for v in at_end.verdicts] == [_key(v) for v in periodic.verdicts]
    assert {v.name for v in at_end.verdicts if v.outcome == Outcome.FAILED} == {"XReturns"}


def test_the_option_reaches_the_stage() -> None:
    task = load_task_folder(STARTER_DIR / "tla" / "spinlock")
    with pytest.raises(ConfigError, match="invariants.merge_liveness"):
        tla.invariants_stage(task.references.model, task,
                             ScoringContext(options={"invariants.merge_liveness": "maybe"}))

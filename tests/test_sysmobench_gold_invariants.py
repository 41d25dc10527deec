"""The PGo gold specs get full marks on invariants under the default counting policy (SysMoBench's harness:
a check that times out without a violation counts as holding); the state-constraint rule keeps raftkvs's
``LimitTerm``/``LimitCommitIndex`` (conjuncts of its own ``MCConstraint``) from failing on pruned states.
Checks are bounded to a few seconds each so the tests stay short; the README table is the default run. dqueue's
invariants, whose whole state space TLC explores in seconds, are pinned at 1.0 with SysMoBench's 60 s limit in
tests/test_pgo_gold_controls.py. The SANY runs a test repeats (the 2.3 MB raftkvs spec under both policies) are
made once (the run cache); a TLC run that hits its time limit is never cached, so each policy meets a real one:
the constraint test's run is the harness's time-out (a module fixture), the policy test adds the strict one."""

from __future__ import annotations

from pathlib import Path

import pytest
from sysmo.benchmarks import sysmobench
from sysmo.contracts.check import Outcome
from sysmo.contracts.task import Task
from sysmo.evals.metrics import tla_invariants, tla_runtime

BOUND_S = 12.0
pytestmark = pytest.mark.usefixtures("tla_run_cache")


@pytest.fixture(scope="module")
def tasks(shared_benchmarks: Path) -> dict[str, Task]:
    return {t.id.split("/")[1]: t for t in sysmobench.load(shared_benchmarks / "sysmobench")}


def _gold(task: Task, names: set[str] | None = None, bounded: str = tla_invariants.DEFAULT_BOUNDED,
          timeout_s: float = BOUND_S):
    gold = task.references.model
    templates = [t for t in task.references.invariants if names is None or t.name in names]
    return tla_invariants.score(gold, templates, tla_runtime.model_config(gold, task), timeout_s=timeout_s,
                                bounded=bounded)


@pytest.mark.slow
@pytest.mark.parametrize("system", ["locksvc"])
def test_pgo_gold_invariants_are_full_marks(tasks: dict[str, Task], system: str) -> None:
    score = _gold(tasks[system])
    assert [(v.name, v.outcome) for v in score.verdicts if not v.holds] == []
    assert score.value == 1.0 and len(score.verdicts) == len(tasks[system].references.invariants)


RAFTKVS_CHECKED = {"LimitTerm", "LimitCommitIndex", "ElectionSafety"}


@pytest.fixture(scope="module")
def raftkvs_harness(tasks: dict[str, Task]) -> tla_invariants.InvariantsScore:
    """raftkvs's constraint templates and ElectionSafety under the default policy (harness), BOUND_S each."""
    return _gold(tasks["raftkvs"], RAFTKVS_CHECKED, "harness")


@pytest.mark.slow
def test_raftkvs_constraint_templates_hold_under_the_constraint(
        raftkvs_harness: tla_invariants.InvariantsScore) -> None:
    verdicts = {v.name: v for v in raftkvs_harness.verdicts}
    for name in ("LimitTerm", "LimitCommitIndex"):
        assert verdicts[name].outcome == Outcome.OK, verdicts[name].reason
        assert verdicts[name].formula and "(MCConstraint) =>" in verdicts[name].formula
    assert "MCConstraint) =>" not in (verdicts["ElectionSafety"].formula or "")  # not a conjunct
    assert raftkvs_harness.value == 1.0


@pytest.mark.slow
def test_the_policy_decides_how_a_time_out_counts(
        tasks: dict[str, Task], raftkvs_harness: tla_invariants.InvariantsScore) -> None:
    """raftkvs's state space takes far longer than a few seconds to explore: the check times out. The harness
    run is the constraint test's (BOUND_S); strict gets a real time-out of its own, shorter (no need to wait as
    long for the same kind of ending), its SANY run served by the run cache."""
    strict = _gold(tasks["raftkvs"], RAFTKVS_CHECKED, "strict", timeout_s=6)
    assert raftkvs_harness.bounded == "harness" and strict.bounded == "strict"
    for harness, strict_ in zip(raftkvs_harness.verdicts, strict.verdicts, strict=True):
        assert harness.name == strict_.name
        assert (harness.outcome, strict_.outcome) == (Outcome.OK, Outcome.INCONCLUSIVE), (harness.reason,
                                                                                          strict_.reason)
        assert "time limit" in harness.reason and "budget exhausted" in strict_.reason
    assert (raftkvs_harness.value, strict.value) == (1.0, 0.0)

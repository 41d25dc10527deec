"""A template expected to be violated, quantified over a constant set, checked one instance per TLC run until one is
violated (``invariants.by_instance``), or after the first instance in batches of doubling size
(``invariants.instance_batches``): the same verdict as the whole template's run, violated or holding."""

from __future__ import annotations

import pytest
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.check import Outcome
from sysmo.contracts.task import InvariantTemplate
from sysmo.evals.metrics import tla_invariants, tla_runtime
from sysmo.evals.metrics.tla_invariants import instances
from sysmo.evals.metrics.tla_invariants.formulas import Candidate
from sysmo.tools.tla import tlc

# process p counts from 0 to p - 1: 1 never moves, 3 reaches 2 (3 x 2 x 1 = 6 states)
SPEC = """---- MODULE Counters ----
EXTENDS Naturals
VARIABLES c
Procs == {1, 2, 3}
vars == <<c>>
Init == c = [p \\in Procs |-> 0]
Next == \\E p \\in Procs : c[p] < p - 1 /\\ c' = [c EXCEPT ![p] = @ + 1]
Spec == Init /\\ [][Next]_vars /\\ WF_vars(Next)
====
"""
ARTIFACT = Artifact(language=Language.TLA, files={"Counters.tla": SPEC, "Counters.cfg": "SPECIFICATION Spec\n"})


def _expected_violation(name: str, body: str) -> InvariantTemplate:
    return InvariantTemplate(name=name, type="liveness", natural_language=name, tla_example=f"{name} == {body}",
                             expected="violated", expected_source="this test")


# violated by instance (1, 3), the second of the six pairs i # j in TLC's order; holding in each of its 3 instances
VIOLATED = _expected_violation("NoOvertake", "\\A i, j \\in Procs : i # j => [](c[i] = 0 => ~<>(c[j] = 2))")
HOLDS = _expected_violation("NoThree", "\\A i \\in Procs : [](c[i] = 0 => ~<>(c[i] = 3))")
# violated by instance 3 alone (c[3] reaches 2), the second of the batch 2-3: a batch is violated by any of its
# instances
LAST_OF_BATCH = _expected_violation("NoTwoOnce", "\\A i \\in Procs : [](c[i] = 0 => ~<>(c[i] = 2))")
# a set that is not constant: TLC rejects the instance module's ASSUME, the template is checked whole (where TLC
# cannot handle a temporal formula quantified over a state's values: an error either way)
STATE_SET = _expected_violation("NoTwo", "\\A i \\in DOMAIN c : [](c[i] = 0 => ~<>(c[i] = 2))")


def test_the_plan_reads_the_bound_names_and_a_constant_guard() -> None:
    found = instances.plan(Candidate(body="\\A i, j \\in Procs :\n  i # j => [](c[i] = 0 => ~<>(c[j] = 2))"), set())
    assert found is not None and found.names == ("i", "j") and found.sets == ("Procs", "Procs")
    assert found.guard == "i # j" and found.instance_set() == "{<<i, j>> \\in (Procs) \\X (Procs) : i # j}"
    state_guard = instances.plan(Candidate(body="\\A i \\in Procs : c[i] = 0 => <>(c[i] = 1)"), set())
    assert state_guard is not None and state_guard.guard is None  # names a variable: no filter
    assert instances.plan(Candidate(body="[](\\A i \\in Procs : c[i] >= 0)"), set()) is None
    assert instances.plan(Candidate(body="\\A i \\in Procs : c[i] >= 0"), set()) is None  # nothing temporal


def test_a_batch_is_the_template_restricted_to_its_instances() -> None:
    found = instances.plan(Candidate(body="\\A i, j \\in Procs :\n  i # j => [](c[i] = 0 => ~<>(c[j] = 2))"), set())
    assert found is not None
    single, batch = found.module("M", "Counters", 2), found.module("M", "Counters", 4, 7)
    assert "\\A i \\in {SysmoInstances[2][1]}, j \\in {SysmoInstances[2][2]} :" in single
    assert ("\\A SysmoInstanceIndex \\in 4..7 : \\A i \\in {SysmoInstances[SysmoInstanceIndex][1]}, "
            "j \\in {SysmoInstances[SysmoInstanceIndex][2]} :") in batch
    assert found.module("M", "Counters", 3, 3) == found.module("M", "Counters", 3)
    # the bound name of a batch is the instance module's own: a template using it is checked whole
    own_name = Candidate(body="\\A SysmoInstanceIndex \\in Procs : <>(c[SysmoInstanceIndex] = 0)")
    assert instances.plan(own_name, set()) is None


@pytest.mark.slow
def test_one_instance_at_a_time_gives_the_whole_runs_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    modules: list[str] = []
    original = tlc.model_check
    monkeypatch.setattr(tlc, "model_check", lambda *a, **k: modules.append(k.get("module", "")) or original(*a, **k))
    scored = {}
    for by_instance, batches in ((True, False), (True, True), (False, False)):
        modules.clear()
        result = tla_invariants.score(ARTIFACT, [VIOLATED, HOLDS, STATE_SET, LAST_OF_BATCH],
                                      tla_runtime.model_config(ARTIFACT), timeout_s=120, max_states=100,
                                      bounded="sysmo", liveness_at_end=True, by_instance=by_instance,
                                      instance_batches=batches, parallel=1)
        scored[by_instance, batches] = ([(v.name, v.outcome) for v in result.verdicts], list(modules))
        notes = " ".join(result.verdicts[0].notes)
        assert ("instance 2 of 6 violated" in notes) == (by_instance and not batches)
        assert ("instances 2-3 (checked in one run) of 6 violated" in notes) == batches
    (split, split_runs), (batched, batched_runs), (whole, whole_runs) = scored.values()
    assert split == batched == whole == [("NoOvertake", Outcome.OK), ("NoThree", Outcome.FAILED),
                                         ("NoTwo", Outcome.ERROR), ("NoTwoOnce", Outcome.OK)]
    assert len(whole_runs) == 4
    # one at a time: stops at instance 2 of 6; all 3 hold; the set is not constant, then whole; instance 3 of 3
    assert len(split_runs) == 2 + 3 + 2 + 3
    # batched: instance 1, then 2-3 (violated); 1 then 2-3 (all hold); as before; 1 then 2-3 (violated by 3)
    assert len(batched_runs) == 2 + 2 + 2 + 2

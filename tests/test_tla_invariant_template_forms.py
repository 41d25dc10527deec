"""Template forms beyond plain formulas: per-process templates ``P(i) == ...``, action templates ("may idle"),
and templates the modelled system is documented to violate."""

from __future__ import annotations

from pathlib import Path

import pytest
from sysmo.contracts.artifact import Artifact, Language
from sysmo.benchmarks import sysmobench
from sysmo.contracts.task import InvariantTemplate
from sysmo.evals.metrics import tla_invariants, tla_runtime
from sysmo.contracts.check import Outcome

SPEC = """---- MODULE Turns ----
EXTENDS Naturals
CONSTANT N
Procs == 1..N
VARIABLES pc, owner
vars == <<pc, owner>>
Init == pc = [p \\in Procs |-> "idle"] /\\ owner = 0
Take(p) == pc[p] = "idle" /\\ owner = 0 /\\ owner' = p /\\ pc' = [pc EXCEPT ![p] = "cs"]
Give(p) == pc[p] = "cs" /\\ owner' = 0 /\\ pc' = [pc EXCEPT ![p] = "idle"]
Next == \\E p \\in Procs : Take(p) \\/ Give(p)
Spec == Init /\\ [][Next]_vars /\\ \\A p \\in Procs : WF_vars(Take(p) \\/ Give(p))
====
"""
CFG = "CONSTANT N = 2\nSPECIFICATION Spec\n"


def _score(*templates: InvariantTemplate) -> tla_invariants.InvariantsScore:
    artifact = Artifact(language=Language.TLA, files={"Turns.tla": SPEC, "Turns.cfg": CFG})
    return tla_invariants.score(artifact, list(templates), tla_runtime.model_config(artifact), timeout_s=60)


def _template(name: str, kind: str, example: str, **extra: str) -> InvariantTemplate:
    return InvariantTemplate(name=name, type=kind, natural_language=name, tla_example=example, **extra)


@pytest.mark.slow
def test_template_forms_are_checked_as_they_mean() -> None:
    score = _score(
        _template("EachReturns", "liveness", 'EachReturns(i) == pc[i] = "cs" ~> pc[i] = "idle"'),
        _template("MayIdle", "liveness", 'MayIdle == \\E p \\in Procs : pc[p] = "idle" /\\ UNCHANGED vars'),
        _template("NeverHeld", "safety", 'NeverHeld == \\E p \\in Procs : pc[p] = "gone" /\\ UNCHANGED vars'),
        _template("NoOwner", "safety", "NoOwner == owner = 0", expected="violated", expected_source="fixture"),
        _template("Bounded", "safety", "Bounded == owner <= N", expected="violated", expected_source="fixture"),
    )
    verdicts = {v.name: v for v in score.verdicts}
    each = verdicts["EachReturns"]
    assert each.outcome == Outcome.OK and "\\A i \\in Procs :" in each.formula and each.checked_as == "PROPERTY"
    assert (verdicts["MayIdle"].outcome, verdicts["MayIdle"].checked_as) == (Outcome.OK, "POSSIBLE")
    assert verdicts["NeverHeld"].outcome == Outcome.FAILED and "never possible" in verdicts["NeverHeld"].reason
    assert verdicts["NoOwner"].outcome == Outcome.OK and "documented to violate" in verdicts["NoOwner"].reason
    assert verdicts["Bounded"].outcome == Outcome.FAILED and "holds, but" in verdicts["Bounded"].reason


def test_locksvc_priority_inversion_is_marked_as_violated_by_the_system(shared_benchmarks: Path) -> None:
    task = next(t for t in sysmobench.load(shared_benchmarks / "sysmobench") if t.id == "sysmobench/locksvc")
    expected = {t.name: t.expected for t in task.references.invariants}
    assert expected.pop("NoPriorityInversion") == "violated"
    assert set(expected.values()) == {"holds"}


@pytest.mark.slow
def test_locksvc_gold_per_process_and_action_templates(shared_benchmarks: Path) -> None:
    task = next(t for t in sysmobench.load(shared_benchmarks / "sysmobench") if t.id == "sysmobench/locksvc")
    gold = task.references.model
    templates = [t for t in task.references.invariants if t.name in ("ProgressOK", "ServerIsIdle")]
    concretised, _, _ = tla_invariants.concretise(gold, templates)
    progress = concretised[0][0]
    assert progress is not None and progress.body.startswith("\\A i \\in ProcSet : (pc[i] = \"acquireLock\" ~>")
    idle = _score_on(gold, task, [templates[1]])
    assert (idle.outcome, idle.checked_as) == (Outcome.OK, "POSSIBLE")


def _score_on(gold: Artifact, task, templates: list[InvariantTemplate]):
    return tla_invariants.score(gold, templates, tla_runtime.model_config(gold, task), timeout_s=60).verdicts[0]


def test_an_example_whose_conclusion_has_another_name_is_used() -> None:
    example = 'ClientRcvResp(i) == pc[i] = "rcvResp" ~> pc[i] = "clientLoop"\nClientsOK == \\A i \\in ClientSet: ClientRcvResp(i)'
    candidate = tla_invariants.parse_candidate(example, "ClientsLiveness", {"pc", "ClientSet"})
    assert candidate is not None and candidate.body == "\\A i \\in ClientSet: ClientRcvResp(i)"
    assert candidate.helpers == ['ClientRcvResp(i) == pc[i] = "rcvResp" ~> pc[i] = "clientLoop"']

"""Counting policy for a TLC check that runs out of time (``invariants.bounded``): ``harness`` counts a time-out
without violation as holding (SysMoBench's harness does), ``strict`` keeps it inconclusive, ``sysmo`` keeps it
inconclusive and counts a state predicate that holds up to the deterministic state bound as holding."""

from __future__ import annotations

import pytest
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.check import Outcome
from sysmo.contracts.task import InvariantTemplate
from sysmo.errors import ConfigError
from sysmo.evals.metrics import tla_invariants, tla_runtime

# an unbounded state space: BFS never finishes, so every check ends at the time limit
SPEC = """---- MODULE Grow ----
EXTENDS Naturals
VARIABLES x, y
Init == x = 0 /\\ y = 0
Next == \\/ x' = x + 1 /\\ y' = y
        \\/ y' = y + 1 /\\ x' = x
====
"""
CFG = "INIT Init\nNEXT Next\n"
# the two policies see the same TLC runs: the grouped run that finds SmallSum violated (and SANY's) is made once
# for the file (the run cache); the check that runs to its time limit is never cached, so each policy meets a real one
pytestmark = pytest.mark.usefixtures("tla_run_cache")
TEMPLATES = [
    InvariantTemplate(name="NonNegative", type="safety", natural_language="x stays natural",
                      tla_example="NonNegative == x >= 0 /\\ y >= 0"),
    InvariantTemplate(name="SmallSum", type="safety", natural_language="x + y stays below 3",
                      tla_example="SmallSum == x + y < 3"),
]


def _score(bounded: str) -> tla_invariants.InvariantsScore:
    artifact = Artifact(language=Language.TLA, files={"Grow.tla": SPEC, "Grow.cfg": CFG})
    return tla_invariants.score(
        artifact, TEMPLATES, tla_runtime.model_config(artifact), timeout_s=5, bounded=bounded
    )


@pytest.fixture(scope="module")
def scores() -> dict[str, tla_invariants.InvariantsScore]:
    return {policy: _score(policy) for policy in tla_invariants.BOUNDED_POLICIES}


def test_harness_counts_a_time_out_without_violation_as_holding(scores) -> None:
    harness = {v.name: v for v in scores["harness"].verdicts}
    assert harness["NonNegative"].outcome == Outcome.OK
    assert "time limit" in harness["NonNegative"].reason
    assert harness["SmallSum"].outcome == Outcome.FAILED  # a violation found in time still fails
    assert scores["harness"].value == 0.5 and scores["harness"].bounded == "harness"


def test_strict_keeps_a_time_out_inconclusive(scores) -> None:
    strict = {v.name: v for v in scores["strict"].verdicts}
    assert strict["NonNegative"].outcome == Outcome.INCONCLUSIVE
    assert strict["SmallSum"].outcome == Outcome.FAILED
    assert scores["strict"].value == 0.0


def test_sysmo_keeps_a_time_out_inconclusive_and_says_so(scores) -> None:
    sysmo = {v.name: v for v in scores["sysmo"].verdicts}
    assert sysmo["NonNegative"].outcome == Outcome.INCONCLUSIVE
    assert "never counted as holding" in sysmo["NonNegative"].reason
    assert sysmo["SmallSum"].outcome == Outcome.FAILED
    assert scores["sysmo"].value == 0.0


def test_sysmo_counts_a_state_predicate_holding_up_to_the_state_bound_and_nothing_else() -> None:
    """The state bound, not the clock, ends each check: a state predicate or a temporal property with no
    counterexample in the explored graph holds within it; a temporal counterexample found under the bound (the
    frontier looks like stuttering), or a template the system is documented to violate, stays inconclusive."""
    artifact = Artifact(language=Language.TLA, files={"Grow.tla": SPEC, "Grow.cfg": CFG})
    templates = [
        TEMPLATES[0],
        InvariantTemplate(name="XGrows", type="liveness", natural_language="x eventually exceeds 2",
                          tla_example="XGrows == <>(x > 2)"),
        InvariantTemplate(name="XNeverShrinks", type="liveness", natural_language="no step decreases x",
                          tla_example="XNeverShrinks == [][x' >= x]_<<x, y>>"),
        InvariantTemplate(name="Huge", type="safety", natural_language="x + y stays below 1000",
                          tla_example="Huge == x + y < 1000", expected="violated", expected_source="a test"),
    ]
    score = tla_invariants.score(artifact, templates, tla_runtime.model_config(artifact), timeout_s=120,
                                 max_states=200, bounded="sysmo")
    verdicts = {v.name: v for v in score.verdicts}
    assert verdicts["NonNegative"].outcome == Outcome.OK
    assert any(n.startswith(tla_invariants.WITHIN_BOUND_NOTE) for n in verdicts["NonNegative"].notes)
    assert verdicts["XGrows"].outcome == Outcome.INCONCLUSIVE  # a stuttering counterexample: maybe the bound's
    assert verdicts["XNeverShrinks"].outcome == Outcome.OK  # no counterexample in the explored graph
    assert verdicts["Huge"].outcome == Outcome.INCONCLUSIVE  # the documented violation may lie beyond the bound
    assert score.value == pytest.approx(2 / 4) and score.max_states == 200


def test_sysmo_bounds_temporal_properties_apart() -> None:
    """A run with a temporal property stops at its own, smaller bound (TLC's liveness check grows faster than the
    graph); a state predicate keeps the larger one."""
    artifact = Artifact(language=Language.TLA, files={"Grow.tla": SPEC, "Grow.cfg": CFG})
    templates = [TEMPLATES[0], InvariantTemplate(name="XNeverShrinks", type="liveness", natural_language="x grows",
                                                 tla_example="XNeverShrinks == [][x' >= x]_<<x, y>>")]
    score = tla_invariants.score(artifact, templates, tla_runtime.model_config(artifact), timeout_s=120,
                                 max_states=300, max_states_temporal=60, bounded="sysmo")
    verdicts = {v.name: v for v in score.verdicts}
    assert all(v.outcome == Outcome.OK for v in verdicts.values()) and score.max_states_temporal == 60
    assert 60 <= verdicts["XNeverShrinks"].distinct_states < 300 <= verdicts["NonNegative"].distinct_states


def test_an_unknown_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        _score("lenient")


CONSTRAINED = """---- MODULE Capped ----
EXTENDS Naturals
VARIABLES x
Init == x = 0
Next == x' = x + 1
Limit == x < 3
Cap == Limit
====
"""


def test_a_conjunct_of_the_state_constraint_is_checked_under_it() -> None:
    artifact = Artifact(language=Language.TLA,
                        files={"Capped.tla": CONSTRAINED, "Capped.cfg": "INIT Init\nNEXT Next\nCONSTRAINT Cap\n"})
    templates = [InvariantTemplate(name="Limit", type="safety", natural_language="x stays below 3",
                                   tla_example="Limit == x < 3"),
                 InvariantTemplate(name="Small", type="safety", natural_language="x stays below 2",
                                   tla_example="Small == x < 2")]
    verdicts = {v.name: v for v in tla_invariants.score(
        artifact, templates, tla_runtime.model_config(artifact), timeout_s=30).verdicts}
    # TLC generates x = 3 before pruning it: checked alone, Limit would fail on it
    assert verdicts["Limit"].outcome == Outcome.OK
    assert "Cap) =>" in verdicts["Limit"].formula and any("CONSTRAINT" in n for n in verdicts["Limit"].notes)
    assert verdicts["Small"].outcome == Outcome.FAILED  # not a conjunct: checked as written
    assert tla_invariants.constraint_conjuncts(["Cap"], [CONSTRAINED]) == {"Limit"}

"""Counting policy for a TLC check that runs out of time (``invariants.bounded``): ``harness`` counts a time-out
without violation as holding (SysMoBench's harness does), ``strict`` keeps it inconclusive."""

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

"""TLA+ cascade controls: gold references score 1.0 everywhere, known bugs lose exactly the stage that shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysmo.benchmarks import sysmobench
from sysmo.benchmarks.starter import STARTER_DIR, load_task_folder
from sysmo.contracts.task import Task, TaskKind
from sysmo.evals.cascade import ScoringContext, cascade_for
from sysmo.evals.cascades import tla

STAGES = ["syntax", "runtime", "conformance", "invariants"]  # then transitions: skipped, no windows here
TLA_TASKS = ["bounded_buffer", "leader_election", "spinlock", "two_phase_commit"]
# the defaults are SysMoBench's (tested in test_tla_cascade); CI uses one simulation run. bounded_buffer's checks
# get a state bound far above its reference's state space (every starter reference has at most 260 distinct
# states, two_phase_commit's; the references' 1.0 needs their whole space explored, so the bound cannot hide
# anything there): it caps what the unbounded no_bound_check variant explores per check. 1,000 states instead of
# 50,000 leave it the same lost stage (BoundedCapacity violated in 5 states, the rest bounded) for 11 s of TLC,
# not 32 s. The other tasks' state spaces are finite and small: unbounded, their checks are the very runs other
# files make (test_tla_invariants_grouped on two_phase_commit, test_tla_cascade on the spinlock), made once in
# the session (the run cache)
CI = {"runtime.runs": 1, "invariants.timeout_s": 60}
BOUNDED = {"bounded_buffer": {"invariants.max_states": 1_000}}
pytestmark = pytest.mark.usefixtures("tla_run_cache")


def _task(name: str) -> Task:
    return load_task_folder(STARTER_DIR / "tla" / name)


def _options(name: str) -> dict:
    return {**CI, **BOUNDED.get(name, {})}


def _variants() -> list[tuple[str, str]]:
    return [(name, b.name) for name in TLA_TASKS for b in _task(name).references.buggy_variants]


@pytest.mark.slow
@pytest.mark.parametrize("name", TLA_TASKS)
def test_starter_reference_scored_against_its_task_gets_one_on_every_stage(name: str) -> None:
    task = _task(name)
    card = cascade_for(TaskKind.TLA).score(task.references.model, task, ScoringContext(options=_options(name)))
    assert [s.stage for s in card.stages] == STAGES + ["transitions"]
    assert card.stage("transitions").outcome == "skipped" and card.flat()["transitions"] is None
    scored = card.stages[:len(STAGES)]
    assert {s.stage: (s.value, s.outcome) for s in scored} == {s: (1.0, "ok") for s in STAGES}
    assert all(s.passed and s.provenance.get("tool_version") for s in scored)
    assert card.stage("conformance").detail["mapping"]["source"] == "names"
    invariants = card.stage("invariants").detail["invariants"]
    assert {v["source"] for v in invariants} == {"template"}
    assert {v["checked_as"] for v in invariants} == {"INVARIANT", "PROPERTY"}


@pytest.mark.slow
@pytest.mark.parametrize(("name", "variant"), _variants())
def test_starter_buggy_variant_loses_exactly_the_stage_that_exposes_its_bug(name: str, variant: str) -> None:
    task = _task(name)
    buggy = next(b for b in task.references.buggy_variants if b.name == variant)
    card = cascade_for(TaskKind.TLA).score(buggy.artifact, task, ScoringContext(options=_options(name)))
    exposed = STAGES.index(buggy.exposed_by)
    for stage in STAGES[:exposed]:
        assert card.metric(stage) == 1.0 and card.stage(stage).passed, (stage, card.stage(stage).detail)
    stage = card.stage(buggy.exposed_by)
    assert stage.value < 1.0 and stage.outcome == "failed" and not stage.passed
    if buggy.exposed_by == "conformance":
        first = stage.detail["first_failure"]
        assert first["line"] > 1 and first["event"]  # a logged step the model cannot take, not the start
        # scored all the same (conformance gates nothing): the bug is invisible to the invariants
        invariants = card.stage("invariants")
        assert invariants.value == 1.0 and invariants.outcome == "ok", invariants.detail["violated"]
    else:
        violated = stage.detail["violated"]
        assert buggy.invariant in violated
        # the other templates are decided too (hold, or break as consequences of the same bug), or bounded
        assert stage.detail["errors"] == []
        named = next(v for v in stage.detail["invariants"] if v["name"] == buggy.invariant)
        assert named["counterexample_states"] and named["source"] == "template"


def _sysmobench(shared: Path) -> dict[str, Task]:
    return {t.id.split("/", 1)[1]: t for t in sysmobench.load(shared / "sysmobench")}


# PGo gold specs on their shipped traces: tests/test_pgo_gold_controls.py.


# (system, the check the reproduced bug breaks, options that bound the checks it does not break)
# Every bug spec exposing its bug is pinned by tests/test_tla_bug_hunt.py; here one spec pins how the invariants
# stage scores a spec's own cfg checks (violated with a counterexample, inconclusive never counted as holding).
BUG_REPRODUCTIONS = [
    ("mutex", "MutualExclusion", {"invariants.max_states": 5_000}),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("system", "broken", "bounds"), BUG_REPRODUCTIONS, ids=[b[0] for b in BUG_REPRODUCTIONS]
)
def test_sysmobench_bug_reproduction_spec_fails_the_invariant_its_bug_breaks(
    shared_benchmarks: Path, system: str, broken: str, bounds: dict
) -> None:
    task = _sysmobench(shared_benchmarks)[system]
    (buggy,) = task.references.buggy_variants
    # the task's templates do not name the bug's invariant: the spec's own cfg checks are the templates
    options = {"invariants.templates": "cfg", "invariants.timeout_s": 60, **bounds}
    result = tla.invariants_stage(buggy.artifact, task, ScoringContext(options=options))
    assert broken in result.detail["violated"], result.detail
    assert result.outcome == "failed" and not result.passed and result.value < 1.0
    verdict = next(v for v in result.detail["invariants"] if v["name"] == broken)
    assert verdict["counterexample_states"] and verdict["reason"].startswith("violated")
    # nothing that merely ran out of states or time is counted as holding
    held = set(result.detail["holding"])
    assert not held & set(result.detail["inconclusive"])
    assert result.metrics["holding"] == len(held) and result.value == len(held) / result.metrics["templates"]


@pytest.mark.slow
def test_redisraft_bug_is_out_of_reach_within_the_bound_so_invariants_are_inconclusive(
    shared_benchmarks: Path,
) -> None:
    task = _sysmobench(shared_benchmarks)["redisraft"]
    (buggy,) = task.references.buggy_variants
    # strict: a check that stops at the state bound is inconclusive (the sysmo policy would count these state
    # predicates as holding within the 2,000 states; the bug controls of `sysmo reproduce sysmobench` are strict)
    options = {"invariants.templates": "cfg", "invariants.max_states": 2_000, "invariants.timeout_s": 60,
               "invariants.bounded": "strict"}
    result = tla.invariants_stage(buggy.artifact, task, ScoringContext(options=options))
    assert result.outcome == "inconclusive" and not result.passed and result.value == 0.0
    assert sorted(result.detail["inconclusive"]) == ["LinearizableReadSafe", "TypeOK"]
    assert result.detail["holding"] == [] and result.metrics["inconclusive"] == 2.0
    assert all("state bound" in v["reason"] for v in result.detail["invariants"])

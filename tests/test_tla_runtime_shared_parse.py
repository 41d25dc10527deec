"""``runtime.shared_parse`` (on by default): the seeded simulations run one after another in a JVM that parses the
spec once (``tlc.simulate_seeds``); each seed's result is the one a JVM of its own gives, and a seed with an error
(and the seeds after it in that JVM) runs in a JVM of its own, so the runtime score is the same."""

from __future__ import annotations

import pytest
from sysmo.benchmarks.starter import STARTER_DIR, load_task_folder
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.check import CheckResult, Outcome
from sysmo.evals.cascade import ScoringContext
from sysmo.evals.cascades import tla
from sysmo.evals.metrics import tla_runtime
from sysmo.tools.tla import tlc

# from x = 0 a behaviour either counts up (clean) or jumps to 5, where Bad fails: about half the seeds fail
SOMETIMES = """---- MODULE Sometimes ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Up == x < 3 /\\ x' = x + 1
Jump == x = 0 /\\ x' = 5
Bad == x = 5 /\\ x' = x + "a"
Next == Up \\/ Jump \\/ Bad
====
"""

pytestmark = pytest.mark.skipif(not tlc.seeds_in_one_jvm(), reason="needs the TLC launcher (a JDK's javac)")


def _same(result: CheckResult) -> tuple:
    report = tlc.report_of(result)
    return (result.outcome, result.tool_version, report.mode, report.finished,
            [(c.name, c.distinct, c.generated) for c in report.coverage], [v.message for v in report.violations])


@pytest.mark.slow
def test_each_seed_gives_what_a_jvm_of_its_own_gives() -> None:
    task = load_task_folder(STARTER_DIR / "tla" / "spinlock")
    gold = task.references.model
    config = tla_runtime.without_checks(tla_runtime.model_config(gold, task).config)
    plan = tla_runtime.seeds(1, 4)
    shared = tlc.simulate_seeds(gold, config, plan, num=10, depth=20, check_deadlock=False)
    alone = [tlc.simulate(gold, config, num=10, depth=20, seed=s, check_deadlock=False) for s in plan]
    assert all(r is not None for r in shared)
    assert [_same(r) for r in shared] == [_same(r) for r in alone]  # type: ignore[arg-type]
    assert len({tuple(_same(r)[4]) for r in alone}) > 1  # the seeds differ: each seed's own counts were compared


@pytest.mark.slow
def test_a_seed_with_an_error_and_the_seeds_after_it_are_left_to_jvms_of_their_own() -> None:
    model = Artifact(language=Language.TLA, files={"Sometimes.tla": SOMETIMES,
                                                   "Sometimes.cfg": "INIT Init\nNEXT Next\n"})
    config = tla_runtime.model_config(model)
    results = {s: tlc.simulate(model, config.config, num=1, depth=3, seed=s, check_deadlock=False)
               for s in tla_runtime.seeds(1, 8)}
    clean = [s for s, r in results.items() if r.outcome == Outcome.OK]
    failing = [s for s, r in results.items() if r.outcome == Outcome.FAILED]
    assert len(clean) >= 2 and failing  # about half of each
    plan = [*clean[:-1], failing[0], clean[-1]]  # clean seeds, an error, a clean seed after it
    alone = [results[s] for s in plan]
    first_error = len(clean) - 1
    shared = tlc.simulate_seeds(model, config.config, plan, num=1, depth=3, check_deadlock=False)
    assert [r is not None for r in shared] == [i < first_error for i in range(len(plan))]
    assert [_same(r) for r in shared[:first_error]] == [_same(r) for r in alone[:first_error]]  # type: ignore[arg-type]
    with_shared = tla_runtime.score(model, config, runs=8, num=1, depth=3)
    without = tla_runtime.score(model, config, runs=8, num=1, depth=3, shared_parse=False)
    assert [r.model_dump(exclude={"duration_s"}) for r in with_shared.runs] == \
        [r.model_dump(exclude={"duration_s"}) for r in without.runs]
    assert (with_shared.value, with_shared.error_actions, with_shared.outcome) == \
        (without.value, without.error_actions, Outcome.FAILED)


def test_the_cascade_passes_the_option() -> None:
    task = load_task_folder(STARTER_DIR / "tla" / "spinlock")
    options = {"runtime.runs": 2, "runtime.num": 5, "runtime.depth": 5}
    shared = tla.runtime_stage(task.references.model, task, ScoringContext(options=options))
    alone = tla.runtime_stage(task.references.model, task,
                              ScoringContext(options={**options, "runtime.shared_parse": "false"}))
    assert shared.detail["covered"] == alone.detail["covered"] and shared.value == alone.value


COUNTER = """---- MODULE Counter ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Up == x < 2 /\\ x' = x + 1
Down == x > 0 /\\ x' = x - 1
Next == Up \\/ Down
====
"""


@pytest.mark.slow
def test_every_simulation_reports_its_coverage_however_fast_it_ends() -> None:
    """TLC prints a simulation's coverage from a report thread that a simulation ending before the thread first
    looks leaves silent (tiny behaviours in a warm JVM lost that race for about half the seeds): the launcher reports
    the coverage again at each simulation's end, so every seed, shared or alone, has its counts."""
    model = Artifact(language=Language.TLA, files={"Counter.tla": COUNTER, "Counter.cfg": "INIT Init\nNEXT Next\n"})
    config = tla_runtime.model_config(model).config
    plan = tla_runtime.seeds(3, 40)  # one JVM: many chances for the race
    shared = tlc.simulate_seeds(model, config, plan, num=1, depth=2, check_deadlock=False)
    alone = [tlc.simulate(model, config, num=1, depth=2, seed=s, check_deadlock=False) for s in plan[:3]]
    for result in [*shared, *alone]:
        assert result is not None and result.outcome == Outcome.OK
        assert sorted(c.name for c in tlc.report_of(result).coverage) == ["Down", "Up"]
        # whatever the race did, a coverage report follows the simulation's end ("Finished", message 2186)
        output = result.raw_output
        assert "@!@!@STARTMSG 2772:" in output[output.index("@!@!@STARTMSG 2186:"):]
    assert [_same(r) for r in shared[:3]] == [_same(r) for r in alone]  # type: ignore[arg-type]

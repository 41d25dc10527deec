"""Bug controls: every SysMoBench bug-reproduction spec exposes its bug (a violated check with a counterexample).

Each hunt is bounded by work (``bug_hunt.HuntBounds``: distinct states per BFS, simulation runs x behaviours
from a fixed seed), so whether a bug is found does not depend on the machine's load. curp, mutex, rwmutex and
etcd fall to the first BFS (etcd's ElectionSafety after 49,689 distinct states, its EventuallyElectLeader
once the 100,000-state graph is checked); redisraft's stale read is 15 states deep and every BFS meets the
spec's own out-of-domain error in ``LogTerm`` first (61k distinct states with 2 servers), so only random
simulation with 2 servers reaches it (seed 3 of the default runs). Its hunt here gives the cfg's 3 servers a
small BFS and one simulation run (``REDISRAFT_BOUNDS``; they still run, and fail, first), as a user who knows
the bug is deep would. The hunts share one module fixture and two threads: redisraft's on one, the others and
the small deep spec's (no published data needed) on the other.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from sysmo.contracts.check import Outcome
from sysmo.tools.tla import bug_hunt, tlc

# (spec folder, check whose violation is the reproduced bug); etcd's cfg has two, each checked on its own
# (which one a single TLC run with both meets first depends on the run)
BUGS: list[tuple[str, bug_hunt.CheckKind, str]] = [
    ("redisraft", "invariant", "LinearizableReadSafe"),
    ("curp", "invariant", "NoLowerTermResult"),
    ("etcd", "property", "EventuallyElectLeader"),
    ("etcd", "invariant", "ElectionSafety"),
    ("mutex", "invariant", "MutualExclusion"),
    ("rwmutex", "invariant", "RWMInvariant"),
]
IDS = [f"{system}-{name}" for system, _, name in BUGS]
REDISRAFT_BOUNDS = bug_hunt.HuntBounds(bfs_states=10_000, sim_runs=1)
DEEP_BOUNDS = bug_hunt.HuntBounds(bfs_states=20_000, sim_runs=2, smaller_sim_runs=1, sim_behaviours=200, depth=20)


def test_shrink_candidates_cut_plain_finite_sets_largest_first() -> None:
    constants = ["N = 3", "Server = {1, 2, 3}", "Nil <- NilVal", "Threads = {t1, t2, t3, t4}",
                 "Pairs = {<<1, 2>>, <<2, 3>>, <<3, 1>>}", "Two = {a, b}"]
    assert bug_hunt.shrink_candidates(constants) == [(3, "Threads = {t1, t2}"), (1, "Server = {1, 2}")]


SMALL = """---- MODULE Deep ----
EXTENDS Naturals
CONSTANT Procs
VARIABLE x
Init == x = [p \\in Procs |-> 0]
Next == \\E p \\in Procs : x[p] < 6 /\\ x' = [x EXCEPT ![p] = x[p] + 1]
Safe == ~(\\A p \\in Procs : x[p] = 6)
====
"""


DEEP_CFG = ("INIT Init\nNEXT Next\nCONSTANT Procs = {p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12}\n"
            "INVARIANT Safe\n")


def test_a_hunt_whose_safety_net_expires_is_inconclusive_not_clean() -> None:
    # the first BFS alone outlasts a 0.5 s net (a JVM start): the hunt stops there, whatever its bounds allowed
    stopped = bug_hunt.hunt(SMALL, DEEP_CFG, ("invariant", "Safe"), budget_s=0.5)
    assert stopped.safety_net_expired and not stopped.found and len(stopped.steps) == 1
    assert stopped.result.outcome == Outcome.INCONCLUSIVE
    assert "safety net of 0.5 s expired" in stopped.result.details["reason"]


@pytest.fixture(scope="module")
def pool() -> Iterator[ThreadPoolExecutor]:
    """Two hunts at a time for the module: the long redisraft hunt on one thread, every other hunt on the other."""
    with ThreadPoolExecutor(max_workers=2) as threads:
        yield threads


@pytest.fixture(scope="module")
def deep_hunt(pool: ThreadPoolExecutor) -> Future[bug_hunt.HuntResult]:
    # all 12 processes at 6 is 72 steps deep in 7^12 states: BFS and short simulations cannot get there in
    # seconds; with 2 processes it is 12 steps deep
    return pool.submit(bug_hunt.hunt, SMALL, DEEP_CFG, ("invariant", "Safe"), bounds=DEEP_BOUNDS)


@pytest.fixture(scope="module")
def hunts(shared_benchmarks: Path, pool: ThreadPoolExecutor, deep_hunt: Future) -> dict[str, bug_hunt.HuntResult]:
    """The bug specs' hunts; the deep spec's (``deep_hunt``, asked for first) runs beside redisraft's with them."""
    root = shared_benchmarks / "sysmobench" / "bug_repro_specs"

    def run(bug: tuple[str, bug_hunt.CheckKind, str]) -> tuple[str, bug_hunt.HuntResult]:
        system, kind, name = bug
        tla = next((root / system).glob("*.tla"))
        bounds = REDISRAFT_BOUNDS if system == "redisraft" else None
        return f"{system}-{name}", bug_hunt.hunt(tla.read_text(), tla.with_suffix(".cfg").read_text(),
                                                 (kind, name), bounds=bounds)

    # the long redisraft hunt first: it takes the free thread, the others queue behind the deep spec's hunt
    return dict(pool.map(run, BUGS))


@pytest.mark.slow
@pytest.mark.parametrize(("system", "kind", "name"), BUGS, ids=IDS)
def test_every_bug_spec_exposes_its_bug_within_the_bounds(hunts: dict[str, bug_hunt.HuntResult],
                                                          system: str, kind: str, name: str) -> None:
    found = hunts[f"{system}-{name}"]
    assert found.found, found.notes()
    violation = tlc.report_of(found.result).violations[0]
    assert violation.kind == kind
    if kind == "invariant":  # TLC does not name a violated temporal property
        assert violation.name == name
    assert found.counterexample_states and found.counterexample_states >= 2
    assert not found.safety_net_expired


@pytest.mark.slow
def test_redisraft_needs_the_smaller_instance_and_says_so(hunts: dict[str, bug_hunt.HuntResult]) -> None:
    found = hunts["redisraft-LinearizableReadSafe"]
    assert found.strategy == "smaller-constants" and "Server = {1, 2}" in found.constants
    # BFS and simulation with the cfg's 3 servers ran first, within their bounds, and found nothing
    assert [s.strategy for s in found.steps][:2] == ["bfs", "simulate"]
    assert all("Server = {1, 2}" not in step.constants for step in found.steps[:2])
    assert found.counterexample_states == 15 and found.steps[-1].seeds == [1, 2, 3]
    assert any(d.code == "smaller-constants" for d in found.result.diagnostics)
    # the BFS with 2 servers stops at the spec's out-of-domain error first: its step says so, not "violation"
    stopped = next(s for s in found.steps if s.strategy == "smaller-constants" and s.outcome == "failed")
    assert stopped.reason.startswith("not a violation of the check: TLC stopped on an error (evaluation)")
    assert "out of domain" in stopped.reason


@pytest.mark.slow
def test_a_bug_out_of_bfs_reach_is_found_with_smaller_constants(deep_hunt: Future[bug_hunt.HuntResult]) -> None:
    # last in the module: its hunt ran beside redisraft's (without the published data, on its own)
    found = deep_hunt.result()
    assert found.found and found.strategy == "smaller-constants", found.notes()
    assert "Procs = {p1, p2}" in found.constants and found.counterexample_states == 13
    assert [s.strategy for s in found.steps][:2] == ["bfs", "simulate"]
    assert found.steps[0].outcome == Outcome.INCONCLUSIVE


@pytest.mark.slow
def test_the_same_hunt_takes_the_same_steps_to_the_same_counterexample(
        deep_hunt: Future[bug_hunt.HuntResult]) -> None:
    # the deep spec's hunt again, now alone on this thread: its bounds, not the load, decide every step
    first, again = deep_hunt.result(), bug_hunt.hunt(SMALL, DEEP_CFG, ("invariant", "Safe"), bounds=DEEP_BOUNDS)
    assert [s.key() for s in again.steps] == [s.key() for s in first.steps]
    assert again.found and again.counterexample_states == first.counterexample_states
    assert tlc.report_of(again.result).trace == tlc.report_of(first.result).trace

"""The tool layer on the SysMoBench corpus: example and PGo specs pass SANY, TLC finds the reproduced bugs."""

from __future__ import annotations

from pathlib import Path

import pytest

from sysmo.tools.tla import sany, tlc

SYSMOBENCH = Path("sysmobench")
EXAMPLE_SPECS = [
    "dqueue/simpleloop/claude/dqueue.tla",
    "dqueue/specula/claude/dqueue.tla",
    "dqueue/specula/deepseek/dqueue.tla",  # written with Unicode operators (∪, ×)
    "dqueue/specula/gemini/dqueue.tla",
    "dqueue/specula/gpt5/dqueue.tla",
    "locksvc/claude/locksvc.tla",
    "locksvc/deepseek/locksvc.tla",
    "locksvc/gpt5/locksvc.tla",
    "raftkvs/claude/raftkvs.tla",
    "raftkvs/gpt5/raftkvs.tla",
]
PGO_SPECS = ["dqueue/dqueue.tla", "locksvc/locksvc.tla", "raftkvs/raftkvs.tla"]
# (bug spec, the check TLC must report as violated)
BUG_SPECS = {
    "curp": ("curp/curp.tla", "curp/curp.cfg", ("invariant", "NoLowerTermResult")),
    "etcd": ("etcd/1_etcdraft.tla", "etcd/1_etcdraft.cfg", ("property", "EventuallyElectLeader")),  # liveness
    "mutex": ("mutex/1_mutex.tla", "mutex/1_mutex.cfg", ("invariant", "MutualExclusion")),
    "rwmutex": ("rwmutex/1_rwmutex.tla", "rwmutex/1_rwmutex.cfg", ("invariant", "RWMInvariant")),
}


def test_the_corpus_lists_are_complete(shared_benchmarks: Path) -> None:
    found = sorted(str(p.relative_to(shared_benchmarks / SYSMOBENCH / "example_specs"))
                   for p in (shared_benchmarks / SYSMOBENCH / "example_specs").rglob("*.tla"))
    assert found == sorted(EXAMPLE_SPECS + ["test/TestSpec.tla"])


@pytest.mark.parametrize("relative", EXAMPLE_SPECS)
def test_example_spec_passes_sany_with_our_library(shared_benchmarks: Path, relative: str) -> None:
    result = sany.check((shared_benchmarks / SYSMOBENCH / "example_specs" / relative).read_text())
    assert result.outcome == "ok", result.summary()


def test_the_harness_fixture_spec_fails_as_it_was_written_to(shared_benchmarks: Path) -> None:
    # example_specs/test/TestSpec.tla is a fixture of the SysMoBench harness: it uses Send and message
    # without declaring them, on purpose, so SANY must reject it on those lines
    result = sany.check((shared_benchmarks / SYSMOBENCH / "example_specs/test/TestSpec.tla").read_text())
    assert result.outcome == "failed"
    assert [(d.line, d.message) for d in result.errors] == [
        (6, "Unknown operator: `Send'."), (7, "Unknown operator: `Send'.")]


@pytest.mark.parametrize("relative", PGO_SPECS)
def test_pgo_ground_truth_spec_passes_sany(shared_benchmarks: Path, relative: str) -> None:
    result = sany.check((shared_benchmarks / SYSMOBENCH / "pgo" / relative).read_text())
    assert result.outcome == "ok", result.summary()


@pytest.mark.slow
@pytest.mark.parametrize("system", sorted(BUG_SPECS))
def test_tlc_finds_the_reproduced_bug(shared_benchmarks: Path, system: str) -> None:
    spec, cfg, (kind, name) = BUG_SPECS[system]
    root = shared_benchmarks / SYSMOBENCH / "bug_repro_specs"
    result = tlc.model_check((root / spec).read_text(), (root / cfg).read_text(), timeout_s=180)
    assert result.outcome == "failed", result.summary(5)
    violation = tlc.report_of(result).violations[0]
    assert violation.kind == kind
    if name:
        assert violation.name == name
    assert tlc.report_of(result).trace


@pytest.mark.slow
def test_redisraft_bug_is_out_of_reach_so_bfs_and_simulation_are_inconclusive(shared_benchmarks: Path) -> None:
    # neither exhaustive search nor random simulation reached this bug in 2 minutes when measured:
    # under a bound the only honest answers are "inconclusive" (or a found violation), never "ok"
    root = shared_benchmarks / SYSMOBENCH / "bug_repro_specs/redisraft"
    text, cfg = (root / "1_redisraft.tla").read_text(), (root / "1_redisraft.cfg").read_text()
    bfs = tlc.model_check(text, cfg, max_states=4000, timeout_s=120)
    assert bfs.outcome == "inconclusive", bfs.summary()
    assert "state bound" in bfs.details["reason"]
    walk = tlc.simulate(text, cfg, num=1_000_000, depth=100, seed=11, timeout_s=15, find_violation=True)
    assert walk.outcome == "inconclusive", walk.summary()

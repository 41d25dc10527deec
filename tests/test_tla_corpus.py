"""The tool layer on the SysMoBench corpus: example and PGo specs pass SANY (bug specs: test_tla_bug_hunt.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sysmo.benchmarks import sysmobench
from sysmo.evals.metrics import tla_runtime
from sysmo.tools.install import tla2tools_jar
from sysmo.tools.tla import sany, tlc
from sysmo.tools.tla.cfg import make_compatible

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


# The PGo ground-truth specs (pgo/<t>/<t>.tla) pass SANY: their syntax stage scores 1.0 (S_full, SANY on the
# whole module) in tests/test_pgo_gold_controls.py.


def _tlc_generating_actions(raw: str) -> tuple[set[str], set[str]]:
    """TLC's own coverage count, read from its output: the actions listed, those generating states."""
    listed, generating = set(), set()
    for block in raw.split("@!@!@STARTMSG 2772:0 @!@!@\n")[1:]:
        line = block.split("\n", 1)[0]
        name, counts = line[1:].split(" ", 1)[0], line.rsplit(": ", 1)[1]
        listed.add(name)
        if int(counts.split(":")[1]) > 0:
            generating.add(name)
    return listed, generating


def _plain_tlc(directory: Path, cfg: str, *args: str) -> str:
    """TLC run by hand (no sysmo code between it and its output) on 1_rwmutex with ``cfg``."""
    (directory / "run.cfg").write_text(cfg)
    command = ["java", "-XX:+UseParallelGC", "-cp", str(tla2tools_jar()), "tlc2.TLC", "-tool",
               "-coverage", "1", "-config", "run.cfg", *args, "1_rwmutex"]
    return subprocess.run(command, cwd=directory, capture_output=True, text=True, timeout=120).stdout


@pytest.fixture
def rwmutex(shared_benchmarks: Path, tmp_path: Path) -> Path:
    root = shared_benchmarks / SYSMOBENCH / "bug_repro_specs/rwmutex"
    (tmp_path / "1_rwmutex.tla").write_text((root / "1_rwmutex.tla").read_text())
    return tmp_path


@pytest.mark.slow
def test_rwmutex_coverage_equals_tlc_own_count(rwmutex: Path, shared_benchmarks: Path) -> None:
    cfg = (shared_benchmarks / SYSMOBENCH / "bug_repro_specs/rwmutex/1_rwmutex.cfg").read_text()
    # model checking under the spec's own cfg stops at the bug: TLC lists 18 actions, 16 generated states
    listed, generating = _tlc_generating_actions(_plain_tlc(rwmutex, make_compatible(cfg).text))
    assert (len(listed), len(generating)) == (18, 16)
    result = tlc.model_check((rwmutex / "1_rwmutex.tla").read_text(), cfg, coverage=True, timeout_s=120)
    report = tlc.report_of(result)
    assert {c.name for c in report.coverage} == listed and set(report.covered_actions) == generating


@pytest.mark.slow
def test_rwmutex_runtime_stage_counts_what_tlc_counts(rwmutex: Path, shared_benchmarks: Path) -> None:
    task = next(t for t in sysmobench.load(shared_benchmarks / SYSMOBENCH) if t.id.endswith("/rwmutex"))
    (buggy,) = task.references.buggy_variants
    config = tla_runtime.model_config(buggy.artifact, task)
    score = tla_runtime.score(buggy.artifact, config, runs=2, seed=5)
    listed: set[str] = set()
    generating: set[str] = set()
    for seed in tla_runtime.seeds(5, 2):  # the same simulations again, run and counted by hand
        raw = _plain_tlc(rwmutex, tla_runtime.without_checks(config.config).render(), "-deadlock",
                         "-simulate", "num=50", "-depth", "50", "-seed", str(seed))
        one_listed, one_generating = _tlc_generating_actions(raw)
        listed |= one_listed
        generating |= one_generating
    assert len(listed) == 18 and score.error_actions == []
    assert set(score.actions) == listed and set(score.covered) == generating
    assert score.value == len(generating) / 18 > 0.8

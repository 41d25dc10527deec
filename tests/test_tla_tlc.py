"""TLC runs end in ok / failed / inconclusive / error (never a timeout as ok), with traces and coverage parsed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sysmo.contracts.artifact import Artifact
from sysmo.tools.tla import tlc

COUNTER = """---- MODULE Counter ----
EXTENDS Naturals
VARIABLES x, y
Init == x = 0 /\\ y = 0
Inc == x < 5 /\\ x' = x + 1 /\\ y' = y
Dec == y < 2 /\\ y' = y + 1 /\\ x' = x
Never == x > 100 /\\ x' = 0 /\\ y' = y
Next == Inc \\/ Dec \\/ Never
Small == x < 4
TypeOK == x \\in 0..5 /\\ y \\in 0..2
Spec == Init /\\ [][Next]_<<x, y>> /\\ WF_<<x, y>>(Inc)
ReachesFive == <>(x = 5)
ReachesNine == <>(x = 9)
====
"""
CFG = "INIT Init\nNEXT Next\n"


def test_invariant_violation_gives_the_name_and_the_trace_as_states() -> None:
    result = tlc.model_check(COUNTER, CFG + "INVARIANT TypeOK Small\n", check_deadlock=False)
    assert result.outcome == "failed"
    report = tlc.report_of(result)
    assert [(v.kind, v.name) for v in report.violations] == [("invariant", "Small")]
    trace = report.trace
    assert [s.number for s in trace] == [1, 2, 3, 4, 5]  # BFS: the shortest counterexample
    assert trace[0].action == "Initial predicate" and trace[0].variables == {"x": "0", "y": "0"}
    assert trace[-1].action == "Inc" and trace[-1].variables["x"] == "4"
    assert trace[-1].location is not None and trace[-1].location.line == 5
    error = result.errors[0]
    assert (error.code, error.line) == ("invariant", 9)  # points at the definition of Small
    assert any(d.code == "trace" and "x = 4" in d.message for d in result.diagnostics)
    assert result.tool_version.startswith("TLC 2.15")


def test_clean_complete_search_is_ok_with_statistics() -> None:
    result = tlc.model_check(COUNTER, CFG + "INVARIANT TypeOK\n", check_deadlock=False, coverage=True)
    assert result.outcome == "ok", result.summary()
    report = tlc.report_of(result)
    assert report.success and report.distinct_states == 18
    assert set(report.covered_actions) == {"Inc", "Dec"}  # Never is never enabled


def test_deadlock_is_a_failure_unless_switched_off() -> None:
    checked = tlc.model_check(COUNTER.replace("\\/ Never", ""), CFG)
    assert checked.outcome == "failed"
    assert tlc.report_of(checked).violations[0].kind == "deadlock"
    assert tlc.model_check(COUNTER.replace("\\/ Never", ""), CFG + "CHECK_DEADLOCK FALSE\n").outcome == "ok"


def test_temporal_property_violation_is_named_when_checked_alone() -> None:
    results = tlc.check_invariants(COUNTER, "SPECIFICATION Spec\nINVARIANT TypeOK\nPROPERTY ReachesFive ReachesNine\n")
    assert {name: r.outcome.value for name, r in results.items()} == {
        "TypeOK": "ok", "ReachesFive": "ok", "ReachesNine": "failed"}
    failed = tlc.report_of(results["ReachesNine"])
    assert [(v.kind, v.name) for v in failed.violations] == [("property", "ReachesNine")]
    loop = failed.trace[-1]  # the counterexample is a lasso: x stops at 5, so the last step stutters
    assert loop.action == "Stuttering" or loop.back_to_state is not None
    assert results["ReachesNine"].details["cfg"].count("PROPERTY ReachesNine") == 1
    assert "INVARIANT" not in results["ReachesNine"].details["cfg"]


def test_false_assumption_and_evaluation_error_are_failures_on_their_lines() -> None:
    assume = "---- MODULE Assume ----\nEXTENDS Naturals\nCONSTANT N\nASSUME N > 5\nVARIABLE x\nInit == x = 0\n" \
             "Next == x' = x\n====\n"
    result = tlc.model_check(assume, "CONSTANT N = 3\n" + CFG, check_deadlock=False)
    assert result.outcome == "failed" and (result.errors[0].code, result.errors[0].line) == ("assumption", 4)

    head_of_empty = "---- MODULE Eval ----\nEXTENDS Naturals, Sequences\nVARIABLE s\nInit == s = <<>>\n" \
                    "Next == s' = Append(s, Head(s))\n====\n"
    result = tlc.model_check(head_of_empty, CFG, check_deadlock=False)
    assert result.outcome == "failed"
    assert result.errors[0].code == "evaluation" and result.errors[0].line == 5
    assert "Head to the empty sequence" in result.errors[0].message


def test_configuration_and_parse_errors_are_errors_not_failures() -> None:
    wrong_next = tlc.model_check(COUNTER, "INIT Init\nNEXT Nxt\n")
    assert wrong_next.outcome == "error" and wrong_next.errors[0].code == "config"
    assert "Nxt" in wrong_next.errors[0].message

    unparsable = COUNTER.replace("Dec == y < 2", "Dec == y < 2)")
    result = tlc.model_check(unparsable, CFG)
    assert result.outcome == "error"
    assert any(d.line == 6 and d.code == "parse" for d in result.errors), result.summary()


def test_state_bound_makes_a_clean_run_inconclusive() -> None:
    bounded = tlc.model_check(COUNTER, CFG + "INVARIANT TypeOK\n", check_deadlock=False, max_states=10)
    assert bounded.outcome == "inconclusive"
    assert "state bound" in bounded.details["reason"]
    assert tlc.report_of(bounded).distinct_states == 10
    # a bound the state space stays under changes nothing
    roomy = tlc.model_check(COUNTER, CFG + "INVARIANT TypeOK\n", check_deadlock=False, max_states=1000)
    assert roomy.outcome == "ok"


def test_depth_bound_is_inconclusive_but_a_violation_within_it_still_fails() -> None:
    shallow = tlc.model_check(COUNTER, CFG + "INVARIANT TypeOK\n", check_deadlock=False, max_depth=3)
    assert shallow.outcome == "inconclusive" and "depth bound" in shallow.details["reason"]
    found = tlc.model_check(COUNTER, CFG + "INVARIANT Small\n", check_deadlock=False, max_depth=6)
    assert found.outcome == "failed"


def test_timeout_is_inconclusive_never_ok() -> None:
    endless = "---- MODULE Endless ----\nEXTENDS Naturals\nVARIABLE x, y\nInit == x = 0 /\\ y = 0\n" \
              "Next == x' = x + 1 /\\ y' \\in 0..3\n====\n"
    result = tlc.model_check(endless, CFG, timeout_s=3)  # any limit: the state space has no end
    assert result.outcome == "inconclusive"
    assert result.details["timed_out"] is True
    assert result.diagnostics[0].code == "inconclusive"


def test_simulation_reports_coverage_per_action() -> None:
    result = tlc.simulate(COUNTER, CFG + "INVARIANT TypeOK\n", num=20, depth=15, seed=1, check_deadlock=False)
    assert result.outcome == "ok", result.summary()
    report = tlc.report_of(result)
    assert report.mode == "simulate"
    coverage = {c.name: c for c in report.coverage}
    assert coverage["Inc"].covered and coverage["Dec"].covered and not coverage["Never"].covered


def test_simulation_finds_a_violation_or_calls_a_clean_bug_hunt_inconclusive() -> None:
    found = tlc.simulate(COUNTER, CFG + "INVARIANT Small\n", num=50, depth=30, seed=3, check_deadlock=False)
    assert found.outcome == "failed" and tlc.report_of(found).violations[0].name == "Small"
    clean = tlc.simulate(COUNTER, CFG + "INVARIANT TypeOK\n", num=10, depth=10, seed=3, check_deadlock=False,
                         find_violation=True)
    assert clean.outcome == "inconclusive"


def test_unicode_spec_and_its_own_cfg_from_an_artifact() -> None:
    artifact = Artifact(language="tla", files={
        "Uni.tla": "---- MODULE Uni ----\nEXTENDS Naturals\nVARIABLE x\nInit ≜ x = 0\n"
                   "Next ≜ x < 3 ∧ x′ = x + 1\nSafe ≜ x ≠ 3\n====\n",
        "Uni.cfg": "INIT Init\nNEXT Next\nINVARIANT Safe\nCHECK_DEADLOCK FALSE\n",
    })
    result = tlc.model_check(artifact)
    assert result.outcome == "failed"
    assert (result.errors[0].line, result.errors[0].column) == (6, 1)
    assert tlc.report_of(result).violations[0].name == "Safe"


def test_tlc_writes_only_inside_its_own_work_dir(tmp_path: Path) -> None:
    # -metadir and -dump are relative to the sandbox work dir, which is deleted after the run
    before = set(os.listdir(tmp_path))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = tlc.model_check(COUNTER, CFG + "INVARIANT TypeOK\n", check_deadlock=False, dump_states=True)
    finally:
        os.chdir(cwd)
    assert result.outcome == "ok"
    assert "x = 5" in result.details["states_dump"]
    assert set(os.listdir(tmp_path)) == before


def test_a_spec_cannot_reach_io_modules() -> None:
    # TLC 2.15 ships no IOUtils (file/exec access in newer TLCs) and the library path has none either
    io = "---- MODULE Io ----\nEXTENDS IOUtils\nVARIABLE x\nInit == x = 0\nNext == x' = x\n====\n"
    result = tlc.model_check(io, CFG)
    assert result.outcome == "error"
    assert any("IOUtils" in d.message for d in result.errors)


def test_self_check_is_green() -> None:
    status = tlc.self_check()
    assert status.ok, status.message


@pytest.mark.parametrize("workers", [2])
def test_several_workers_find_the_same_violation(workers: int) -> None:
    result = tlc.model_check(COUNTER, CFG + "INVARIANT Small\n", check_deadlock=False, workers=workers)
    assert result.outcome == "failed" and tlc.report_of(result).violations[0].name == "Small"


def test_a_lasso_counterexample_records_where_it_loops_back() -> None:
    cycle = "---- MODULE Lasso ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\nNext == x' = (x + 1) % 3\n" \
            "Spec == Init /\\ [][Next]_x /\\ WF_x(Next)\nLive == <>(x = 5)\n====\n"
    result = tlc.model_check(cycle, "SPECIFICATION Spec\nPROPERTY Live\n")
    assert result.outcome == "failed"
    trace = tlc.report_of(result).trace
    assert [s.variables.get("x") for s in trace[:3]] == ["0", "1", "2"]
    assert (trace[-1].number, trace[-1].action, trace[-1].back_to_state) == (4, "Next", 1)


# Safe fails at depth 3 (x = 3); each variant ends TLC's check before it gets there
EXITING = """---- MODULE Exiting ----
EXTENDS Naturals, TLC
VARIABLE x
Init == x = 0 {init}
Next == x < 5 /\\ x' = x + 1 {next}
Safe == x < 3
====
"""
EXIT_VARIANTS = {
    "init": {"init": '/\\ TLCSet("exit", TRUE)', "next": ""},
    "next": {"init": "", "next": '/\\ (x = 1 => TLCSet("exit", TRUE))'},
    "spaced": {"init": '/\\ TLCSet( "exit" , x = 0) \\* TLCSet("exit") ends the run', "next": ""},
}


# check_invariants makes the very TLC run model_check made: served by the run cache (and for the in-loop check below)
@pytest.mark.usefixtures("tla_run_cache")
@pytest.mark.parametrize("where", sorted(EXIT_VARIANTS))
def test_a_spec_that_ends_the_check_early_is_never_ok(where: str) -> None:
    spec = EXITING.format(**EXIT_VARIANTS[where])
    result = tlc.model_check(spec, CFG + "INVARIANT Safe\n", check_deadlock=False)
    assert result.outcome == "error"  # TLC itself says "No error has been found"
    assert "No error has been found" in result.raw_output
    assert result.details["early_exit"] and "ended the check early" in result.details["reason"]
    (told,) = [d for d in result.diagnostics if d.code == "early-exit"]
    assert told.severity == "error" and told.line in (4, 5) and 'TLCSet("exit"' in told.message
    verdicts = tlc.check_invariants(spec, CFG + "INVARIANT Safe\n")
    assert verdicts["Safe"].outcome == "error"


def test_a_spec_that_calls_exit_is_not_ok_even_where_tlc_explored_everything() -> None:
    spec = EXITING.format(init="", next='/\\ (x = 99 => TLCSet("exit", TRUE))')
    result = tlc.model_check(spec, CFG, check_deadlock=False)
    assert tlc.report_of(result).queue_left == 0 and result.outcome == "error"
    assert "can end the check early" in result.details["reason"]
    walk = tlc.simulate(spec, CFG, num=5, depth=10, seed=3, check_deadlock=False)
    assert walk.outcome != "ok"


def test_heap_exhaustion_is_inconclusive_and_not_blamed_on_the_spec() -> None:
    spec = """---- MODULE Heap ----
EXTENDS Naturals
VARIABLE x
Init == x = [i \\in 1..3000000 |-> i]
Next == UNCHANGED x
Safe == TRUE
====
"""
    result = tlc.model_check(spec, CFG + "INVARIANT Safe\n", heap_mb=16, check_deadlock=False, timeout_s=60)
    assert result.outcome == "inconclusive"
    assert result.details["reason"].startswith("TLC ran out of memory (Java heap space)")
    assert [d.code for d in result.diagnostics if d.severity != "info"] == ["resources"]
    assert all(d.severity != "error" for d in result.diagnostics)
    assert "not an error in the spec" in result.diagnostics[0].message


def test_the_file_size_limit_is_inconclusive_not_a_failure() -> None:
    from sysmo.sandbox import Limits

    spec = """---- MODULE Wide ----
EXTENDS Naturals, Sequences
VARIABLE s
Init == s = <<>>
Next == Len(s) < 40 /\\ \\E v \\in 1..6 : s' = Append(s, v)
====
"""
    result = tlc.model_check(spec, CFG, check_deadlock=False,
                             limits=Limits(timeout_s=60, file_size_mb=1, memory_mb=2048))
    assert result.outcome == "inconclusive", result.summary(3)
    reason = result.details["reason"]
    assert "File too large" in reason and "not an error in the spec" in reason


def test_the_in_loop_check_tells_the_model_that_its_spec_ends_the_check_early() -> None:
    from sysmo.tools.checkers import check_tla

    spec = EXITING.format(**EXIT_VARIANTS["next"])
    files = {"Exiting.tla": spec, "Exiting.cfg": CFG + "INVARIANT Safe\n"}
    result = check_tla(Artifact(language="tla", files=files))
    assert result.outcome != "ok"
    told = [d for d in result.diagnostics if d.code == "early-exit"]
    assert told and 'remove TLCSet("exit", ...)' in told[0].message and told[0].line == 5

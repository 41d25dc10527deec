"""``AgentSpec.in_loop_check``: the tool check, then the agent's own loop checks while everything passed; each
check that runs is recorded; a failing loop check is the round's result, a passing one adds its summary."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sysmo.agents.registry import LoopCheck, get_agent
from sysmo.contracts.check import CheckResult, Outcome

OK = CheckResult(tool="tlc", outcome=Outcome.OK, details={"reason": "simulated"})
FAILED = CheckResult(tool="sany", outcome=Outcome.FAILED)


def _spec(*results: CheckResult):
    ran: list[str] = []

    def further(name: str, result: CheckResult):
        def run(artifact: Any, task: Any) -> CheckResult:
            ran.append(name)
            return result
        return LoopCheck(name, f"{name} check", run)

    checks = tuple(further(f"extra{i}", r) for i, r in enumerate(results))
    return replace(get_agent("base_modeling"), loop_checks=checks), ran


def _recording(log: list[str]):
    def record(checker):
        def check(artifact: Any, task: Any) -> CheckResult:
            result = checker(artifact, task)
            log.append(result.tool)
            return result
        return check
    return record


def test_a_failing_tool_check_runs_no_loop_check() -> None:
    spec, ran = _spec(CheckResult(tool="tlc-trace", outcome=Outcome.OK))
    assert spec.in_loop_check(lambda a, t: FAILED)(None, None) == FAILED and ran == []


def test_loop_checks_run_in_order_and_the_first_failure_is_the_result() -> None:
    failing = CheckResult(tool="tlc-trace", outcome=Outcome.FAILED)
    spec, ran = _spec(CheckResult(tool="a", outcome=Outcome.OK, details={"extra0": "1/1 accepted"}), failing,
                      CheckResult(tool="never", outcome=Outcome.OK))
    recorded: list[str] = []
    assert spec.in_loop_check(lambda a, t: OK, _recording(recorded))(None, None) == failing
    assert ran == ["extra0", "extra1"] and recorded == ["tlc", "a", "tlc-trace"]


def test_passing_loop_checks_keep_the_tool_result_with_their_summaries() -> None:
    spec, _ = _spec(CheckResult(tool="tlc-trace", outcome=Outcome.OK, details={"extra0": "4/4 traces accepted"}))
    result = spec.in_loop_check(lambda a, t: OK)(None, None)
    assert result.tool == "tlc" and result.ok
    assert result.details == {"reason": "simulated", "extra0": "4/4 traces accepted"}
    assert spec.check_description[1] == "extra0 check"


def test_an_agent_without_loop_checks_runs_the_tool_check_alone() -> None:
    recorded: list[str] = []
    check = get_agent("openhands").in_loop_check(lambda a, t: OK, _recording(recorded))
    assert check(None, None) == OK and recorded == ["tlc"]

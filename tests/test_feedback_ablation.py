"""``--feedback``: the round-2 prompt under each level carries exactly what the level promises, and ``none``
makes one shot. Driven by the fake OpenAI server, checked by the real SANY."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_scripts import fake_llm, replies_for
from agent_tasks import task_of
from fake_openai import FakeOpenAI
from sysmo.agents.control_script import broken_artifact
from sysmo.agents.run import run_attempt
from sysmo.contracts.task import TaskKind
from sysmo.graphs.context import AgentContext
from sysmo.graphs.repair import Feedback, feedback_report
from sysmo.tools.checkers import check_artifact
from sysmo.contracts.check import CheckResult, Outcome


# every level checks the same broken spec: SANY parses it once for the file
pytestmark = pytest.mark.usefixtures("tla_run_cache")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _attempt(feedback: str, server: FakeOpenAI, folder: Path):
    task = task_of(TaskKind.TLA, folder)
    server.push(*replies_for("base_modeling", task, [broken_artifact(task), task.references.model]))
    ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent="base_modeling",
                       attempt_id=f"fb-{feedback}", max_rounds=3, feedback=feedback)
    return run_attempt("base_modeling", ctx, model_name="openai/fake-model")


def test_bare_feedback_says_only_that_the_check_failed(server: FakeOpenAI, tmp_path: Path) -> None:
    attempt = _attempt("bare", server, tmp_path)
    assert attempt.feedback == "bare" and len(attempt.rounds) == 2
    diagnostic = attempt.rounds[0].check.diagnostics[0].message
    prompt = server.last_user_message()
    assert prompt.startswith("Syntax error: Syntax check failed.")
    assert diagnostic not in prompt and ">>" not in prompt and "line" not in prompt.lower()


def test_diagnostics_feedback_quotes_the_tool_and_the_lines(server: FakeOpenAI, tmp_path: Path) -> None:
    attempt = _attempt("diagnostics", server, tmp_path)
    assert attempt.feedback == "diagnostics" and attempt.rounds[-1].passed
    diagnostic = attempt.rounds[0].check.diagnostics[0].message
    prompt = server.last_user_message()
    assert diagnostic in prompt and ">>" in prompt


def test_none_feedback_is_one_shot(server: FakeOpenAI, tmp_path: Path) -> None:
    attempt = _attempt("none", server, tmp_path)
    assert attempt.feedback == "none" and attempt.max_rounds == 0
    assert len(attempt.rounds) == 1 and server.calls == 1


TLC_OUTPUT = """Error: Invariant TypeOK is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
x = 0

State 2: <Next line 7, col 9 to line 7, col 18 of module Counter>
x = 4
"""


def test_full_feedback_adds_tlc_error_trace_and_trace_diffs() -> None:
    check = CheckResult(tool="tlc", outcome=Outcome.FAILED, raw_output=TLC_OUTPUT,
                        details={"trace_validation": "event 3: logged x = 2, spec x = 4"})
    diagnostics = feedback_report(None, check, Feedback.DIAGNOSTICS)
    full = feedback_report(None, check, Feedback.FULL)
    assert full.startswith(diagnostics)
    assert "Invariant TypeOK is violated" in full and "State 2:" in full
    assert "logged x = 2, spec x = 4" in full and "logged x" not in diagnostics
    assert feedback_report(None, check, Feedback.BARE) == "Runtime error: Runtime check failed."


def test_report_splits_agents_by_feedback_and_pairs_the_levels() -> None:
    import pandas as pd
    from sysmo.evals.paired import paired_rows
    from sysmo.evals.tables import split_by_feedback

    rows = [{"kind": "tla", "agent": "base_modeling", "model": "m", "task_id": f"t{i}", "sample_index": 0,
             "feedback": level, "passed": int(level == "diagnostics" or i % 2)}
            for i in range(6) for level in ("bare", "diagnostics")]
    frame = split_by_feedback(pd.DataFrame(rows))
    assert set(frame["agent"]) == {"base_modeling [feedback=bare]", "base_modeling [feedback=diagnostics]"}
    # the paired analysis reads the level from the feedback column, not from the agent's label
    (pair,) = paired_rows(frame, headline={})
    assert (pair.factor, pair.baseline, pair.level, pair.n_pairs, pair.level_only) == \
        ("feedback", "bare", "diagnostics", 6, 3)
    single = pd.DataFrame([r for r in rows if r["feedback"] == "bare"])
    assert set(split_by_feedback(single)["agent"]) == {"base_modeling"}


FRAMED = """@!@!@STARTMSG 2262:0 @!@!@
TLC2 Version 2.15
@!@!@ENDMSG 2262 @!@!@
Parsing file /box/Counter.tla
@!@!@STARTMSG 2110:1 @!@!@
Invariant TypeOK is violated.
@!@!@ENDMSG 2110 @!@!@
@!@!@STARTMSG 2121:1 @!@!@
The behavior up to this point is:
@!@!@ENDMSG 2121 @!@!@
@!@!@STARTMSG 2217:4 @!@!@
1: <Initial predicate>
/\\ x = 0
@!@!@ENDMSG 2217 @!@!@
@!@!@STARTMSG 2201:0 @!@!@
The coverage statistics at 2026-11-23 23:25:24
@!@!@ENDMSG 2201 @!@!@
@!@!@STARTMSG 2772:0 @!@!@
<Next line 7, col 1 to line 7, col 4 of module Counter>: 3:11
@!@!@ENDMSG 2772 @!@!@
"""


def test_full_feedback_shows_tlcs_messages_without_framing_progress_or_coverage() -> None:
    from sysmo.tools.tla.tlc_output import printed_output

    shown = printed_output(FRAMED)
    assert shown.splitlines() == ["Parsing file /box/Counter.tla", "Invariant TypeOK is violated.",
                                  "The behavior up to this point is:", "1: <Initial predicate>", "/\\ x = 0"]
    full = feedback_report(None, CheckResult(tool="tlc", outcome=Outcome.FAILED, raw_output=FRAMED), Feedback.FULL)
    assert full.endswith("Full tlc output (end):\n" + shown)
    assert printed_output(TLC_OUTPUT) == TLC_OUTPUT  # plain output is shown as it is


def _without_call_ids(messages: list[dict]) -> list[dict]:
    """The messages without the tool-call ids the fake server numbers by request."""
    out = []
    for message in messages:
        message = {k: v for k, v in message.items() if k != "tool_call_id"}
        if message.get("tool_calls"):
            message["tool_calls"] = [{k: v for k, v in c.items() if k != "id"} for c in message["tool_calls"]]
        out.append(message)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["base_modeling", "openhands"])
def test_the_feedback_level_changes_only_what_the_repair_round_is_told(
    agent: str, server: FakeOpenAI, tmp_path: Path
) -> None:
    """The same replies (a spec SANY rejects, twice) under each level: the first request is the same for every level
    (``none`` sends nothing else); the repair request keeps the whole conversation and differs only in the check's
    report, which is exactly ``feedback_report`` at that level."""
    task = task_of(TaskKind.TLA, tmp_path)
    requests: dict[str, list[dict]] = {}
    reports: dict[str, str] = {}
    for level in ("none", "bare", "diagnostics", "full"):
        server.push(*replies_for(agent, task, [broken_artifact(task)] * (1 if level == "none" else 2)))
        start = len(server.requests)
        ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent=agent,
                           attempt_id=f"{agent}-{level}", max_rounds=1, feedback=level)
        attempt = run_attempt(agent, ctx, model_name="openai/fake-model")
        requests[level] = server.requests[start:]
        first = attempt.rounds[0]
        reports[level] = feedback_report(first.artifact, first.check, level)

    assert len(requests["none"]) == 1 and all(len(requests[lv]) == 2 for lv in ("bare", "diagnostics", "full"))
    assert requests["bare"][0]["messages"] == requests["diagnostics"][0]["messages"] == requests["full"][0]["messages"]
    # `none` is one shot: the same first request, but for a budget of one check (openhands says so)
    budget = re.compile(r"\d+ tool-calling steps and \d+ checks")
    assert [budget.sub("", m["content"]) for m in requests["none"][0]["messages"]] == \
        [budget.sub("", m["content"]) for m in requests["bare"][0]["messages"]]
    repairs = {lv: _without_call_ids(requests[lv][1]["messages"]) for lv in ("bare", "diagnostics", "full")}
    assert repairs["bare"][:-1] == repairs["diagnostics"][:-1] == repairs["full"][:-1]
    told = {lv: messages[-1]["content"] for lv, messages in repairs.items()}
    assert all(told[lv].startswith(reports[lv]) for lv in told)
    assert len({told[lv][len(reports[lv]):] for lv in told}) == 1  # the same request around the report
    assert len({reports[lv] for lv in told}) == 3  # bare, diagnostics, full: three different reports
    assert server.pending == 0
    assert reports["bare"] == "Syntax error: Syntax check failed."
    assert reports["full"].startswith(reports["diagnostics"]) and "Full sany output (end):" in reports["full"]

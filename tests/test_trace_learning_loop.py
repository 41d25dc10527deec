"""trace_learning repairs with trace validation in its loop: a spec that parses and runs but does not conform
to the task's traces fails the round, and the repair request carries the first failing trace line, the logged
state against the spec's state and the mapping used. base_modeling, given the same scripted replies, accepts the
non-conforming spec (its check never replays the traces), so the fix is never asked for. Driven by the fake
OpenAI server; SANY, TLC and the trace replay are real (one trace of the starter spinlock, seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_scripts import fake_llm, replies_for
from agent_tasks import lock_counter_task, tla_task
from fake_openai import FakeOpenAI
from sysmo.agents.registry import get_agent
from sysmo.agents.run import run_attempt
from sysmo.agents.trace_check import trace_validation_check
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task
from sysmo.contracts.events import ToolCallEvent
from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.graphs.context import AgentContext
from sysmo.tools.checkers import check_artifact
from sysmo.contracts.check import Outcome

# the same specs and trace replays recur across the attempts: each distinct SANY/TLC run is made once
pytestmark = [pytest.mark.slow,  # real SANY + TLC + trace replays, a few seconds per attempt
              pytest.mark.usefixtures("tla_run_cache")]

STARTER_TLA = Path(__file__).resolve().parents[1] / "benchmarks" / "starter" / "tla"
NO_SPIN = STARTER_TLA / "spinlock" / "buggy" / "no_spin" / "Spinlock.tla"
TRACE = "seed-3.ndjson"  # its first Spin is at line 5: a short prefix for TLC


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    """The starter spinlock with one of its traces (the replay stays small)."""
    found = tla_task(tmp_path_factory.mktemp("tla")).model_copy(deep=True)
    if found.id != "starter/tla/spinlock":
        pytest.skip("the starter TLA+ tasks are not installed")
    for traces in (found.inputs.traces, found.references.traces):
        if traces is not None:
            traces.files = [f for f in traces.files if Path(f).name == TRACE]
    return found


@pytest.fixture(scope="module")
def no_spin(task: Task) -> Artifact:
    """The reference without its Spin action: SANY and TLC accept it, the traces' Spin steps do not."""
    return Artifact(language=Language.TLA, files={**task.references.model.files, "Spinlock.tla": NO_SPIN.read_text()})


def _attempt(agent: str, task: Task, models: list[Artifact], feedback: str = "diagnostics") -> tuple[Attempt, FakeOpenAI]:
    with FakeOpenAI() as server:
        server.push(*replies_for(agent, task, models))
        ctx = AgentContext(task=task, llm=fake_llm(server.base_url), checker=check_artifact, agent=agent,
                           attempt_id=f"{agent}-{feedback}", max_rounds=3, feedback=feedback)
        attempt = run_attempt(agent, ctx, model_name="openai/fake-model")
    return attempt, server


@pytest.fixture(scope="module")
def learned(task: Task, no_spin: Artifact) -> tuple[Attempt, FakeOpenAI]:
    return _attempt("trace_learning", task, [no_spin, task.references.model])


def test_trace_learning_repairs_from_its_in_loop_trace_feedback(learned: tuple[Attempt, FakeOpenAI]) -> None:
    attempt, server = learned
    assert attempt.status == AttemptStatus.PASSED, attempt.error
    assert [r.index for r in attempt.rounds] == [0, 1] and server.calls == 2
    first = attempt.rounds[0].check
    assert first.tool == "tlc-trace" and first.outcome == Outcome.FAILED
    assert attempt.rounds[1].check.ok and attempt.rounds[1].check.details["trace_validation"].startswith("1/1")
    # the repair request: the first failing line, the mapping used, the logged state against the spec's
    prompt = server.last_user_message()
    assert f"trace {TRACE} is rejected at line 5 of" in prompt and "event Spin (actor 1)" in prompt
    assert "mapping used: Spin -> no action of the spec (only checked as a step of Next)" in prompt
    assert "state fields: locked -> locked, pc -> pc" in prompt
    assert 'logged state after line 4: locked = TRUE, pc = <<"spin", "idle", "cs">>' in prompt
    assert 'the spec\'s state matching lines 1-4: locked = TRUE, pc = <<"spin", "idle", "cs">>' in prompt
    assert "the logged step changes none of the mapped variables" in prompt
    # the replay is a tool call of its own in the attempt's events, next to SANY/TLC
    tools = [e.tool for e in attempt.events if isinstance(e, ToolCallEvent)]
    assert tools.count("tlc-trace") == 2 and "tlc" in tools


def test_base_modeling_with_the_same_replies_keeps_the_non_conforming_spec(
    task: Task, no_spin: Artifact
) -> None:
    assert check_artifact(no_spin, task).ok  # SANY + the loop's short TLC simulation accept it
    attempt, server = _attempt("base_modeling", task, [no_spin, task.references.model])
    assert attempt.status == AttemptStatus.PASSED and len(attempt.rounds) == 1 and server.calls == 1
    assert server.pending == 1  # the fix was scripted, but nothing ever asked for it
    assert attempt.final_artifact.files["Spinlock.tla"] == no_spin.files["Spinlock.tla"]
    assert not trace_validation_check(attempt.final_artifact, task).ok
    assert not any(isinstance(e, ToolCallEvent) and e.tool == "tlc-trace" for e in attempt.events)


def test_agents_declare_their_in_loop_checks() -> None:
    assert [c.name for c in get_agent("trace_learning").loop_checks] == ["trace_validation"]
    assert get_agent("base_modeling").loop_checks == ()
    assert "trace validation" in get_agent("trace_learning").check_description[-1]


def test_full_feedback_adds_the_trace_validation_diff_and_tlc_output(
    task: Task, no_spin: Artifact, learned: tuple[Attempt, FakeOpenAI]
) -> None:
    attempt, server = _attempt("trace_learning", task, [no_spin, task.references.model], feedback="full")
    assert attempt.status == AttemptStatus.PASSED and attempt.feedback == "full"
    full, diagnostics = server.last_user_message(), learned[1].last_user_message()
    assert full.startswith(diagnostics.split("\n\nFix every problem")[0])
    extra = full[len(diagnostics.split("\n\nFix every problem")[0]):]
    assert "Trace validation (trace_validation):\n0/1 traces accepted (mapping: names)" in extra
    assert f"- {TRACE}: rejected, 4/26 lines matched" in extra and '"event": "Spin"' in extra
    assert "TLC's path to the spec's state matching lines 1-4" in extra and "State 4: TV__Next" in extra
    assert "Full tlc-trace output (end):" in extra and "Model checking completed" in extra
    assert "Trace validation" not in diagnostics and "Full tlc-trace output" not in diagnostics


def test_full_feedback_carries_tlcs_error_trace_end_to_end(tmp_path: Path) -> None:
    """A spec whose invariant TLC's simulation breaks: ``full`` adds TLC's own output, error trace included."""
    task = lock_counter_task(tmp_path)
    reference = task.references.model
    wrong = Artifact(language=Language.TLA, files={**reference.files, "LockCounter.tla": reference.files[
        "LockCounter.tla"].replace("count \\in 0..2", "count \\in 0..1")})
    prompts = {}
    for level in ("diagnostics", "full"):
        attempt, server = _attempt("base_modeling", task, [wrong, reference], feedback=level)
        assert attempt.status == AttemptStatus.PASSED and attempt.rounds[0].check.tool == "tlc"
        prompts[level] = server.last_user_message()
    diagnostics, full = prompts["diagnostics"], prompts["full"]
    assert "Invariant TypeOK is violated" in diagnostics and "info[trace]: error trace (" in diagnostics
    # TLC's simulation picks its own seed, so the two counterexamples may differ: the diagnostics part agrees
    assert full.splitlines()[:2] == diagnostics.splitlines()[:2] and "info[trace]: error trace (" in full
    assert "Full tlc output (end):" in full and "Full tlc output" not in diagnostics
    assert "The behavior up to this point is:" in full.split("Full tlc output (end):")[1]
    assert "Progress(" not in full and "STARTMSG" not in full  # TLC's framing and reports left out


def test_a_wrong_initial_state_is_set_against_the_logged_one(task: Task) -> None:
    reference = task.references.model
    wrong = Artifact(language=Language.TLA, files={**reference.files, "Spinlock.tla": reference.files[
        "Spinlock.tla"].replace("Init == locked = FALSE", "Init == locked = TRUE")})
    verdict = trace_validation_check(wrong, task)
    message = verdict.diagnostics[0].message
    assert verdict.outcome == Outcome.FAILED and f"trace {TRACE} is rejected at line 1 of" in message
    assert "the spec's initial state (one of them): locked = TRUE, pc = " in message
    assert "logged state after line 1 (Init): locked = FALSE" in message


ENTRIES_SPEC = r"""---- MODULE Spinlock ----
EXTENDS Naturals
CONSTANT N
Procs == 1..N
VARIABLES locked, pc, entries
vars == <<locked, pc, entries>>
Init == locked = FALSE /\ pc = [p \in Procs |-> "idle"] /\ entries = 0
Request(p) == pc[p] = "idle" /\ pc' = [pc EXCEPT ![p] = "spin"] /\ UNCHANGED <<locked, entries>>
Acquire(p) == pc[p] = "spin" /\ ~locked /\ entries > 0 /\ locked' = TRUE /\ pc' = [pc EXCEPT ![p] = "cs"]
              /\ entries' = entries + 1
Spin(p) == pc[p] = "spin" /\ locked /\ UNCHANGED vars
Release(p) == pc[p] = "cs" /\ locked' = FALSE /\ pc' = [pc EXCEPT ![p] = "idle"] /\ UNCHANGED entries
Next == \E p \in Procs : Request(p) \/ Acquire(p) \/ Spin(p) \/ Release(p)
Spec == Init /\ [][Next]_vars
====
"""


def test_the_spec_state_shows_the_variables_the_trace_does_not_log(task: Task) -> None:
    """A spec with a counter of its own (never logged) that wrongly guards Acquire: the spec's state says why."""
    wrong = Artifact(language=Language.TLA, files={**task.references.model.files, "Spinlock.tla": ENTRIES_SPEC})
    verdict = trace_validation_check(wrong, task)
    message = verdict.diagnostics[0].message
    assert "rejected at line 4 of" in message and "event Acquire (actor 3)" in message
    assert "mapping used: Acquire -> Acquire(actor)" in message
    assert "the spec's state matching lines 1-3: locked = FALSE, pc = " in message and "entries = 0" in message
    assert "the logged step changes: locked, pc" in message

"""Trace validation: name-based mapping, the proposer hook, TLA+ literals, TLC replays that must reach the last line."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from sysmo.contracts.artifact import Artifact, Language
from sysmo.benchmarks.starter import STARTER_DIR, load_task_folder
from sysmo.errors import TaskError
from sysmo.contracts.check import Outcome
from sysmo.tools.tla import trace_validation as tv

SPINLOCK = STARTER_DIR / "tla" / "spinlock"
TRACE = SPINLOCK / "traces" / "seed-1.ndjson"


def _spinlock() -> Artifact:
    return load_task_folder(SPINLOCK).references.model


def _lines(path: Path = TRACE) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _trace(lines: list[dict], name: str) -> tv.Trace:
    return tv.read_trace("\n".join(json.dumps(line) for line in lines), name=name)


RENAMED_SPEC = """---- MODULE Lock ----
EXTENDS Naturals
CONSTANT NumThreads
VARIABLES lock_held, thread_pc
vars == <<lock_held, thread_pc>>
Init == lock_held = FALSE /\\ thread_pc = [t \\in 1..NumThreads |-> "idle"]
want_lock(t) == thread_pc[t] = "idle" /\\ thread_pc' = [thread_pc EXCEPT ![t] = "spin"] /\\ UNCHANGED lock_held
take_lock(t) == thread_pc[t] = "spin" /\\ ~lock_held
                /\\ lock_held' = TRUE /\\ thread_pc' = [thread_pc EXCEPT ![t] = "cs"]
spin_once(t) == thread_pc[t] = "spin" /\\ lock_held /\\ UNCHANGED vars
drop_lock(t) == thread_pc[t] = "cs" /\\ lock_held' = FALSE /\\ thread_pc' = [thread_pc EXCEPT ![t] = "idle"]
Next == \\E t \\in 1..NumThreads : want_lock(t) \\/ take_lock(t) \\/ spin_once(t) \\/ drop_lock(t)
====
"""


def test_names_map_case_and_underscore_insensitively_with_the_actor_as_the_leftover_parameter() -> None:
    spec = tv.SpecSignature(module="M", variables=["lock_state", "pc"], constants=["N"],
                            operators={"try_acquire": ["self"], "RecvVote": ["rm", "vote"], "Init": []})
    lines = [{"event": "Init", "config": {"n": 2}, "state": {"LockState": False, "pc": [1]}},
             {"event": "TryAcquire", "actor": 1, "args": {}, "state": {"LockState": True, "pc": [1]}},
             {"event": "recv_vote", "actor": "tm", "args": {"Vote": "yes", "rm": 2}, "state": {"extra": 1}},
             {"event": "Timeout", "actor": 1, "args": {}, "state": {}}]
    request = tv.map_by_names(spec, tv.summarise([_trace(lines, "t")]))
    mapping = request.draft
    assert mapping.for_event("TryAcquire") == tv.ActionMapping(event="TryAcquire", action="try_acquire",
                                                               arguments=["actor"])
    assert mapping.for_event("recv_vote").arguments == ["args.rm", "args.Vote"]
    assert mapping.for_event("Timeout").action is None  # checked against Next, and said so
    assert {(v.field, v.variable) for v in mapping.variables} == {("LockState", "lock_state"), ("pc", "pc")}
    assert mapping.constants == {"n": "N"}
    assert request.unmatched_events == ["Timeout"] and request.unmatched_fields == ["extra"]
    assert any("Timeout" in note for note in mapping.notes) and mapping.source == "names"


def test_signature_reads_variables_constants_and_operator_parameters() -> None:
    sig = tv.signature(Artifact(language=Language.TLA, files={"Lock.tla": RENAMED_SPEC}))
    assert sig.module == "Lock" and sig.variables == ["lock_held", "thread_pc"] and sig.constants == ["NumThreads"]
    assert sig.operators["take_lock"] == ["t"] and sig.operators["Next"] == []


def test_proposer_is_asked_only_when_names_differ_and_its_mapping_is_checked_against_the_spec() -> None:
    trace = tv.read_trace(TRACE)
    assert tv.resolve_mapping(_spinlock(), [trace], proposer=lambda r: pytest.fail("asked")).source == "names"
    seen: list[tv.MappingRequest] = []

    def propose(request: tv.MappingRequest) -> tv.TraceMapping:
        seen.append(request)
        return tv.TraceMapping(
            actions=[tv.ActionMapping(event="Request", action="want_lock", arguments=["actor"]),
                     tv.ActionMapping(event="Acquire", action="take_lock", arguments=["actor"]),
                     tv.ActionMapping(event="Spin", action="spin_once", arguments=["actor", "actor"]),  # wrong arity
                     tv.ActionMapping(event="Release", action="no_such_action", arguments=["actor"])],
            variables=[tv.VariableMapping(field="locked", variable="lock_held"),
                       tv.VariableMapping(field="pc", variable="thread_pc"),
                       tv.VariableMapping(field="pc", variable="ghost")],
            constants={"N": "NumThreads"})

    renamed = Artifact(language=Language.TLA, files={"Lock.tla": RENAMED_SPEC})
    mapping = tv.resolve_mapping(renamed, [trace], proposer=propose)
    assert len(seen) == 1 and set(seen[0].unmatched_events) == {"Request", "Acquire", "Spin", "Release"}
    assert mapping.source == "llm"
    assert mapping.for_event("Spin").action is None and mapping.for_event("Release").action is None
    assert [v.variable for v in mapping.variables] == ["lock_held", "thread_pc"]
    assert len([n for n in mapping.notes if "instead" in n or "dropped" in n]) == 3


def test_json_values_become_tla_literals() -> None:
    assert tv.tla_value([True, -2, 'a"b\\']) == '<<TRUE, -2, "a\\"b\\\\">>'
    assert tv.tla_value({"x": [1, 2], "y": {}}) == "[x |-> <<1, 2>>, y |-> <<>>]"
    assert tv.tla_value({"0": "p", "1": "c"}) == '(0 :> "p" @@ 1 :> "c")'
    assert tv.tla_value([[1, 2], [2]], as_set=True) == "{{1, 2}, {2}}"
    with pytest.raises(TaskError, match="no TLA\\+ literal"):
        tv.tla_value({"pc": None}, where="t line 3")


def test_malformed_trace_line_is_named() -> None:
    with pytest.raises(TaskError, match="line 2"):
        tv.read_trace('{"event": "Init", "state": {}}\n{"state": 1}\n', name="bad")


@pytest.mark.slow
def test_only_traces_consumed_to_their_last_line_pass_and_the_first_failing_line_is_reported() -> None:
    good = _lines()
    last_bad = [dict(line) for line in good]
    last_bad[-1] = {**good[-1], "state": {**good[-1]["state"], "locked": not good[-1]["state"]["locked"]}}
    wrong_event = [dict(line) for line in good]  # right state, wrong action on the last line
    wrong_event[-1] = {**good[-1], "event": "Spin"}
    skipped = good[:3] + good[4:]
    bad_init = [{**good[0], "state": {**good[0]["state"], "locked": True}}] + good[1:]
    traces = [_trace(good, "good"), _trace(last_bad, "last-bad"), _trace(wrong_event, "wrong-event"),
              _trace(skipped, "skipped"), _trace(bad_init, "bad-init"), _trace(good[:5], "prefix")]
    result = tv.validate_traces(_spinlock(), traces, walks_per_trace=0)  # breadth-first replay only
    verdicts = {v.trace: v for v in result.traces}
    assert len(result.runs) == 1  # one configuration, one TLC run
    assert [v.trace for v in result.traces if v.accepted] == ["good", "prefix"]
    assert result.score == pytest.approx(2 / 6) and result.outcome == Outcome.FAILED
    last = len(good) - 1
    assert (verdicts["last-bad"].first_failing_event, verdicts["last-bad"].events_consumed) == (last, last)
    assert verdicts["last-bad"].failing_event == "Release" and verdicts["last-bad"].outcome == Outcome.FAILED
    assert verdicts["wrong-event"].first_failing_event == last
    assert verdicts["skipped"].first_failing_event == 3
    assert verdicts["bad-init"].first_failing_event == 0 and "initial state" in verdicts["bad-init"].reason
    assert verdicts["good"].events_consumed == len(good) and verdicts["good"].first_failing_event is None
    module = tv.checking_module(traces[:1], result.mapping, "Spinlock", None)
    assert "Json" not in module.text and 'TV__Log1 == <<\n  [event |-> "Init"' in module.text


@pytest.mark.slow
def test_renamed_spec_conforms_through_a_proposed_mapping_and_the_mapping_is_recorded() -> None:
    mapping = tv.TraceMapping(
        actions=[tv.ActionMapping(event=e, action=a, arguments=["actor"]) for e, a in
                 [("Request", "want_lock"), ("Acquire", "take_lock"), ("Spin", "spin_once"), ("Release", "drop_lock")]],
        variables=[tv.VariableMapping(field="locked", variable="lock_held"),
                   tv.VariableMapping(field="pc", variable="thread_pc")],
        constants={"N": "NumThreads"}, source="llm")
    renamed = Artifact(language=Language.TLA, files={"Lock.tla": RENAMED_SPEC})
    traces = sorted((SPINLOCK / "traces").glob("*.ndjson"))
    result = tv.validate_traces(renamed, traces, proposer=lambda request: mapping)
    assert result.score == 1.0 and result.mapping.source == "llm"
    assert json.loads(result.model_dump_json())["mapping"]["constants"] == {"N": "NumThreads"}
    # without a proposer nothing matches by name, the constant gets no value, and the replay cannot start
    unmapped = tv.validate_traces(renamed, traces[:1])
    assert len(unmapped.mapping.notes) == 4 + 2 + 1 and unmapped.outcome == Outcome.ERROR
    assert "NumThreads" in unmapped.traces[0].reason and unmapped.score == 0.0


COUNTER = """---- MODULE Counter ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Inc == x' = x + 1
Crash == x' = CHOOSE y \\in {} : TRUE
Next == Inc \\/ Crash
====
"""


def _counter() -> tuple[Artifact, list[dict], list[dict]]:
    """A counter whose Crash step cannot be evaluated; a trace it accepts, and one that reaches Crash."""
    good = [{"event": "Init", "state": {"x": 0}}] + [{"event": "Inc", "state": {"x": i}} for i in (1, 2)]
    crash = good[:2] + [{"event": "Crash", "state": {"x": 5}}]
    return Artifact(language=Language.TLA, files={"Counter.tla": COUNTER}), good, crash


@pytest.mark.slow
def test_an_evaluation_error_in_a_shared_run_is_blamed_on_the_trace_that_caused_it() -> None:
    artifact, good, crash = _counter()
    result = tv.validate_traces(artifact, [_trace(good, "good"), _trace(crash, "crash")], walks_per_trace=0)
    verdicts = {v.trace: v for v in result.traces}
    assert verdicts["good"].accepted
    assert verdicts["crash"].outcome == Outcome.FAILED and verdicts["crash"].first_failing_event == 2
    assert len(result.runs) == 2 and result.runs[0].outcome == Outcome.FAILED  # shared run, then the replay alone


@pytest.mark.slow
def test_a_timeout_is_inconclusive_never_a_pass() -> None:
    result = tv.validate_traces(_spinlock(), [TRACE], timeout_s=0.05)
    assert result.traces[0].outcome == Outcome.INCONCLUSIVE and not result.traces[0].accepted
    assert result.outcome == Outcome.INCONCLUSIVE and result.score == 0.0


@pytest.mark.slow
def test_concurrent_replays_give_the_same_verdicts_and_runs_as_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    artifact, good, crash = _counter()
    wrong = good[:2] + [{"event": "Inc", "state": {"x": 7}}]
    traces = [_trace(good, "good"), _trace(crash, "crash"), _trace(wrong, "wrong"), _trace(good[:2], "prefix")]
    sequential = tv.validate_traces(artifact, traces, batch_size=2, parallel=1, walks_per_trace=0)

    started = threading.Barrier(2, timeout=60)  # the two batches of the first wave must be running at once
    calls: list[int] = []
    real_run = tv._run

    def together(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) <= 2:
            started.wait()
        return real_run(*args, **kwargs)

    monkeypatch.setattr(tv, "_run", together)
    concurrent = tv.validate_traces(artifact, traces, batch_size=2, parallel=2, walks_per_trace=0)
    assert len(calls) == 3  # [good, crash] and [wrong, prefix] at once, then crash alone
    assert [v.model_dump() for v in concurrent.traces] == [v.model_dump() for v in sequential.traces]
    assert [(r.outcome, r.details["traces"]) for r in concurrent.runs] == \
        [(r.outcome, r.details["traces"]) for r in sequential.runs]
    verdicts = {v.trace: (v.accepted, v.outcome) for v in concurrent.traces}
    assert verdicts == {"good": (True, Outcome.OK), "crash": (False, Outcome.FAILED),
                        "wrong": (False, Outcome.FAILED), "prefix": (True, Outcome.OK)}


def test_random_walks_decide_the_same_traces_as_breadth_first_replay_and_accept_them_first() -> None:
    good = _lines()
    last_bad = [dict(line) for line in good]
    last_bad[-1] = {**good[-1], "state": {**good[-1]["state"], "locked": not good[-1]["state"]["locked"]}}
    traces = [_trace(good, "good"), _trace(last_bad, "last-bad"), _trace(good[:5], "prefix")]
    full = tv.resolve_mapping(_spinlock(), traces)
    assert not tv.loosely_mapped(full, traces)  # every event and field named: no walks
    assert [r.details["mode"] for r in tv.validate_traces(_spinlock(), traces).runs] == ["bfs"]
    # the logged `pc` checked against no variable: each line no longer pins the state, walks go first
    loose = full.model_copy(update={"variables": [v for v in full.variables if v.field != "pc"]})
    assert tv.loosely_mapped(loose, traces)
    walked = tv.validate_traces(_spinlock(), traces, mapping=loose)
    breadth_first = tv.validate_traces(_spinlock(), traces, mapping=loose, walks_per_trace=0)
    assert [(v.trace, v.accepted, v.outcome, v.events_consumed) for v in walked.traces] == \
        [(v.trace, v.accepted, v.outcome, v.events_consumed) for v in breadth_first.traces]
    assert [r.details["mode"] for r in walked.runs] == ["simulate", "bfs"]  # walks, then the rest breadth-first
    assert walked.runs[1].details["traces"] == ["last-bad"]
    verdicts = {v.trace: v for v in walked.traces}
    assert verdicts["good"].run == 0 and "random walk" in verdicts["good"].reason
    assert verdicts["last-bad"].run == 1 and verdicts["last-bad"].first_failing_event == len(good) - 1


LOOSE = """---- MODULE Loose ----
EXTENDS Naturals
VARIABLES bits, steps
Init == bits = [i \\in 1..16 |-> FALSE] /\\ steps = 0
Flip(i) == bits' = [bits EXCEPT ![i] = ~@] /\\ steps' = steps + 1
Next == \\E i \\in 1..16 : Flip(i)
====
"""


@pytest.mark.slow
def test_a_trace_the_model_constrains_loosely_is_accepted_by_a_walk_where_breadth_first_runs_out_of_time() -> None:
    # no event or field of the log is named in the model: the replay asks only for 30 steps of Next, and
    # breadth-first search enumerates every one of the 2^16 bit vectors at every length first
    lines = [{"event": "Init", "state": {}}] + [{"event": "Tick", "state": {"n": i}} for i in range(1, 31)]
    artifact = Artifact(language=Language.TLA, files={"Loose.tla": LOOSE})
    trace = _trace(lines, "ticks")
    # 2^16 x 31 states to enumerate: far more than 4 s of breadth-first search (any limit would show it); the
    # walks, about a second, keep the larger limit only as a margin on a loaded machine
    breadth_first = tv.validate_traces(artifact, [trace], walks_per_trace=0, timeout_s=4)
    assert breadth_first.traces[0].outcome == Outcome.INCONCLUSIVE and not breadth_first.traces[0].accepted
    walked = tv.validate_traces(artifact, [trace], timeout_s=8)
    assert walked.traces[0].accepted and walked.score == 1.0 and walked.runs[0].details["mode"] == "simulate"


def test_a_breadth_first_replay_prints_only_lines_further_than_before_and_stops_extending_a_consumed_trace() -> None:
    good = _lines()
    module = tv.checking_module([_trace(good, "good")], tv.resolve_mapping(_spinlock(), [_trace(good, "good")]),
                                "Spinlock", None)
    assert f"TLCGet({tv.REGISTER_BASE} + tv__t) < Len(TV__Logs[tv__t])" in module.text
    assert f"TLCSet({tv.REGISTER_BASE} + tv__t, tv__i')" in module.text
    walks = tv.checking_module([_trace(good, "good")], tv.resolve_mapping(_spinlock(), [_trace(good, "good")]),
                               "Spinlock", None, registers=False)
    assert "TLCGet" not in walks.text and "TLCSet" not in walks.text
    result = tv.validate_traces(_spinlock(), [_trace(good, "good")], walks_per_trace=0)
    printed = result.runs[0].raw_output.count(f'"{tv.REACHED}"')
    assert result.traces[0].accepted and printed == len(good)  # the initial state, then one line per new line


EXITING = """---- MODULE Exiting ----
EXTENDS Naturals, TLC
VARIABLE x
Init == x = 0
Inc == x' = x + 1 /\\ (x = 1 => TLCSet("exit", TRUE))
Next == Inc
====
"""


@pytest.mark.slow
def test_a_model_that_ends_the_replay_early_gets_an_error_not_a_complete_search() -> None:
    lines = [{"event": "Init", "state": {"x": 0}}] + [{"event": "Inc", "state": {"x": i}} for i in (1, 2, 3)]
    artifact = Artifact(language=Language.TLA, files={"Exiting.tla": EXITING})
    result = tv.validate_traces(artifact, [_trace(lines, "counts")])
    verdict = result.traces[0]
    assert not verdict.accepted and verdict.outcome == Outcome.ERROR and result.outcome == Outcome.ERROR
    assert "ended the replay early" in result.runs[-1].details["reason"]

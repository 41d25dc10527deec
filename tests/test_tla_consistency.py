"""Code consistency per code action (SysMoBench's M_c = n_c / n_t), from traces and TLC's verdicts on them."""

from __future__ import annotations

from sysmo.evals.metrics.tla_consistency import per_action
from sysmo.contracts.check import Outcome
from sysmo.tools.tla.trace_validation import Trace, TraceLine, TraceVerdict


def _trace(name: str, *events: str) -> Trace:
    return Trace(name=name, lines=[TraceLine(event="Init")] + [TraceLine(event=e) for e in events])


def _accepted(trace: Trace) -> TraceVerdict:
    n = len(trace.lines)
    return TraceVerdict(trace=trace.name, lines=n, accepted=True, outcome=Outcome.OK, events_consumed=n)


def _rejected_at(trace: Trace, line: int) -> TraceVerdict:
    return TraceVerdict(trace=trace.name, lines=len(trace.lines), accepted=False, outcome=Outcome.FAILED,
                        events_consumed=line, first_failing_event=line, failing_event=trace.lines[line].event)


def test_every_trace_accepted_gives_one() -> None:
    traces = [_trace("a", "Request", "Acquire", "Release"), _trace("b", "Request", "Spin")]
    score = per_action(traces, [_accepted(t) for t in traces])
    assert (score.n_c, score.n_t, score.value, score.trace_share) == (4, 4, 1.0, 1.0)


def test_the_first_unreproduced_line_blames_its_action_and_hides_the_rest_of_the_trace() -> None:
    a = _trace("a", "Request", "Acquire", "Spin", "Release")  # rejected at Spin (line index 3)
    b = _trace("b", "Request", "Acquire", "Release")
    c = _trace("c", "Request", "Timeout")  # the replay could not start: covers nothing
    verdicts = [_rejected_at(a, 3), _accepted(b),
                TraceVerdict(trace="c", lines=3, accepted=False, outcome=Outcome.ERROR, events_consumed=0)]
    score = per_action([a, b, c], verdicts)
    assert score.names(True) == ["Acquire", "Release", "Request"]
    assert score.names(False) == ["Spin", "Timeout"]
    assert (score.n_c, score.n_t) == (3, 5) and score.value == 3 / 5
    assert (score.accepted, score.traces) == (1, 3)
    spin = next(x for x in score.actions if x.event == "Spin")
    assert (spin.occurrences, spin.matched, spin.errors) == (1, 0, 1)


def test_an_action_reproduced_in_one_trace_but_failing_in_another_is_inconsistent() -> None:
    a = _trace("a", "Request", "Acquire")
    b = _trace("b", "Request", "Acquire")
    score = per_action([a, b], [_accepted(a), _rejected_at(b, 2)])
    assert score.names(False) == ["Acquire"] and score.value == 1 / 2


def test_a_timeout_counts_the_lines_reached_but_blames_nothing() -> None:
    a = _trace("a", "Request", "Acquire", "Release")
    timeout = TraceVerdict(trace="a", lines=4, accepted=False, outcome=Outcome.INCONCLUSIVE,
                           events_consumed=2)
    score = per_action([a], [timeout])
    assert score.names(True) == ["Request"] and score.names(False) == ["Acquire", "Release"]
    assert all(x.errors == 0 for x in score.actions)

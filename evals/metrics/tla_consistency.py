"""Code consistency as SysMoBench scores it: per code action, M_c = n_c / n_t.

The paper: "Code Consistency M_c is measured via trace validation: instrumentation in the real system code
collects execution traces, which are fed to TLC to see if the model can reproduce them; n_c is the number of
code actions covered and without consistency errors — using the number of instrumented code actions as the
denominator (rather than model actions) to ensure consistency across different AI models."

So the unit is the code action (an event name of the instrumented system's logs), not the trace:

- n_t: the distinct event names over all traces (the first line's initial-state event left out);
- covered: an event name with at least one occurrence on a line TLC matched, i.e. within the prefix of a
  trace the model reproduced (all of an accepted trace; the lines before the first unmatched line of a
  rejected one; the lines reached before a timeout);
- consistency error: the event of the first line a trace could not be matched at (the model cannot take
  that logged step) — the runtime stage's rule for error actions, applied to code actions;
- n_c: covered and never an error. A trace the replay could not start (an error verdict) covers nothing.

The per-trace view (accepted traces / traces) is kept beside it in the stage detail, with each trace's
first failing line. SysMoBench's public harness has no finished scorer to follow here: its PGo trace
validation evaluator stops after running TLC (``raise Exception("TODO")``) and its NDJSON one reports one
pass/fail per trace; the paper's definition above is the one implemented.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from sysmo.contracts.check import Outcome
from sysmo.tools.tla.trace_validation import INIT_EVENT, Trace, TraceVerdict


class CodeAction(BaseModel):
    """One instrumented code action (a log event name) across the traces."""

    event: str
    occurrences: int = 0  # lines with this event, over all traces
    matched: int = 0  # of those, lines TLC reproduced
    errors: int = 0  # traces whose first unmatched line is this event

    @property
    def consistent(self) -> bool:
        return self.matched > 0 and self.errors == 0


class ConsistencyScore(BaseModel):
    actions: list[CodeAction] = Field(default_factory=list)
    traces: int = 0
    accepted: int = 0

    @property
    def n_t(self) -> int:
        return len(self.actions)

    @property
    def n_c(self) -> int:
        return sum(a.consistent for a in self.actions)

    @property
    def value(self) -> float:
        """M_c = n_c / n_t (0 without any code action)."""
        return self.n_c / self.n_t if self.n_t else 0.0

    @property
    def trace_share(self) -> float:
        return self.accepted / self.traces if self.traces else 0.0

    def names(self, consistent: bool) -> list[str]:
        return [a.event for a in self.actions if a.consistent == consistent]


def _events(trace: Trace, init_event: str | None) -> list[str]:
    """Each line's event, with None for a first line that only sets the initial state."""
    return [None if i == 0 and line.event == (init_event or INIT_EVENT) else line.event  # type: ignore[misc]
            for i, line in enumerate(trace.lines)]


def per_action(traces: Sequence[Trace], verdicts: Sequence[TraceVerdict],
               init_event: str | None = INIT_EVENT) -> ConsistencyScore:
    """M_c over code actions, from the traces replayed and TLC's verdict on each (matched by trace name)."""
    by_name = {v.trace: v for v in verdicts}
    actions: dict[str, CodeAction] = {}
    for trace in traces:
        events = _events(trace, init_event)
        for event in events:
            if event is not None:
                actions.setdefault(event, CodeAction(event=event)).occurrences += 1
        verdict = by_name.get(trace.name)
        if verdict is None or verdict.outcome == Outcome.ERROR:
            continue
        reproduced = len(events) if verdict.accepted else min(verdict.events_consumed, len(events))
        for event in events[:reproduced]:
            if event is not None:
                actions[event].matched += 1
        if not verdict.accepted and verdict.first_failing_event is not None \
                and verdict.first_failing_event < len(events):
            failing = events[verdict.first_failing_event] or verdict.failing_event
            if failing is not None:
                actions.setdefault(failing, CodeAction(event=failing)).errors += 1
    accepted = sum(bool(by_name.get(t.name) and by_name[t.name].accepted) for t in traces)
    return ConsistencyScore(actions=sorted(actions.values(), key=lambda a: a.event), traces=len(traces),
                            accepted=accepted)

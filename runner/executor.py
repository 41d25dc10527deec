"""The ``Executor`` protocol and the state every executor shares (``RunState``).

An executor decides only where and how concurrently attempts run. What a run means is the same for all of
them and lives in ``RunState``: which units may still start (budget caps, a stop request, a provider refusing every call:
``provider_failures``), the money an
attempt spent (counted as soon as it comes back), the store writes of a finished attempt
(``ResultWriter``), the summary and the progress line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sysmo.contracts.attempt import Attempt
from sysmo.runner.budget import Spending, StopControl
from sysmo.runner.config import ExperimentConfig
from sysmo.runner.progress import RunProgress
from sysmo.runner.provider_failures import ProviderFailures
from sysmo.runner.results import ResultWriter
from sysmo.runner.summary import RunSummary
from sysmo.runner.unit_runner import UnitRunner
from sysmo.runner.units import WorkUnit

if TYPE_CHECKING:
    from sysmo.store import Store

# told of every attempt once it is stored and scored: (the run's store, the attempt's id); e.g. an OpenTelemetry export
AttemptObserver = Callable[["Store", str], None]


@dataclass
class RunState:
    config: ExperimentConfig
    runner: UnitRunner
    writer: ResultWriter
    summary: RunSummary
    spending: Spending
    stop: StopControl
    bar: RunProgress
    attempted: set[str] = field(default_factory=set)  # attempts on record (only their score may be missing)
    provider_failures: ProviderFailures = field(default_factory=ProviderFailures)
    observers: list[AttemptObserver] = field(default_factory=list)

    def may_start(self) -> bool:
        """True while neither a budget cap nor a stop request forbids starting another attempt; the first
        time a cap is reached it becomes the summary's reason and a note on the progress output."""
        reason = self.spending.over(self.config.budget)
        if reason and not self.summary.stopped:
            self.summary.stopped = reason
            self.bar.note(reason)
        return not self.stop.requested and not self.summary.stopped

    def came_back(self, unit: WorkUnit, attempt: Attempt) -> bool:
        """An attempt returned by an executor; counts its new money. Returns whether it is new (not on record)."""
        fresh = unit.attempt_id not in self.attempted
        if fresh:
            self.spending.add_attempt(attempt)
        fatal = self.provider_failures.observe(unit.model, attempt)
        if fatal and not self.summary.provider_failure:  # no new attempt starts (``may_start``); the run ends
            self.summary.provider_failure = fatal
            if not self.summary.stopped:
                self.summary.stopped = fatal
            self.bar.note(f"stopping: {fatal}")
        return fresh

    def finished(self, attempt: Attempt) -> None:
        """An attempt stored (and scored): the summary and the progress output."""
        self.summary.count(attempt)
        self.bar.advance(attempt.status, cost=attempt.spend_usd)
        for observer in self.observers:
            observer(self.writer.store, attempt.id)

    def failed(self, error: Exception) -> None:
        self.summary.errors += 1
        self.bar.note(f"error: {error}")

    def finish(self) -> None:
        if self.stop.requested and not self.summary.stopped:
            self.summary.stopped = "interrupted"


# a unit with its task named by id: (task id, then ``WorkUnit``'s other fields in order)
UnitKey = tuple[str, str, str, int, str, Any, str, int | None]


def unit_key(unit: WorkUnit) -> UnitKey:
    """A unit with its task named by id: (task id, then ``WorkUnit``'s other fields in order: agent, model,
    sample, experiment, arm, arm key, seed). Sent to a worker (a Ray actor, a worker process) instead of the unit
    (cloudpickle takes about 1.7 ms for a unit with its pydantic task); the worker makes the same unit, so the
    attempt has the driver's id, arm and seed."""
    return (unit.task.id, unit.agent, unit.model, unit.sample, unit.experiment_id, unit.arm, unit.arm_key,
            unit.seed)


def decode_rows(state: RunState, rows: tuple) -> tuple[Attempt, Any, Any, Any, list[Any]]:
    """What a worker sent for an attempt (``UnitRunner.arun_rows``) as the driver's writer takes it: the attempt
    (for the run's counts), its record, its steps in a recorder of the driver's, its scorecard and the scoring's
    events."""
    from sysmo.contracts.events import EventAdapter
    from sysmo.contracts.scorecard import ScoreCard

    record, calls, card_json, score_events = rows
    attempt = Attempt.model_validate_json(record.attempt_json)  # its events are in the record's rows
    steps = None
    if calls is not None:
        steps = state.runner.checkpoints().recorder()
        steps.calls = calls
    card = ScoreCard.model_validate_json(card_json) if card_json else None
    return attempt, record, steps, card, [EventAdapter.validate_json(e) for e in score_events]


def rescore_stored(unit: WorkUnit, state: RunState) -> None:
    """A unit whose attempt was stored before an interruption: only its score is missing."""
    attempt = state.writer.store.attempt(unit.attempt_id)
    if state.config.score:
        state.writer.score(unit, attempt)
    state.finished(attempt)


class Executor(Protocol):
    """Runs ``pending`` units through ``state``: starts a unit only when ``state.may_start()``, reports each
    returned attempt to ``state.came_back``, stores it with ``state.writer``, then ``state.finished``. On a stop
    request the attempts in flight finish and are stored; an abort (second Ctrl-C) cancels them."""

    def start(self, config: ExperimentConfig, directory: Path) -> None:
        """Called once the models are checked, before the run is prepared: start what takes time (Ray's workers)."""

    def run(self, pending: list[WorkUnit], state: RunState) -> None: ...

    def close(self) -> None:
        """Release what ``start`` made; ``run`` calls it too, and it may be called twice."""

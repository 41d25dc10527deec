"""The ``Executor`` protocol and the state every executor shares (``RunState``).

An executor decides only where and how concurrently attempts run. What a run means is the same for all of
them and lives in ``RunState``: which units may still start (budget caps, a stop request), the money an
attempt spent (counted as soon as it comes back), the store writes of a finished attempt
(``ResultWriter``), the summary and the progress line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from sysmo.contracts.attempt import Attempt
from sysmo.runner.budget import Spending, StopControl
from sysmo.runner.config import ExperimentConfig
from sysmo.runner.progress import RunProgress
from sysmo.runner.results import ResultWriter
from sysmo.runner.summary import RunSummary
from sysmo.runner.unit_runner import UnitRunner
from sysmo.runner.units import WorkUnit


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
        return fresh

    def finished(self, attempt: Attempt) -> None:
        """An attempt stored (and scored): the summary and the progress output."""
        self.summary.count(attempt)
        self.bar.advance(attempt.status, cost=attempt.spend_usd)

    def failed(self, error: Exception) -> None:
        self.summary.errors += 1
        self.bar.note(f"error: {error}")

    def finish(self) -> None:
        if self.stop.requested and not self.summary.stopped:
            self.summary.stopped = "interrupted"


class Executor(Protocol):
    """Runs ``pending`` units through ``state``: starts a unit only when ``state.may_start()``, reports each
    returned attempt to ``state.came_back``, stores it with ``state.writer``, then ``state.finished``. On a stop
    request the attempts in flight finish and are stored; an abort (second Ctrl-C) cancels them."""

    def start(self, config: ExperimentConfig, directory: Path) -> None:
        """Called once the models are checked, before the run is prepared: start what takes time (Ray's workers)."""

    def run(self, pending: list[WorkUnit], state: RunState) -> None: ...

    def close(self) -> None:
        """Release what ``start`` made; ``run`` calls it too, and it may be called twice."""

"""Store writes of a finished attempt, the same for every executor: its steps' checkpoints, artifact files and
record (``UnitRunner.keep``), then its score and the scoring's events. Only the driver process writes
results.sqlite, so a resumed run sees the same state whichever executor ran the attempts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sysmo.contracts.attempt import Attempt
from sysmo.contracts.scorecard import ScoreCard
from sysmo.runner.budget import Spending
from sysmo.runner.summary import RunSummary
from sysmo.runner.unit_runner import UnitRunner
from sysmo.runner.units import WorkUnit, task_meta
from sysmo.store import Store

if TYPE_CHECKING:
    from sysmo.graphs.checkpoint import StepRecorder


class ResultWriter:
    def __init__(self, runner: UnitRunner, store: Store, experiment_id: str, spending: Spending,
                 summary: RunSummary) -> None:
        self.runner, self.store, self.experiment_id = runner, store, experiment_id
        self.spending, self.summary = spending, summary

    def keep(self, unit: WorkUnit, attempt: Attempt, steps: StepRecorder | None) -> None:
        """The attempt's steps, artifacts and record (steps first: an attempt on record has its steps)."""
        self.runner.keep(attempt, steps, self.store, self.experiment_id, task_meta(unit.task))

    def score(self, unit: WorkUnit, attempt: Attempt) -> None:
        """Score here (the local executor: the score cache of the store is used) and store the score."""
        card, events = self.runner.score_with_events(unit, attempt, self.store)
        self.save_score(attempt, card, events)

    def save_score(self, attempt: Attempt, card: ScoreCard, events: list[Any]) -> None:
        """A score made here or on a worker; its helper and judge calls count towards the budget."""
        self.store.save_score(self.experiment_id, attempt.id, card, events)
        scoring_spend = sum(getattr(e, "spend_usd", 0.0) for e in events)
        self.spending.cost += scoring_spend
        self.summary.cost_usd += scoring_spend

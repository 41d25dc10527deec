"""Budget caps and stop handling, shared by every executor.

``Spending`` counts the experiment's money and tokens (earlier invocations included, so a resumed run keeps
its cap) and says when a cap is reached. ``StopControl`` turns the first Ctrl-C into "finish the attempts in
flight, start no more" and the second into an abort, the same for the local and the Ray executor.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sysmo.contracts.attempt import Attempt
from sysmo.runner.config import Budget
from sysmo.store import Store


@dataclass
class Spending:
    """Money (USD) and tokens spent by an experiment so far."""

    cost: float = 0.0
    tokens: int = 0

    @classmethod
    def of_experiment(cls, store: Store, experiment_id: str) -> Spending:
        """What earlier invocations of the experiment spent: its attempts' calls and its scoring's helper and
        judge calls."""
        # each row counts 0 or more: a negative figure stored by an earlier version never lowers the spend
        totals = store.query("SELECT COALESCE(SUM(MAX(COALESCE(spend_usd, cost_usd, 0), 0)), 0) AS cost,"
                             " COALESCE(SUM(MAX(prompt_tokens, 0) + MAX(completion_tokens, 0)), 0) AS tokens"
                             " FROM attempts WHERE experiment_id=?", (experiment_id,))[0]
        scoring = store.query("SELECT COALESCE(SUM(MAX(COALESCE(json_extract(events.json, '$.spend_usd'), 0), 0)),"
                              " 0) AS cost FROM events"
                              " JOIN attempts ON attempts.id = events.attempt_id WHERE experiment_id=?"
                              " AND events.stage='score' AND events.type='llm_call'", (experiment_id,))[0]
        return cls(cost=float(totals["cost"]) + float(scoring["cost"]), tokens=int(totals["tokens"]))

    def add_attempt(self, attempt: Attempt) -> None:
        """An attempt's new money, counted as soon as its calls are made (before it is stored); a figure below
        zero counts nothing, so the spend never decreases."""
        self.cost += attempt.spend_usd if attempt.spend_usd > 0 else 0.0  # never lowered (NaN > 0 is False)
        self.tokens += max(attempt.prompt_tokens, 0) + max(attempt.completion_tokens, 0)

    def over(self, budget: Budget) -> str | None:
        """Why the run must start no more attempts, or None."""
        if budget.max_cost_usd is not None and self.cost >= budget.max_cost_usd:
            return f"budget cap reached: ${self.cost:.2f} >= ${budget.max_cost_usd:.2f}"
        if budget.max_tokens is not None and self.tokens >= budget.max_tokens:
            return f"token cap reached: {self.tokens} >= {budget.max_tokens}"
        return None


STOP_NOTE = "stopping: finishing the attempts in flight (Ctrl-C again to abort; `sysmo run --resume` continues)"


class StopControl:
    """A stop request (Ctrl-C, or an event set by the caller): no new attempt starts, the ones in flight finish
    and are stored. A second Ctrl-C raises ``KeyboardInterrupt`` (the executor cancels what is in flight)."""

    def __init__(self, event: threading.Event | None = None) -> None:
        self.event = event or threading.Event()

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    @contextmanager
    def on_ctrl_c(self, note: Callable[[str], None]) -> Iterator[None]:
        """Install the two-step Ctrl-C handler while the block runs (main thread only; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def on_sigint(signum, frame):  # first Ctrl-C: finish running attempts; second: stop now
            if self.event.is_set():
                raise KeyboardInterrupt
            self.event.set()
            note(STOP_NOTE)

        previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

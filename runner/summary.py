"""``RunSummary``: what one invocation of an experiment did (planned, ran, passed, errors, spend, why it stopped)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sysmo.contracts.attempt import Attempt, AttemptStatus


@dataclass
class RunSummary:
    experiment_id: str
    directory: Path
    planned: int = 0
    skipped_done: int = 0
    ran: int = 0
    passed: int = 0
    errors: int = 0
    not_covered: int = 0  # replay: tasks the published source has no output for (neither passed nor failed)
    unsupported: list[tuple[str, str]] = field(default_factory=list)  # (agent, why it cannot do a task)
    missing_inputs: list[str] = field(default_factory=list)  # (agent, task) pairs run without an input, and why
    stopped: str | None = None  # why the run stopped early (interrupt, budget)
    cost_usd: float = 0.0
    tokens: int = 0
    seconds: float = 0.0

    def count(self, attempt: Attempt) -> None:
        """A finished (stored) attempt of this invocation."""
        self.ran += 1
        self.cost_usd += attempt.spend_usd
        self.tokens += attempt.prompt_tokens + attempt.completion_tokens
        if attempt.status == AttemptStatus.PASSED:
            self.passed += 1
        elif attempt.status == AttemptStatus.ERROR:
            self.errors += 1
        elif attempt.status == AttemptStatus.NOT_COVERED:
            self.not_covered += 1

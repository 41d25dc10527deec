"""``RunSummary``: what one invocation of an experiment did (planned, ran, passed, errors, spend, why it stopped)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sysmo.contracts.attempt import Attempt, AttemptStatus


@dataclass(frozen=True)
class SkippedPair:
    """Work not planned because the agent cannot do it: a task (with every model), or every task with one model
    (a replay of published outputs that the agent's calls cannot take)."""

    agent: str
    reason: str
    task_id: str | None = None  # None: every task (with ``model``)
    model: str | None = None  # None: with every model


def skipped_lines(skipped: list[SkippedPair]) -> list[str]:
    """A heading, then one line per agent (the tasks it cannot do) and per (agent, replay model) it cannot take."""
    by_agent: dict[str, list[SkippedPair]] = {}
    for pair in skipped:
        if pair.task_id is not None:
            by_agent.setdefault(pair.agent, []).append(pair)
    with_model = [p for p in skipped if p.task_id is None]
    counts = [f"{n} {what} pairs" for n, what in ((len(skipped) - len(with_model), "(agent, task)"),
                                                  (len(with_model), "(agent, replay model)")) if n]
    lines = [f"{' and '.join(counts)} skipped, the agent cannot do them:"]
    lines += [f"  {agent}: {len(pairs)} task(s), e.g. {pairs[0].reason}" for agent, pairs in by_agent.items()]
    lines += [f"  {p.agent} with {p.model}: every task: {p.reason}" for p in with_model]
    return lines


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
    unsupported: list[SkippedPair] = field(default_factory=list)  # what the agents cannot do, and why
    missing_inputs: list[str] = field(default_factory=list)  # (agent, task) pairs run without an input, and why
    cost_notes: list[str] = field(default_factory=list)  # models whose spend counts as $0 (no known price), and why
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

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
    cause: str = ""  # the reason in a few words, e.g. "no traces" (the summary groups by it)


def skipped_lines(skipped: list[SkippedPair], width: int = 80) -> list[str]:
    """A heading, then one line per agent within ``width``: how many tasks it skips and why, in a few words, and
    the replay models it cannot take. ``skipped_reasons`` has each pair's whole reason."""
    by_agent: dict[str, list[SkippedPair]] = {}
    for pair in skipped:
        by_agent.setdefault(pair.agent, []).append(pair)
    with_model = [p for p in skipped if p.task_id is None]
    counts = [f"{n} {what}" for n, what in ((len(skipped) - len(with_model), "(agent, task)"),
                                            (len(with_model), "(agent, replay model)")) if n]
    lines = [_fit(f"skipped pairs the agents cannot do: {', '.join(counts)}", width)]
    for agent, pairs in by_agent.items():
        causes: dict[str, int] = {}
        for pair in pairs:
            if pair.task_id is not None:
                causes[pair.cause or pair.reason] = causes.get(pair.cause or pair.reason, 0) + 1
        parts = [f"{n} task{'s' if n > 1 else ''}: {cause}" for cause, n in causes.items()]
        parts += [f"{p.model}: {p.cause or p.reason}" for p in pairs if p.task_id is None]
        lines.append(_fit(f"  {agent}: {'; '.join(parts)}", width))
    return lines


def skipped_reasons(skipped: list[SkippedPair]) -> list[str]:
    """Each skipped pair's whole reason, one a line (the run's log keeps them)."""
    return [f"{p.agent} x {p.task_id or 'every task'}{f' with {p.model}' if p.model else ''}: {p.reason}"
            for p in skipped]


def _fit(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


@dataclass
class RunSummary:
    experiment_id: str
    directory: Path
    planned: int = 0
    skipped_done: int = 0
    ran: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    not_covered: int = 0  # replay: tasks the published source has no output for (neither passed nor failed)
    unsupported: list[SkippedPair] = field(default_factory=list)  # what the agents cannot do, and why
    missing_inputs: list[str] = field(default_factory=list)  # (agent, task) pairs run without an input, and why
    cost_notes: list[str] = field(default_factory=list)  # models whose spend counts as $0 (no known price), and why
    stopped: str | None = None  # why the run stopped early (interrupt, budget, a provider refusing every call)
    provider_failure: str | None = None  # a model failed attempts in a row with 401/403/404 (runner.provider_failures)
    cost_usd: float = 0.0  # spent: new money (what budgets count)
    cost_with_cached_usd: float = 0.0  # the replies at list price, cached ones included
    tokens: int = 0
    seconds: float = 0.0

    def count(self, attempt: Attempt) -> None:
        """A finished (stored) attempt of this invocation."""
        self.ran += 1
        self.cost_usd += attempt.spend_usd
        self.cost_with_cached_usd += attempt.cost_usd
        self.tokens += attempt.prompt_tokens + attempt.completion_tokens
        if attempt.status == AttemptStatus.PASSED:
            self.passed += 1
        elif attempt.status == AttemptStatus.FAILED:
            self.failed += 1
        elif attempt.status == AttemptStatus.ERROR:
            self.errors += 1
        elif attempt.status == AttemptStatus.NOT_COVERED:
            self.not_covered += 1

    def lines(self, label: str = "", replay: bool = False) -> list[str]:
        """The summary as short lines (each within 80 columns but for a long id): counts, money, time."""
        uncovered = f" · not covered: {self.not_covered}" if replay else ""
        return [f"run summary{f' ({label})' if label else ''}", self.experiment_id,
                f"  planned: {self.planned} · already done: {self.skipped_done} · ran now: {self.ran}",
                f"  passed: {self.passed} · failed: {self.failed} · errors: {self.errors}{uncovered}",
                f"  spent: ${self.cost_usd:.4f} · incl. cached at list price: ${self.cost_with_cached_usd:.4f}",
                f"  tokens: {self.tokens} · seconds: {self.seconds:.1f}"]

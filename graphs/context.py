"""``AgentContext``: what an agent graph may use (task, model roles, tool check, limits); not part of the state."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task
from sysmo.contracts.check import CheckResult
from sysmo.llm.response import LLMResponse


class ChatClient(Protocol):
    """The slice of ``sysmo.llm.LLM`` the graphs need: one chat completion, awaited on the event loop."""

    async def acomplete(self, messages: list[dict[str, Any]], **kwargs: Any) -> LLMResponse: ...


Checker = Callable[[Artifact, Task], CheckResult]


@dataclass
class AgentContext:
    """Everything a node may reach besides the state. Built by the runner for one attempt."""

    task: Task
    llm: ChatClient
    checker: Checker
    attempt_id: str = "attempt"
    agent: str = ""
    sample_index: int = 0
    max_rounds: int = 3
    temperature: float | None = None
    max_tokens: int | None = None
    prompt_hashes: dict[str, str] = field(default_factory=dict)
    max_steps: int | None = None  # tool-calling agents: defaults to an equivalent of the repair budget
    feedback: str = "diagnostics"  # sysmo.graphs.repair.Feedback; "none" forces max_rounds to 0 (one shot)
    strategy: str | None = None  # --strategy (sysmo.agents.strategies.Strategy); None: sysmo's own task prompt
    data_dir: Path | None = None  # benchmark data (the published SysMBench templates of --strategy)
    # the attempt's directory of files for an agent that works on files (openhands); None: ``run_attempt`` gives
    # a private temporary one, removed when the attempt ends. The runner: <experiment>/artifacts/<attempt>/workspace
    workspace_dir: Path | None = None
    seed: int | None = None  # the (task, sample)'s seed, sent with every model call of the attempt (None: none)
    arm: dict[str, Any] = field(default_factory=dict)  # the arm's settings as configured (recorded on the attempt)
    time_limit_s: float | None = None  # wall-clock seconds the attempt may take (None: no limit)
    # the attempt's model calls so far per (round, role): the next call's index (``next_call_index``)
    calls_made: dict[tuple[int | None, str], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.feedback == "none":
            self.max_rounds = 0  # one shot: the feedback ablation's "none" allows no repair round

    def next_call_index(self, round_index: int | None, role: str) -> int:
        """The index of the attempt's next call in ``round_index`` by ``role`` (0 for the first), counted: with
        the round and role it is the call's place in the attempt, which the response cache keys on. A re-run of
        the attempt (``--resume`` after a kill) makes its calls in the same order, so they get the same places."""
        index = self.calls_made.get((round_index, role), 0)
        self.calls_made[(round_index, role)] = index + 1
        return index


# set once the attempt being driven has run out of time: a node still working in its worker thread (the event
# loop stopped waiting for it) sees it through the context LangGraph copies into that thread, and does no more
_attempt_over: ContextVar[threading.Event | None] = ContextVar("sysmo_attempt_over", default=None)


@contextmanager
def attempt_clock() -> Iterator[threading.Event]:
    """While the block runs, ``attempt_over()`` answers the returned event (set it when the attempt's time is up)."""
    over = threading.Event()
    token = _attempt_over.set(over)
    try:
        yield over
    finally:
        _attempt_over.reset(token)


def attempt_over() -> bool:
    """Whether the attempt this node works for has been stopped (``--attempt-timeout``): its results are not
    kept, so a node doing many things in a row (tool calls) stops between them."""
    over = _attempt_over.get()
    return over is not None and over.is_set()

"""A deterministic cooperative scheduler and an NDJSON trace recorder for the starter systems.

Each thread of a system is a Python generator. The code between two ``yield``s runs as one atomic step;
``yield Until(cond)`` blocks the thread until ``cond()`` holds. The scheduler picks the next thread among the
runnable ones with ``random.Random(seed)``, so an interleaving (and the trace it produces) is a function of
the seed alone: the same seed gives the same bytes.

>>> sched = Scheduler(seed=3)
>>> sched.spawn("t1", worker())
>>> sched.run(max_steps=100)
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Until:
    """Block the yielding thread until ``condition()`` is true (checked when the scheduler picks a thread)."""

    condition: Callable[[], bool]


Thread = Generator[Until | None, None, None]


class Scheduler:
    """Runs generator threads one atomic step at a time, choosing among runnable threads with a seeded RNG."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self._threads: dict[str, Thread] = {}
        self._blocked: dict[str, Callable[[], bool]] = {}

    def spawn(self, name: str, thread: Thread) -> None:
        self._threads[name] = thread

    def runnable(self) -> list[str]:
        # insertion order, never set order: the choice below must not depend on hashing
        return [name for name in self._threads if name not in self._blocked or self._blocked[name]()]

    def step(self) -> bool:
        """Run one atomic step of one runnable thread; False when every thread is finished or blocked."""
        ready = self.runnable()
        if not ready:
            return False
        name = self.rng.choice(ready)
        self._blocked.pop(name, None)
        try:
            request = next(self._threads[name])
        except StopIteration:
            del self._threads[name]
            return True
        if isinstance(request, Until):
            self._blocked[name] = request.condition
        return True

    def run(self, max_steps: int, stop: Callable[[], bool] = lambda: False) -> int:
        """Step until nothing can run, ``stop()`` holds, or ``max_steps`` steps ran; returns the steps taken."""
        steps = 0
        while steps < max_steps and not stop() and self.step():
            steps += 1
        return steps


class TraceRecorder:
    """Collects one trace: an ``Init`` line (configuration + initial state), then one line per logged event.

    Every line is a JSON object ``{"event", "actor", "args", "state"}``; ``state`` is the value of every
    traced variable after the step, read from ``snapshot()``.
    """

    def __init__(self, snapshot: Callable[[], dict[str, Any]], config: dict[str, Any]) -> None:
        self.snapshot = snapshot
        self.lines: list[dict[str, Any]] = [{"event": "Init", "config": config, "state": snapshot()}]

    def emit(self, event: str, actor: int | str, **args: Any) -> None:
        self.lines.append({"event": event, "actor": actor, "args": args, "state": self.snapshot()})

    @property
    def events(self) -> int:
        """Logged events, not counting the Init line."""
        return len(self.lines) - 1

    def ndjson(self) -> str:
        return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in self.lines)

"""Progress of an experiment run: attempts done, ETA, running cost and pass counts.

On a terminal, a rich progress bar. Elsewhere (a log file, CI, a batch job's output) a bar cannot redraw, so a
plain line is printed every ``LOG_EVERY_PERCENT`` of the run or ``LOG_EVERY_S`` seconds, whichever comes first.
"""

from __future__ import annotations

import time
from datetime import timedelta

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from sysmo.terminal import escape_terminal

LOG_EVERY_PERCENT = 5
LOG_EVERY_S = 30.0


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=int(round(seconds))))


class RunProgress:
    """Context manager; ``advance(passed, cost)`` after each attempt, ``note(text)`` for one-off messages."""

    def __init__(self, total: int, done: int = 0, enabled: bool = True, label: str = "run",
                 console: Console | None = None) -> None:
        self.total, self.done, self.enabled, self.label = total, done, enabled, label
        self.passed = 0
        self.cost = 0.0
        self.console = console or Console(stderr=True)
        self._progress: Progress | None = None
        self._task = None
        self._lines = enabled and not self.console.is_terminal  # plain progress lines instead of a bar
        self._started = time.monotonic()
        self._ran = 0  # attempts finished by this invocation (the ETA's rate)
        self._last_line = (self._started, done)

    def __enter__(self) -> RunProgress:
        if self.enabled and not self._lines:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("passed {task.fields[passed]}"), TextColumn("${task.fields[cost]:.4f}"),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=self.console,
                transient=False,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(self.label, total=self.total, completed=self.done, passed=0, cost=0.0)
        elif self._lines:
            self.console.print(f"{self.label}: {self.total} attempts planned, {self.done} already done",
                               highlight=False, soft_wrap=True)
        return self

    def advance(self, passed: bool, cost: float) -> None:
        self.passed += int(passed)
        self.cost += cost
        self.done += 1
        self._ran += 1
        if self._progress is not None:
            self._progress.update(self._task, advance=1, passed=self.passed, cost=self.cost)
        elif self._lines and self._line_due():
            self._print_line()

    def _line_due(self) -> bool:
        now = time.monotonic()
        last_time, last_done = self._last_line
        step = max(1, self.total * LOG_EVERY_PERCENT // 100)
        return self.done >= self.total or self.done - last_done >= step or now - last_time >= LOG_EVERY_S

    def _print_line(self) -> None:
        now = time.monotonic()
        elapsed = now - self._started
        remaining = max(0, self.total - self.done)
        eta = _clock(elapsed / self._ran * remaining) if self._ran else "?"
        percent = 100 * self.done / self.total if self.total else 100.0
        line = (f"{self.label}: {self.done}/{self.total} attempts ({percent:.0f}%), passed {self.passed}, "
                f"${self.cost:.4f}, elapsed {_clock(elapsed)}, ETA {eta}")
        self.console.print(line, highlight=False, soft_wrap=True)  # a log line: never wrapped
        self._last_line = (now, self.done)

    def note(self, text: str) -> None:
        """A one-off message (an error, a stop) on stderr, with or without the bar; an error may quote model text,
        so it is printed as plain text with control characters escaped."""
        console = self._progress.console if self._progress is not None else self.console
        console.print(escape_terminal(text), markup=False, highlight=False, soft_wrap=True)

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
        elif self._lines and self._last_line[1] != self.done:
            self._print_line()  # where the run stopped (a stop or an error between two lines)

"""A rich progress bar for experiment runs: attempts done, ETA, running cost and pass counts."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class RunProgress:
    """Context manager; ``advance(passed, cost)`` after each attempt, ``note(text)`` for one-off messages."""

    def __init__(self, total: int, done: int = 0, enabled: bool = True, label: str = "run") -> None:
        self.total, self.done, self.enabled, self.label = total, done, enabled, label
        self.passed = 0
        self.cost = 0.0
        self.console = Console(stderr=True)
        self._progress: Progress | None = None
        self._task = None

    def __enter__(self) -> RunProgress:
        if self.enabled:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("passed {task.fields[passed]}"), TextColumn("${task.fields[cost]:.4f}"),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=self.console,
                transient=False,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(self.label, total=self.total, completed=self.done, passed=0, cost=0.0)
        return self

    def advance(self, passed: bool, cost: float) -> None:
        self.passed += int(passed)
        self.cost += cost
        if self._progress is not None:
            self._progress.update(self._task, advance=1, passed=self.passed, cost=self.cost)

    def note(self, text: str) -> None:
        """A one-off message (an error, a stop) on stderr, with or without the bar."""
        if self._progress is not None:
            self._progress.console.print(text)
        else:
            self.console.print(text)

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

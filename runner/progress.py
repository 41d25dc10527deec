"""Progress of an experiment run: attempts done, passed/failed/errors, how many run now, time elapsed, the rate,
a steady ETA and the money spent.

On a terminal, a rich progress bar that fits 80 columns (the experiment's id is on the line above it, once, and a
legend naming the bar's fields: ``LEGEND``). Elsewhere (a log file, CI, a batch job's output) a bar cannot redraw,
so a plain line is printed every ``LOG_EVERY_PERCENT`` of the run or ``LOG_EVERY_S`` seconds, whichever comes
first.

How the ETA is estimated: attempts left x this run's pace, the pace being the time since this run started divided by
the attempts this run finished (attempts done before a resume do not count). Between two finished attempts it
counts down. A pace over the whole run, not over the last few attempts, is what keeps it steady: once 10% of the
attempts are done, one more finished attempt changes the pace by at most the share of the run it took, so the ETA
does not swing more than 2x between two updates (it still shrinks as attempts run out: with 5% left it is half what
it was at 10% left). The rate is the same pace as attempts a minute.

A model call that waits before retrying (a rate limit, a 5xx answer, a time-out; ``llm.retry``) shows on the bar as
``retrying <model> (HTTP 429) in 4.2 s`` while it waits, and as a line of its own, at most one per
``RETRY_NOTE_EVERY_S``, where there is no bar (calls made in worker processes or on Ray are not seen here).
"""

from __future__ import annotations

import time
from collections import deque
from datetime import timedelta

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn
from rich.table import Column
from rich.text import Text

from sysmo.contracts.attempt import AttemptStatus

from sysmo.terminal import escape_terminal

LOG_EVERY_PERCENT = 5
LOG_EVERY_S = 30.0
RETRY_NOTE_EVERY_S = 10.0
LEGEND = "✓ passed ✗ failed ! error · running now · elapsed · attempts/min · ETA · $ spent"


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=int(round(seconds))))


def _rate(per_minute: float) -> str:
    return f"{per_minute:.1f}/min" if per_minute < 100 else f"{per_minute:.0f}/min"


class Pace:
    """This run's pace: the time since it started over the attempts it finished (see the module's docstring)."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.count = 0
        self.last = started  # when the last attempt finished

    def finished(self, now: float) -> None:
        self.count += 1
        self.last = now

    def per_attempt(self) -> float | None:
        """Seconds an attempt, over the whole run; None before any attempt finished."""
        return (self.last - self.started) / self.count if self.count else None

    def per_minute(self, now: float) -> float:
        """Attempts finished a minute of this run so far."""
        return 60.0 * self.count / (now - self.started) if now > self.started else 0.0

    def eta(self, remaining: int, now: float) -> float | None:
        """Seconds left for ``remaining`` attempts at the run's pace, less the time since the last one finished
        (a countdown between attempts); None before any attempt finished."""
        per_attempt = self.per_attempt()
        if per_attempt is None:
            return None
        return max(0.0, per_attempt * remaining - (now - self.last))


class _EtaColumn(ProgressColumn):
    """``ETA h:mm:ss`` from the run's ``Pace`` (rich's own estimate jumps with every burst of attempts)."""

    def __init__(self, run: RunProgress) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.run = run

    def render(self, task: Task) -> Text:
        eta = self.run.pace.eta(self.run.total - self.run.done, time.monotonic())
        return Text(f"ETA {_clock(eta) if eta is not None else '?'}", style="progress.remaining")


class _PaceColumn(ProgressColumn):
    """``N running  h:mm:ss  R/min``: attempts in flight, time since the run started, attempts a minute."""

    def __init__(self, run: RunProgress) -> None:
        super().__init__(table_column=Column(no_wrap=True))
        self.run = run

    def render(self, task: Task) -> Text:
        now = time.monotonic()
        return Text(f"{self.run.running} running {_clock(now - self.run.pace.started)} "
                    f"{_rate(self.run.pace.per_minute(now))}")


class _RetryColumn(ProgressColumn):
    """``retrying <model> (<cause>) in N s`` while a model call waits before its next try, else nothing."""

    def __init__(self, run: RunProgress) -> None:
        super().__init__()
        self.run = run

    def render(self, task: Task) -> Text:
        return Text(self.run.retry_text(time.monotonic()), style="yellow")


class RunProgress:
    """Context manager; ``advance(status, cost)`` after each attempt, ``note(text)`` for one-off messages."""

    def __init__(self, total: int, done: int = 0, enabled: bool = True, label: str = "run",
                 console: Console | None = None) -> None:
        self.total, self.done, self.enabled, self.label = total, done, enabled, label
        self.passed = self.failed = self.errors = 0
        self.cost = 0.0
        self.running = 0  # attempts in flight, set by the executor (``RunState.running``)
        self.console = console or Console(stderr=True)
        self._progress: Progress | None = None
        self._task = None
        self._lines = enabled and not self.console.is_terminal  # plain progress lines instead of a bar
        self._started = time.monotonic()
        self.pace = Pace(self._started)
        self._last_line = (self._started, done)
        self._retry: tuple[str, str, float] | None = None  # (model, cause, monotonic time the wait ends)
        self._last_retry_note = float("-inf")
        self._watch = None

    def retrying(self, model: str, cause: str, wait_s: float) -> None:
        """A model call of this process waits ``wait_s`` seconds before its next try (``llm.retry``)."""
        now = time.monotonic()
        self._retry = (model, cause, now + wait_s)
        if self._lines and now - self._last_retry_note >= RETRY_NOTE_EVERY_S:
            self._last_retry_note = now
            self.console.print(f"retrying {model} ({cause}) in {wait_s:.1f} s", markup=False, highlight=False,
                               soft_wrap=True)

    def retry_text(self, now: float) -> str:
        if self._retry is None or now >= self._retry[2]:
            return ""
        model, cause, until = self._retry
        return f"retrying {model} ({cause}) in {until - now:.1f} s"

    def __enter__(self) -> RunProgress:
        if not self.enabled:
            return self
        from sysmo.llm.retry import watching_retries

        self._watch = watching_retries(self.retrying)
        self._watch.__enter__()
        self.console.print(f"{self.label}: {self.total} attempts planned, {self.done} already done",
                           highlight=False, soft_wrap=True)
        self.console.print(LEGEND, highlight=False, soft_wrap=True, markup=False)
        if not self._lines:
            self._progress = Progress(
                BarColumn(bar_width=8), TextColumn("{task.completed}/{task.total}"),
                TextColumn("[green]✓{task.fields[passed]}[/] [yellow]✗{task.fields[failed]}[/] "
                           "[red]!{task.fields[errors]}[/]"),
                _PaceColumn(self), _EtaColumn(self), TextColumn("${task.fields[cost]:.4f}"), _RetryColumn(self),
                console=self.console,
                transient=False,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(self.label, total=self.total, completed=self.done, passed=0,
                                                 failed=0, errors=0, cost=0.0)
        return self

    def advance(self, status: AttemptStatus | str, cost: float) -> None:
        """One attempt finished with ``status`` (passed, failed, error; not covered counts in none) and ``cost``."""
        status = AttemptStatus(status)
        self.passed += status == AttemptStatus.PASSED
        self.failed += status == AttemptStatus.FAILED
        self.errors += status == AttemptStatus.ERROR
        self.cost += cost
        self.done += 1
        self.pace.finished(time.monotonic())
        if self._progress is not None:
            self._progress.update(self._task, advance=1, passed=self.passed, failed=self.failed, errors=self.errors,
                                  cost=self.cost)
        elif self._lines and self._line_due():
            self._print_line()

    def _line_due(self) -> bool:
        now = time.monotonic()
        last_time, last_done = self._last_line
        step = max(1, self.total * LOG_EVERY_PERCENT // 100)
        return self.done >= self.total or self.done - last_done >= step or now - last_time >= LOG_EVERY_S

    def counts(self) -> str:
        return f"passed {self.passed}, failed {self.failed}, errors {self.errors}"

    def line(self, now: float) -> str:
        """The plain progress line: ``done/total (p%) ✓ ✗ !, N running, elapsed, rate, ETA, $ spent`` (``LEGEND``);
        within the console's width, the rate then the elapsed time are the first things to go."""
        eta = self.pace.eta(max(0, self.total - self.done), now)
        percent = 100 * self.done / self.total if self.total else 100.0
        head = (f"{self.done}/{self.total} ({percent:.0f}%) ✓{self.passed} ✗{self.failed} !{self.errors}, "
                f"{self.running} running")
        tail = f"ETA {_clock(eta) if eta is not None else '?'}, ${self.cost:.4f}"
        elapsed, rate = f"{_clock(now - self._started)} elapsed", _rate(self.pace.per_minute(now))
        for parts in ([head, elapsed, rate, tail], [head, elapsed, tail], [head, tail]):
            text = ", ".join(parts)
            if len(text) <= self.console.width:
                break
        return text

    def _print_line(self) -> None:
        now = time.monotonic()
        self.console.print(self.line(now), highlight=False, soft_wrap=True, markup=False)
        self._last_line = (now, self.done)

    def note(self, text: str) -> None:
        """A one-off message (an error, a stop) on stderr, with or without the bar; an error may quote model text,
        so it is printed as plain text with control characters escaped."""
        console = self._progress.console if self._progress is not None else self.console
        console.print(escape_terminal(text), markup=False, highlight=False, soft_wrap=True)

    def __exit__(self, *exc) -> None:
        if self._watch is not None:
            self._watch.__exit__(None, None, None)
            self._watch = None
        if self._progress is not None:
            self._progress.__exit__(*exc)
        elif self._lines and self._last_line[1] != self.done:
            self._print_line()  # where the run stopped (a stop or an error between two lines)

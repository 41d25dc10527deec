"""Run progress: a bar on a terminal; plain lines where a bar cannot redraw (log files, CI, batch jobs)."""

from __future__ import annotations

import io

from rich.console import Console

from sysmo.runner import progress
from sysmo.runner.progress import RunProgress


def log_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=False, width=60), out  # narrower than a line: no wrapping


def test_off_a_terminal_progress_is_a_line_every_5_percent_with_counts_cost_and_eta() -> None:
    console, out = log_console()
    with RunProgress(total=40, done=0, label="exp [CONTROL]", console=console) as bar:
        for i in range(40):
            bar.advance(passed=i % 4 != 0, cost=0.01)
    lines = out.getvalue().splitlines()
    assert lines[0] == "exp [CONTROL]: 40 attempts planned, 0 already done"
    assert len(lines) == 1 + 20  # every 2 attempts (5% of 40), the last one included
    assert lines[1].startswith("exp [CONTROL]: 2/40 attempts (5%), passed 1, $0.0200, elapsed 0:00:00, ETA 0:00:00")
    assert lines[-1].startswith("exp [CONTROL]: 40/40 attempts (100%), passed 30, $0.4000,")


def test_a_resumed_run_counts_from_what_was_done_and_a_slow_run_prints_on_time(monkeypatch) -> None:
    console, out = log_console()
    clock = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    with RunProgress(total=1000, done=600, label="exp", console=console) as bar:
        clock[0] += 10
        bar.advance(passed=True, cost=0.0)  # 601: neither 5% nor 30 s since the start
        clock[0] += 25
        bar.advance(passed=True, cost=0.0)  # 602: 35 s
    lines = out.getvalue().splitlines()
    assert lines[0] == "exp: 1000 attempts planned, 600 already done"
    # the ETA comes from this run's own pace (17.5 s per attempt), not from the attempts done before
    assert lines[1:] == ["exp: 602/1000 attempts (60%), passed 2, $0.0000, elapsed 0:00:35, ETA 1:56:05"]


def test_a_stop_between_two_lines_still_says_where_the_run_stopped() -> None:
    console, out = log_console()
    with RunProgress(total=100, console=console) as bar:
        for _ in range(7):
            bar.advance(passed=True, cost=0.0)
    assert out.getvalue().splitlines()[-1].startswith("run: 7/100 attempts (7%)")


def test_on_a_terminal_it_is_a_bar_and_disabled_it_prints_nothing() -> None:
    out = io.StringIO()
    with RunProgress(total=3, console=Console(file=out, force_terminal=True, width=120)) as bar:
        bar.advance(passed=True, cost=0.0)
    assert "attempts planned" not in out.getvalue() and "1/3" in out.getvalue()
    console, quiet = log_console()
    with RunProgress(total=3, enabled=False, console=console) as bar:
        bar.advance(passed=True, cost=0.0)
    assert quiet.getvalue() == ""

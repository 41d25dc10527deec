"""Run progress: a bar on a terminal that fits 80 columns; plain lines where a bar cannot redraw (log files, CI,
batch jobs); passed, failed and errors counted apart and labelled once; the attempts running, the time elapsed, the
rate and an ETA from the run's pace."""

from __future__ import annotations

import io
import re

from rich.console import Console

from sysmo.runner import progress
from sysmo.runner.progress import Pace, RunProgress


def log_console(width: int = 100) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=False, width=width), out


def test_off_a_terminal_progress_is_a_line_every_5_percent_with_counts_cost_and_eta(monkeypatch) -> None:
    monkeypatch.setattr(progress.time, "monotonic", lambda: 1000.0)  # no time passes: the line is exact
    console, out = log_console()
    with RunProgress(total=40, done=0, label="exp [CONTROL]", console=console) as bar:
        for i in range(40):
            bar.advance("passed" if i % 4 else ("failed" if i % 8 else "error"), cost=0.01)
    lines = out.getvalue().splitlines()
    assert lines[0] == "exp [CONTROL]: 40 attempts planned, 0 already done"
    assert lines[1] == progress.LEGEND
    assert len(lines) == 2 + 20  # every 2 attempts (5% of 40), the last one included
    assert lines[2] == "2/40 (5%) ✓1 ✗0 !1, 0 running, 0:00:00 elapsed, 0.0/min, ETA 0:00:00, $0.0200"
    assert lines[-1].startswith("40/40 (100%) ✓30 ✗5 !5, 0 running,")
    assert lines[-1].endswith("$0.4000")


def test_a_resumed_run_counts_from_what_was_done_and_a_slow_run_prints_on_time(monkeypatch) -> None:
    console, out = log_console()
    clock = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    with RunProgress(total=1000, done=600, label="exp", console=console) as bar:
        clock[0] += 10
        bar.advance("passed", cost=0.0)  # 601: neither 5% nor 30 s since the start
        clock[0] += 25
        bar.advance("passed", cost=0.0)  # 602: 35 s
    lines = out.getvalue().splitlines()
    assert lines[0] == "exp: 1000 attempts planned, 600 already done"
    # the ETA comes from this run's own pace (17.5 s per attempt), not from the attempts done before
    assert lines[2:] == ["602/1000 (60%) ✓2 ✗0 !0, 0 running, 0:00:35 elapsed, 3.4/min, ETA 1:56:05, $0.0000"]


def test_the_eta_is_the_runs_pace_that_a_burst_or_a_slow_attempt_does_not_swing_and_counts_down() -> None:
    pace = Pace(started=0.0)
    assert pace.eta(10, now=1.0) is None
    for t in (10.0, 20.0, 30.0, 40.0):
        pace.finished(t)
    assert pace.eta(10, now=40.0) == 100.0
    assert pace.eta(10, now=45.0) == 95.0  # a countdown while the next attempt runs
    for t in (40.1, 40.2, 40.3):  # three attempts of a batch finish together
        pace.finished(t)
    # 40.3 s over 7 attempts: 5.76 s an attempt, not the burst's 0.1 s
    assert 57 < pace.eta(10, now=40.3) < 58
    pace.finished(80.0)  # one attempt as slow as the whole run so far: the pace goes from 5.76 to 10 s, < 2x
    assert 1.5 < pace.eta(10, now=80.0) / 57.6 < 2.0
    assert abs(pace.per_minute(80.0) - 6.0) < 1e-9  # 8 attempts in 80 s


def test_a_log_line_fits_80_columns_even_with_large_counts() -> None:
    console, out = log_console(width=80)
    with RunProgress(total=3920, done=0, label="exp", console=console) as bar:
        for i in range(1200):
            bar.advance("passed" if i % 10 else "failed", cost=0.0125)
    lines = out.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[-1].startswith("1200/3920 (31%) ✓1080 ✗120 !0, 0 running, ")
    assert "ETA " in lines[-1] and lines[-1].endswith("$15.0000")


def test_a_stop_between_two_lines_still_says_where_the_run_stopped() -> None:
    console, out = log_console()
    with RunProgress(total=100, console=console) as bar:
        for _ in range(7):
            bar.advance("passed", cost=0.0)
    assert out.getvalue().splitlines()[-1].startswith("7/100 (7%)")


def test_on_a_terminal_it_is_a_bar_of_80_columns_and_disabled_it_prints_nothing() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80)
    with RunProgress(total=112, label="control-20261127-0123abcd", console=console) as bar:
        for status in ["passed"] * 100 + ["failed"] * 10 + ["error"] * 2:
            bar.advance(status, cost=0.0113)
    # each redraw of the bar starts with a carriage return; what the screen shows is the text between them
    lines = re.split(r"[\r\n]", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()))
    text = "\n".join(lines)
    last = [line for line in lines if "112/112" in line][-1]
    assert "✓100 ✗10 !2" in last and "$1.2656" in last and "ETA 0:00:00" in last and "0 running" in last
    assert "/min" in last
    assert text.count(progress.LEGEND) == 1
    assert all(len(line) <= 80 for line in text.splitlines()), text
    quiet_console, quiet = log_console()
    with RunProgress(total=3, enabled=False, console=quiet_console) as bar:
        bar.advance("passed", cost=0.0)
    assert quiet.getvalue() == ""

"""The run's terminal output at 80 columns, as a process with ``COLUMNS=80`` (rich fixes its width at import): the
README's main job run twice in one folder (a fresh id, exit 0 both times), its progress lines and summary;
``sysmo agents list``; ``sysmo trace EXP --failed`` with the reason of each failure, each record whole at 60, 80
and 120 columns; a small control run's progress lines (fields labelled once, an ETA within 2x between updates);
``sysmo list`` and the headline per kind that ``sysmo report`` prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sysmo.contracts.attempt import Attempt, AttemptStatus, Round
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome
from sysmo.runner import progress
from sysmo.store import Store

# the README's main job (`sysmo run --samples 2`) on one task: the same command, the same derived id
MAIN_JOB = ("run", "--samples", "1", "--ids", "starter/uml_class/bug_tracker", "-a", "base_modeling",
            "-a", "trace_learning")
# Every stage is scored, names compared by their tokens instead of by MiniLM: each of the two `sysmo run` processes
# would otherwise import torch and load the model where the [bertscore] extra is installed (as in CI; about 7 of
# a run's 19 CPU s, tests/test_experiment_e2e.py), for output this test does not look at (the embeddings are
# tested on their own, tests/test_clue_sigma.py)
LIGHT_SCORING = "scoring:\n  embedding: token\n  similarity: token\n  text.bertscore: false\n"


def _sysmo(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    return subprocess.run([sys.executable, "-m", "sysmo.cli", *args], env=env, capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def _within_80(text: str) -> None:
    long = [line for line in text.splitlines() if len(line) > 80]
    assert not long, "\n".join(long)


@pytest.mark.slow
def test_the_main_job_runs_twice_in_one_folder_and_every_line_fits_80_columns(tmp_path: Path) -> None:
    (tmp_path / "light.yaml").write_text(LIGHT_SCORING)
    job = (MAIN_JOB[0], "light.yaml", *MAIN_JOB[1:])
    first, second = _sysmo(*job, cwd=tmp_path), _sysmo(*job, cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert second.returncode == 0, second.stdout + second.stderr
    ids = sorted(p.name for p in (tmp_path / "runs").iterdir() if p.is_dir())
    assert len(ids) == 2 and ids[1] == f"{ids[0]}-2", ids
    assert f"this run is {ids[1]}" in " ".join(second.stderr.split())
    assert f"sysmo run --resume {ids[0]} -o runs" in " ".join(second.stderr.split())
    for run in (first, second):
        _within_80(run.stdout + run.stderr)
        assert "[warning" not in run.stderr  # events and library warnings are in the run's log
    assert "writing the report: tables, plots and paired statistics into" in " ".join(second.stderr.split())
    progress = [line for line in second.stderr.splitlines() if line.startswith("2/2 ")]
    assert progress and "2/2 (100%) ✓2 ✗0 !0, " in progress[-1] and "ETA" in progress[-1]
    assert progress[-1].endswith("$0.0000")
    out = second.stdout
    assert "passed: 2 · failed: 0 · errors: 0" in out
    assert "spent: $0.0000 · incl. cached at list price: $0.0000" in out
    assert "  trace_learning: 1 task: it does tla only" in out
    log = (tmp_path / "runs" / ids[1] / "run.log").read_text()
    assert "skipped: trace_learning x starter/uml_class/bug_tracker: agent 'trace_learning' does not support" in log


def test_agents_list_fits_80_columns() -> None:
    run = _sysmo("agents", "list")
    assert run.returncode == 0, run.stderr
    _within_80(run.stdout)
    assert "openhands (architecture, sysml, tla, uml_class)" in run.stdout
    assert "list_source / view_source" in " ".join(run.stdout.split())  # the description whole, wrapped


def test_trace_failed_says_why_each_attempt_failed_within_80_columns(tmp_path: Path) -> None:
    store = Store(tmp_path / "exp" / "results.sqlite")
    store.save_experiment("exp", {}, {}, is_control=True)
    check = CheckResult(tool="SANY", outcome=Outcome.FAILED, diagnostics=[
        Diagnostic(tool="SANY", message="Unknown operator: `Nxt'.", line=5, column=9, file="Lock.tla")])
    attempts = [
        Attempt(id="a1failedcheck", task_id="starter/tla/lock", agent="base_modeling", model="mockllm/control",
                status=AttemptStatus.FAILED, rounds=[Round(index=0, check=check)]),
        Attempt(id="a2noartifact", task_id="starter/tla/lock", agent="base_modeling", model="mockllm/control",
                sample_index=1, status=AttemptStatus.FAILED,
                rounds=[Round(index=0, extraction_error="no ```tla block in the reply")]),
        Attempt(id="a3passed", task_id="starter/tla/lock", agent="base_modeling", model="reference",
                status=AttemptStatus.PASSED, rounds=[Round(index=0)]),
    ]
    for attempt in attempts:
        store.save_attempt("exp", attempt, {})
    store.close()
    run = _sysmo("trace", "exp", "--failed", "-o", str(tmp_path))
    assert run.returncode == 0, run.stderr
    _within_80(run.stdout)
    flat = " ".join(run.stdout.split())
    assert "Lock.tla:5:9: error: Unknown operator: `Nxt'." in flat
    assert "no model in the reply: no ```tla block in the reply" in flat
    assert "a3passed" not in run.stdout


def _eta_seconds(line: str) -> int | None:
    match = re.search(r"ETA (\d+):(\d\d):(\d\d)", line)
    return int(match[1]) * 3600 + int(match[2]) * 60 + int(match[3]) if match else None


@pytest.fixture(scope="module")
def control_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A small control experiment (one agent, every starter task, one sample, not scored) at 80 columns."""
    folder = tmp_path_factory.mktemp("control")
    run = _sysmo("run", "-a", "base_modeling", "-m", "mockllm/control", "-n", "1", "--no-score", "--no-report",
                 cwd=folder)
    assert run.returncode == 0, run.stdout + run.stderr
    return folder, run


@pytest.mark.slow
def test_the_progress_of_a_control_run_labels_its_fields_once_and_its_eta_stays_within_2x(control_run) -> None:
    _, run = control_run
    _within_80(run.stderr)
    lines = run.stderr.splitlines()
    assert lines.count(progress.LEGEND) == 1
    rows = [line for line in lines if re.match(r"\d+/\d+ \(\d+%\) ✓", line)]
    done_total = [tuple(map(int, re.match(r"(\d+)/(\d+)", line).groups())) for line in rows]
    total = done_total[-1][1]
    assert done_total[-1][0] == total and total >= 20, rows
    assert all(" running" in line and " elapsed" in line for line in rows), rows
    # once 10% is done and while 10% is left (past that the remaining attempts themselves halve), successive ETAs
    # stay within 2x of each other; a second is the display's resolution
    steady = [_eta_seconds(line) for line, (done, _) in zip(rows, done_total)
              if done >= 0.1 * total and total - done >= 0.1 * total]
    assert len(steady) >= 5, rows
    for before, after in zip(steady, steady[1:]):
        assert after <= 2 * before + 1 and before <= 2 * after + 1, (before, after, rows)


@pytest.mark.slow
def test_list_and_report_of_a_control_run(control_run) -> None:
    folder, _ = control_run
    listing = _sysmo("list", cwd=folder)
    assert listing.returncode == 0, listing.stderr
    _within_80(listing.stdout)
    flat = " ".join(listing.stdout.split())
    experiment = next(p.name for p in (folder / "runs").iterdir() if p.is_dir())
    assert experiment in flat and "status: finished" in flat and "pass rate: 1.000" in flat
    assert re.search(r"attempts: (\d+) of \1", flat) and "spent $: 0.0000" in flat
    report = _sysmo("report", experiment, cwd=folder)
    assert report.returncode == 0, report.stderr
    _within_80(report.stdout + report.stderr)
    assert "writing the report of " in report.stderr
    flat = " ".join(report.stdout.split())
    for kind in ("architecture", "sysml", "tla", "uml_class"):
        assert re.search(rf"{kind}: pass@1 after repair 1\.000 \(base_modeling / mockllm/control, best of 1 group; "
                         r"over \d+ attempts of \d+ tasks\)", flat), flat


def test_list_says_so_when_there_is_no_experiment(tmp_path: Path) -> None:
    listing = _sysmo("list", str(tmp_path))
    assert listing.returncode == 0, listing.stderr
    assert f"no experiments in {tmp_path}" in " ".join(listing.stdout.split())


def _failed_store(folder: Path, *, failures: bool) -> None:
    store = Store(folder / "exp" / "results.sqlite")
    store.save_experiment("exp", {}, {"planned_attempts": 3}, is_control=True)
    long_task = "sysmbench/42_an_unusually_long_task_name_for_a_vehicle_maintenance_workflow"
    check = CheckResult(tool="SANY", outcome=Outcome.FAILED, diagnostics=[
        Diagnostic(tool="SANY", message="Unknown operator: `Nxt'.", line=5, column=9, file="Lock.tla")])
    status = AttemptStatus.FAILED if failures else AttemptStatus.PASSED
    for i in range(3):
        store.save_attempt("exp", Attempt(id=f"attempt{i}x", task_id=f"{long_task}_{i}", agent="base_modeling",
                                          model="mockllm/control", sample_index=i, status=status,
                                          rounds=[Round(index=0, check=check)]), {})
    store.close()


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_trace_failed_keeps_each_record_with_its_task_at_any_width(tmp_path: Path, columns: int) -> None:
    _failed_store(tmp_path, failures=True)
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    run = subprocess.run([sys.executable, "-m", "sysmo.cli", "trace", "exp", "--failed", "-o", str(tmp_path)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    # every line fits but a task id too long for any line, which stays whole on its own line (copy keeps it)
    assert all(len(line) <= columns or line.startswith("  task: ") for line in run.stdout.splitlines()), run.stdout
    text = run.stdout
    for i in range(3):
        # each record's task comes after its own id and before the next record's id
        start = text.index(f"attempt{i}x")
        end = text.index(f"attempt{i + 1}x") if i < 2 else len(text)
        assert f"_{i}" in "".join(text[start:end].split()) and "workflow" in text[start:end], (columns, text)
        if i < 2:
            assert f"workflow_{i + 1}" not in "".join(text[start:end].split()), (columns, text)


def test_trace_failed_says_no_failed_attempts(tmp_path: Path) -> None:
    _failed_store(tmp_path, failures=False)
    run = _sysmo("trace", "exp", "--failed", "-o", str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "no failed attempts in exp (3 attempts, all passed)"


def test_run_help_groups_its_options_in_panels_within_80_columns() -> None:
    run = _sysmo("run", "--help")
    assert run.returncode == 0, run.stderr
    _within_80(run.stdout)
    panels = re.findall(r"╭─ (\w+) ─", run.stdout)
    assert {"Models", "Tasks", "Arms", "Limits", "Output"} <= set(panels), panels
    models = run.stdout.split("╭─ Models ─", 1)[1].split("╰", 1)[0]
    assert "--model" in models and "--api-base" in models and "--judge" in models
    limits = run.stdout.split("╭─ Limits ─", 1)[1].split("╰", 1)[0]
    assert "--max-cost" in limits and "--concurrency" in limits


def test_o_is_the_runs_directory_in_every_command() -> None:
    """Every option spelled -o, in every command and subcommand, is `--output-dir`: where experiments live."""
    import click
    import typer

    from sysmo.cli import _wire, app

    _wire()

    def commands(command: click.Command, path: str):
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from commands(sub, f"{path} {name}")

    found = []
    for path, command in commands(typer.main.get_command(app), "sysmo"):
        for param in command.params:
            if "-o" in getattr(param, "opts", []):
                found.append(path)
                assert "--output-dir" in param.opts, (path, param.opts)
    assert {"sysmo run", "sysmo trace", "sysmo report", "sysmo compare"} <= set(found), found

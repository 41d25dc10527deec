"""The run's terminal output at 80 columns, as a process with ``COLUMNS=80`` (rich fixes its width at import): the
README's main job run twice in one folder (a fresh id, exit 0 both times), its progress lines and summary;
``sysmo agents list``; ``sysmo trace EXP --failed`` with the reason of each failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sysmo.contracts.attempt import Attempt, AttemptStatus, Round
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome
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
    progress = [line for line in second.stderr.splitlines() if line.startswith("2/2 ")]
    assert progress and "passed 2, failed 0, errors 0, $0.0000 spent" in progress[-1] and "ETA" in progress[-1]
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

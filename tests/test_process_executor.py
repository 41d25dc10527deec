"""The local executor in worker processes (``processes: 2``): the same stored results as one process, a stop
keeps what finished and resume runs the rest, a worker that dies is reported and loses nothing stored."""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
from pathlib import Path

import pytest

UML = ["starter/uml_class/library_loans", "starter/uml_class/hotel_booking", "starter/uml_class/bug_tracker"]


def config_for(tmp_path: Path, experiment: str, **overrides):
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig

    fields = dict(id=experiment, output_dir=tmp_path, agents=["base_modeling"], models=["reference"], samples=2,
                  score=False, concurrency=2, processes=2, tasks=TaskSelection(benchmarks=["starter"], ids=UML))
    fields.update(overrides)
    return ExperimentConfig(**fields)


def results(tmp_path: Path, experiment: str) -> list[tuple]:
    with sqlite3.connect(tmp_path / experiment / "results.sqlite") as conn:
        return conn.execute("SELECT id, task_id, agent, model, sample_index, status, n_rounds,"
                            " json_extract(attempt_json, '$.final_artifact.files') FROM attempts"
                            " ORDER BY task_id, sample_index").fetchall()


def steps(tmp_path: Path, experiment: str) -> list[tuple]:
    with sqlite3.connect(tmp_path / experiment / "checkpoints.sqlite") as conn:
        return conn.execute("SELECT thread_id, COUNT(*) FROM checkpoints GROUP BY thread_id ORDER BY thread_id").fetchall()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))


@pytest.fixture
def pools(monkeypatch) -> list:
    """The runs' ProcessExecutors, as they start."""
    from sysmo.runner.process_executor import ProcessExecutor

    started: list = []
    start = ProcessExecutor.start

    def keep(self, config, directory):
        started.append(self)
        return start(self, config, directory)

    monkeypatch.setattr(ProcessExecutor, "start", keep)
    return started


def kill(worker) -> None:
    """SIGKILL a worker process (its tool servers die with it: they get the parent-death signal)."""
    os.kill(worker.process.pid, signal.SIGKILL)


def test_worker_processes_store_what_one_process_stores(tmp_path: Path, pools) -> None:
    from sysmo.runner import run_experiment

    one = run_experiment(config_for(tmp_path, "one", processes=1), progress=False)
    two = run_experiment(config_for(tmp_path, "two"), progress=False)
    assert len(pools) == 1 and len(pools[0].ready) == 2  # the second run, in two worker processes
    assert one.ran == two.ran == 2 * len(UML) and one.passed == two.passed
    # the attempt ids include the experiment's id: compare everything else, and each attempt's steps
    assert [r[1:] for r in results(tmp_path, "one")] == [r[1:] for r in results(tmp_path, "two")]
    counts = {name: dict(steps(tmp_path, name)) for name in ("one", "two")}
    assert [counts["one"][r[0]] for r in results(tmp_path, "one")] == [counts["two"][r[0]] for r in results(tmp_path, "two")]
    files = sorted(p.relative_to(tmp_path / "two" / "artifacts").parts[1:]
                   for p in (tmp_path / "two" / "artifacts").rglob("*") if p.is_file())
    assert len(files) == 2 * len(UML)  # written by the workers: one round each


def test_a_stop_or_dead_workers_keep_what_was_stored_and_resume_runs_the_rest(tmp_path: Path, monkeypatch,
                                                                              pools) -> None:
    from sysmo.errors import SysmoError
    from sysmo.runner import run_experiment
    from sysmo.runner.process_executor import ProcessExecutor
    from sysmo.runner.progress import RunProgress

    from sysmo.runner.process_executor import _Worker

    stop = threading.Event()
    sent: list[tuple] = []  # the units dealt to the workers, in order
    at_stop: list[int] = []  # how many had been dealt when the stop came
    send = _Worker.send
    monkeypatch.setattr(_Worker, "send", lambda self, message: (sent.append(message) if message[0] == "unit"
                                                                 else None, send(self, message))[1])
    from sysmo.runner.executor import RunState

    came_back = RunState.came_back

    def back_then_stop(self, unit, attempt):  # Ctrl-C as the first attempt comes back, before it is stored
        if not stop.is_set():
            at_stop.append(len(sent))
            stop.set()
        return came_back(self, unit, attempt)

    monkeypatch.setattr(RunState, "came_back", back_then_stop)
    summary = run_experiment(config_for(tmp_path, "stop"), progress=False, stop_event=stop)
    monkeypatch.setattr(RunState, "came_back", came_back)
    assert summary.stopped == "interrupted"
    # every unit dealt before the stop finishes and is stored; nothing more starts (but for one whose start was
    # decided as the stop came: the driver asks before each unit)
    kept = results(tmp_path, "stop")
    assert 1 <= summary.ran == len(kept) == len(sent) <= at_stop[0] + 1 < 2 * len(UML)
    # resumed, every worker killed as it starts: the run stops saying so (how they died, how to go on)
    start, killed = ProcessExecutor.start, []

    def start_then_kill(self, config, directory):
        start(self, config, directory)
        killed.extend(self._workers)
        for worker in self._workers:
            kill(worker)

    monkeypatch.setattr(ProcessExecutor, "start", start_then_kill)
    with pytest.raises(SysmoError, match="no worker process of the run is left.*killed by signal 9.*--resume"):
        run_experiment(config_for(tmp_path, "stop"), progress=False, resume=True)
    assert len(killed) == 2 and not any(w.process.is_alive() for w in killed)
    assert results(tmp_path, "stop") == kept
    monkeypatch.setattr(ProcessExecutor, "start", start)
    # resumed, one of its two workers killed once the first attempts are stored: the other runs the dead one's
    # units too, it is named in the progress output, nothing is lost or run twice
    notes: list[str] = []
    note = RunProgress.note
    monkeypatch.setattr(RunProgress, "note", lambda self, text: (notes.append(text), note(self, text)))
    # the kill comes on the driver's side as the first attempt comes back, with units still queued, so the driver
    # is bound to read the dead worker's pipe (killed from the writer thread after its first commit, the kill could
    # come after the last attempt was back: under load the writer's first batch held them all)
    assert 2 * len(UML) - summary.ran > 2, "the resumed run needs units left to deal after the first comes back"
    killed_once = threading.Event()

    def back_then_kill(self, unit, attempt):
        if not killed_once.is_set():
            killed_once.set()
            kill(pools[-1]._workers[0])
        return came_back(self, unit, attempt)

    monkeypatch.setattr(RunState, "came_back", back_then_kill)
    resumed = run_experiment(config_for(tmp_path, "stop"), progress=False, resume=True)
    monkeypatch.setattr(RunState, "came_back", came_back)
    assert resumed.skipped_done == summary.ran and resumed.ran == 2 * len(UML) - summary.ran
    assert resumed.errors == 0 and any("worker process 0" in n and "died (killed by signal 9)" in n for n in notes)
    final = results(tmp_path, "stop")
    assert set(kept) <= set(final) and len(final) == len(steps(tmp_path, "stop")) == 2 * len(UML)

"""The local executor's pipeline: attempts run while finished ones are stored (by the writer thread); stops
(budget, Ctrl-C) keep everything that finished, and every stored attempt has its steps."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

UML = ["starter/uml_class/library_loans", "starter/uml_class/hotel_booking", "starter/uml_class/bug_tracker"]


def config_for(tmp_path: Path, **overrides):
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.runner import ExperimentConfig

    fields = dict(id="pipe", output_dir=tmp_path, agents=["base_modeling"], models=["mockllm/control"], samples=2, score=False,
                  concurrency=1, tasks=TaskSelection(benchmarks=["starter"], ids=UML))
    fields.update(overrides)
    return ExperimentConfig(**fields)


def stored(tmp_path: Path) -> list:
    from sysmo.store import Store

    store = Store(tmp_path / "pipe" / "results.sqlite")
    try:
        return [store.attempt(r["id"]) for r in store.query("SELECT id FROM attempts ORDER BY id")]
    finally:
        store.close()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))


def test_every_attempt_is_stored_with_its_steps_and_counted_once(tmp_path: Path) -> None:
    from sysmo.graphs.checkpoint import history
    from sysmo.runner import run_experiment

    summary = run_experiment(config_for(tmp_path, concurrency=2), progress=False)
    attempts = stored(tmp_path)
    assert summary.planned == summary.ran == len(attempts) == 2 * len(UML)
    assert summary.passed == sum(a.status == "passed" for a in attempts)
    for attempt in attempts:
        steps = history(Path(attempt.checkpoint_db), attempt.id)
        assert steps[-1].next == [] and steps[-1].status == attempt.status  # the graph ran to its end
        assert attempt.duration_s > 0


def test_a_finished_attempt_is_stored_while_the_next_one_waits_for_its_tool(tmp_path: Path, monkeypatch) -> None:
    # storing holds the interpreter lock for milliseconds: done while the next attempt's check runs, it does not
    # hold that attempt up on the event loop
    from sysmo.runner import unit_runner as runner
    from sysmo.runner import run_experiment
    from sysmo.runner.results import ResultWriter

    # a wait long enough that a slow machine still reaches the next check in it; the run's default is 50 ms
    monkeypatch.setattr(runner, "PERSIST_WAIT_S", 2.0)
    during_a_check: list[bool] = []
    written: list[int] = []
    write_batch = ResultWriter.write_batch

    def recording_write(self, batch):
        during_a_check.append(self.runner._checks_running > 0)
        written.append(len(batch))
        return write_batch(self, batch)

    monkeypatch.setattr(ResultWriter, "write_batch", recording_write)
    summary = run_experiment(config_for(tmp_path), progress=False)
    assert summary.ran == sum(written) == 2 * len(UML)
    # all but the last (no attempt follows it; it is stored after a short wait)
    assert sum(during_a_check) >= len(during_a_check) - 2, during_a_check
    assert len(stored(tmp_path)) == summary.ran


def test_waiting_for_a_tool_check_gives_up_after_its_timeout(tmp_path: Path) -> None:
    import time

    from sysmo.runner import UnitRunner

    runner = UnitRunner(config_for(tmp_path), tmp_path / "pipe")
    started = time.monotonic()
    runner.wait_for_a_tool_check(0.05)
    assert 0.04 <= time.monotonic() - started < 1.0
    runner._count_check(+1)
    started = time.monotonic()
    runner.wait_for_a_tool_check(5.0)  # a check is running: at once
    assert time.monotonic() - started < 0.5
    runner._count_check(-1)
    assert not runner._checking.is_set()


def test_a_stop_finishes_and_stores_the_attempts_in_flight_and_resume_runs_the_rest(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    from sysmo.runner import run_experiment
    from sysmo.runner.results import ResultWriter

    from sysmo.runner.executor import RunState
    from sysmo.runner.local_executor import LocalExecutor

    stop = threading.Event()
    kept: list[str] = []
    started: list[str] = []  # the units begun, in order
    at_stop: list[int] = []  # how many had begun when the stop came
    write_batch = ResultWriter.write_batch
    run_unit, came_back = LocalExecutor._run_unit, RunState.came_back

    def write_then_keep(self, batch):
        write_batch(self, batch)
        kept.extend(job.attempt.id for job in batch)

    def counted(unit, state):
        started.append(unit.attempt_id)
        return run_unit(unit, state)

    def back_then_stop(self, unit, attempt):  # Ctrl-C as the first attempt comes back, before it is stored
        if not stop.is_set():
            at_stop.append(len(started))
            stop.set()
        return came_back(self, unit, attempt)

    monkeypatch.setattr(ResultWriter, "write_batch", write_then_keep)
    monkeypatch.setattr(LocalExecutor, "_run_unit", staticmethod(counted))
    monkeypatch.setattr(RunState, "came_back", back_then_stop)
    summary = run_experiment(config_for(tmp_path), progress=False, stop_event=stop)
    assert summary.stopped == "interrupted"
    # the attempts begun before the stop are finished and stored; nothing more starts, but for one whose start was
    # decided as the stop came (the loop asks before each unit)
    assert 1 <= summary.ran == len(kept) == len(stored(tmp_path)) == len(started) <= at_stop[0] + 1 < 2 * len(UML)
    monkeypatch.setattr(LocalExecutor, "_run_unit", staticmethod(run_unit))
    monkeypatch.setattr(RunState, "came_back", came_back)
    monkeypatch.setattr(ResultWriter, "write_batch", write_batch)
    resumed = run_experiment(config_for(tmp_path), progress=False, resume=True)
    assert resumed.skipped_done == summary.ran and resumed.ran == 2 * len(UML) - summary.ran
    assert len(stored(tmp_path)) == 2 * len(UML)


def test_a_token_cap_stops_scheduling_and_keeps_what_finished(tmp_path: Path, monkeypatch) -> None:
    from fake_openai import FakeOpenAI, reply
    from sysmo.runner import Budget, run_experiment

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    diagram = "```plantuml\n@startuml\nclass Book {\n  +title: String\n}\n@enduml\n```"
    with FakeOpenAI(default=reply(diagram, usage=(40, 20))) as server:  # 60 tokens per call
        model = {"model": "openai/fake-model", "api_base": server.base_url}
        cap = Budget(max_tokens=100)
        summary = run_experiment(config_for(tmp_path, models=[model], budget=cap), progress=False)
        assert summary.stopped and "token cap reached" in summary.stopped
        attempts = stored(tmp_path)
        # one attempt (60 tokens) leaves room for a second; after it, the cap stops the run
        assert summary.ran == len(attempts) == 2 and summary.tokens == 120 == server.calls * 60
        # the cap counts what earlier runs spent: a resume under the same cap starts nothing
        again = run_experiment(config_for(tmp_path, models=[model], budget=cap), progress=False, resume=True)
        assert again.ran == 0 and "token cap reached" in again.stopped and server.calls == 2


def test_an_attempt_whose_record_could_not_be_written_fails_the_run_loudly(tmp_path: Path, monkeypatch) -> None:
    from sysmo.runner import run_experiment
    from sysmo.store import Store

    def disk_full(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(Store, "save_attempts", disk_full)
    with pytest.raises(OSError, match="No space left"):
        run_experiment(config_for(tmp_path), progress=False)


@pytest.mark.parametrize(
    ("override", "message"),
    [({"agents": ["base_modelling"]}, "unknown agent 'base_modelling'"),
     ({"tasks": None}, "the task selection matches no task")],
)
def test_a_config_mistake_stops_the_run_before_the_experiment_exists(tmp_path: Path, override: dict,
                                                                    message: str) -> None:
    # a typo must not leave an empty experiment behind that takes the id ("already exists, resume it")
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.errors import SysmoError
    from sysmo.runner import run_experiment

    if override.get("tasks", "") is None:
        override = {"tasks": TaskSelection(benchmarks=["starter"], ids=["starter/no_such_task"])}
    with pytest.raises(SysmoError, match=message):
        run_experiment(config_for(tmp_path, samples=1, **override), progress=False)
    assert not (tmp_path / "pipe").exists()
    summary = run_experiment(config_for(tmp_path, samples=1), progress=False)  # the same id, fixed
    assert summary.ran == len(UML)

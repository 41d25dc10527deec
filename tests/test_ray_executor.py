"""--executor ray: the same units on a local Ray instance, with the local executor's budget caps, stop handling,
store writes and summary; the driver's environment reaches the workers."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")

from sysmo.benchmarks.selection import TaskSelection  # noqa: E402
from sysmo.runner import Budget, ExperimentConfig, run_experiment  # noqa: E402
from sysmo.runner.executor import RunState  # noqa: E402
from sysmo.store import Store  # noqa: E402

UML = ["starter/uml_class/library_loans", "starter/uml_class/hotel_booking", "starter/uml_class/bug_tracker"]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))  # set after Ray started: it must still reach workers


def config_for(tmp_path: Path, **overrides) -> ExperimentConfig:
    fields = dict(id="ray1", output_dir=tmp_path, agents=["base_modeling"], models=["mockllm/control"], samples=2,
                  score=False, concurrency=2, executor="ray", tasks=TaskSelection(benchmarks=["starter"], ids=UML))
    fields.update(overrides)
    return ExperimentConfig(**fields)


def stored(tmp_path: Path) -> list[dict]:
    store = Store(tmp_path / "ray1" / "results.sqlite")
    try:
        return store.query("SELECT id, model, status, n_rounds FROM attempts ORDER BY model, task_id, sample_index")
    finally:
        store.close()


@pytest.mark.slow
def test_ray_runs_units_scores_them_and_stores_them_with_their_steps_through_the_driver(tmp_path, capsys):
    from sysmo.graphs.checkpoint import history

    # every stage scored, CLUE over name tokens: the actor's process does not import torch to load MiniLM (the
    # embedding is tested on its own, tests/test_clue_sigma.py)
    config = config_for(tmp_path, models=["reference", "mockllm/control"], score=True, scoring={"embedding": "token"},
                        tasks=TaskSelection(ids=["starter/uml_class/library_loans"]))
    summary = run_experiment(config, progress=True)
    assert summary.ran == 4 and summary.passed == 4 and summary.errors == 0 and summary.stopped is None
    # the local executor's progress lines (stderr is not a terminal here)
    err = capsys.readouterr().err
    assert "ray1 [CONTROL]: 4 attempts planned" in err and "\n4/4 (100%) ✓4 ✗0 !0, 0 running, " in err
    rows = stored(tmp_path)
    assert [(r["model"], r["status"], r["n_rounds"]) for r in rows] == [
        ("mockllm/control", "passed", 2), ("mockllm/control", "passed", 2), ("reference", "passed", 1),
        ("reference", "passed", 1)]
    store = Store(tmp_path / "ray1" / "results.sqlite")
    assert len(store.scored_attempt_ids("ray1")) == 4
    assert all(store.scorecard(row["id"]).stage("clue").passed for row in rows)
    store.close()
    for row in rows:  # the driver wrote every attempt's steps and artifacts, as the local executor does
        assert history(tmp_path / "ray1" / "checkpoints.sqlite", row["id"])
        assert list((tmp_path / "ray1" / "artifacts" / row["id"]).iterdir())


def test_the_drivers_environment_reaches_the_workers(tmp_path, monkeypatch):
    from sysmo.runner.ray_executor import UnitActor, driver_environment

    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/v1")
    environment = driver_environment()
    assert environment["SYSMO_HOME"] == str(tmp_path / "home") and "PATH" not in environment
    actor = ray.remote(num_cpus=0)(UnitActor).remote(config_for(tmp_path).model_dump_json(), str(tmp_path), environment)
    try:
        assert ray.get(actor.environment.remote("SYSMO_HOME")) == str(tmp_path / "home")
        assert ray.get(actor.environment.remote("OPENAI_API_BASE")) == "http://127.0.0.1:9/v1"
    finally:
        ray.kill(actor)


@pytest.mark.slow
def test_a_token_cap_stops_a_ray_run_like_a_local_run(tmp_path, monkeypatch):
    from fake_openai import FakeOpenAI, reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # reaches the workers only through the driver's environment
    diagram = "```plantuml\n@startuml\nclass Book {\n  +title: String\n}\n@enduml\n```"
    with FakeOpenAI(default=reply(diagram, usage=(40, 20))) as server:  # 60 tokens per call
        model = {"model": "openai/fake-model", "api_base": server.base_url}
        cap = Budget(max_tokens=100)
        summary = run_experiment(config_for(tmp_path, models=[model], budget=cap, concurrency=1), progress=False)
        assert summary.stopped and "token cap reached" in summary.stopped
        # the local executor's figures (tests/test_runner_pipeline.py): two attempts, then the cap stops the run
        assert summary.ran == len(stored(tmp_path)) == 2 and summary.tokens == 120 == server.calls * 60
        again = run_experiment(config_for(tmp_path, models=[model], budget=cap, concurrency=1), progress=False,
                               resume=True)
        assert again.ran == 0 and "token cap reached" in again.stopped and server.calls == 2


@pytest.mark.slow
def test_a_stop_finishes_and_stores_the_attempts_in_flight_and_resume_runs_the_rest(tmp_path, monkeypatch):
    stop = threading.Event()
    came_back = RunState.came_back

    def stop_at_the_first(self, unit, attempt):
        fresh = came_back(self, unit, attempt)
        stop.set()  # as the first Ctrl-C does: the other attempt in flight must still be stored
        return fresh

    monkeypatch.setattr(RunState, "came_back", stop_at_the_first)
    summary = run_experiment(config_for(tmp_path), progress=False, stop_event=stop)
    assert summary.stopped == "interrupted" and summary.ran == len(stored(tmp_path)) == 2
    monkeypatch.setattr(RunState, "came_back", came_back)
    rest = run_experiment(config_for(tmp_path), progress=False, resume=True)
    assert rest.skipped_done == 2 and rest.ran == 2 * len(UML) - 2 and len(stored(tmp_path)) == 2 * len(UML)


def test_a_node_that_cannot_see_a_data_path_stops_the_run_in_one_line_naming_the_node_and_the_path(tmp_path):
    from sysmo.errors import DataMissingError
    from sysmo.runner.ray_cluster import check_nodes, unit_nodes

    nodes = unit_nodes(ray)
    present, gone = tmp_path / "traces", tmp_path / "gone" / "1.ndjson"
    present.mkdir()
    with pytest.raises(DataMissingError) as raised:  # the check runs on the node, in a task pinned to it
        check_nodes(ray, nodes, {}, ["java"], [str(present), str(gone)])
    message = str(raised.value)
    assert "\n" not in message
    assert f"(node {nodes[0].node_id[:8]}) cannot read the run's data: {gone}: mount the benchmark" in message
    check_nodes(ray, nodes, {}, ["java"], [str(present)])  # everything there: no error


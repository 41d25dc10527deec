"""--executor ray runs the same work units on a local Ray instance; results go through the driver's store."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")

from sysmo.benchmarks.selection import TaskSelection  # noqa: E402
from sysmo.runner import ExperimentConfig, run_experiment  # noqa: E402
from sysmo.store import Store  # noqa: E402


@pytest.mark.slow
def test_ray_executor_runs_units_and_writes_through_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    config = ExperimentConfig(id="ray1", output_dir=tmp_path, agents=["base_modeling"], samples=2, concurrency=2,
                              executor="ray", tasks=TaskSelection(ids=["starter/uml_class/library_loans"]))
    try:
        summary = run_experiment(config, progress=False)
    finally:
        ray.shutdown()
    assert summary.ran == 4 and summary.passed == 4 and summary.errors == 0
    store = Store(tmp_path / "ray1" / "results.sqlite")
    rows = store.query("SELECT model, status, n_rounds FROM attempts ORDER BY model, sample_index")
    assert [(r["model"], r["status"], r["n_rounds"]) for r in rows] == [
        ("mockllm/control", "passed", 2), ("mockllm/control", "passed", 2), ("reference", "passed", 1),
        ("reference", "passed", 1)]
    assert len(store.scored_attempt_ids("ray1")) == 4

"""``sysmo compare``: which settings may differ, the one-line refusals, and the factor it infers. Experiments are
written with the store's API (no run): the analysis reads only what a run records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.store import AttemptRecord, Store
from sysmo_cli import run_sysmo

BASE: dict[str, Any] = {"agents": ["base_modeling"], "models": ["openai/m"], "samples": 2, "max_rounds": 3,
                        "feedback": "diagnostics", "strategy": None, "temperature": 0.2, "scoring_mode": "sysmo",
                        "concurrency": 4, "selection_metric": {}, "tasks": {"ids": []}}


def experiment(runs: Path, name: str, tasks: list[str], passed: dict[tuple[str, int], bool],
               **settings: Any) -> Path:
    """An experiment ``name`` of one attempt per (task, sample), passed as ``passed`` says."""
    config = {**BASE, **settings, "id": name}
    directory = runs / name
    directory.mkdir(parents=True)
    store = Store(directory / "results.sqlite")
    store.save_experiment(name, config, {}, is_control=False)
    records = []
    for task in tasks:
        for sample in range(config["samples"]):
            ok = passed.get((task, sample), False)
            attempt = Attempt(id=f"{name}-{task}-{sample}", task_id=task, agent=config["agents"][0],
                              model=config["models"][0], sample_index=sample, feedback=config["feedback"],
                              strategy=config["strategy"],
                              status=AttemptStatus.PASSED if ok else AttemptStatus.FAILED)
            records.append(AttemptRecord.of(attempt, {"benchmark": "starter", "kind": "uml_class"}))
    store.save_attempts(name, records)
    store.close()
    return directory


def test_compare_refuses_in_one_line_and_infers_the_one_factor(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    tasks = [f"t{i}" for i in range(6)]
    experiment(runs, "plain", tasks, {(t, s): i < 2 for i, t in enumerate(tasks) for s in range(2)})
    experiment(runs, "cot", tasks, {(t, s): i < 5 for i, t in enumerate(tasks) for s in range(2)}, strategy="cot")
    experiment(runs, "cot-warm", tasks, {}, strategy="cot", temperature=0.7)
    experiment(runs, "harness", tasks, {}, scoring_mode="harness")
    experiment(runs, "elsewhere", ["u1"], {}, strategy="cot")
    experiment(runs, "busy", tasks, {}, concurrency=16, samples=1)  # how a run was carried out: not compared

    def compare(*args: str):
        result = run_sysmo("compare", *args, "-o", str(runs), "--out", str(tmp_path / "out"))
        result.stderr = " ".join(result.stderr.split())  # the console wraps the line at its width
        return result

    refused = compare("plain", "cot-warm")
    assert refused.code == 2 and "Traceback" not in refused.stderr
    assert refused.stderr == ("error: plain and cot-warm differ in strategy and temperature; name the factor(s) to "
                              "compare with --factor")
    assert "not named: temperature" in compare("plain", "cot-warm", "--factor", "strategy").stderr
    assert "differ in scoring_mode, which no factor covers" in compare("plain", "harness").stderr
    assert "plain and elsewhere share no tasks" in compare("plain", "elsewhere").stderr
    assert "have the same settings; name the factor(s)" in compare("plain", "busy").stderr
    assert "unknown factor colour" in compare("plain", "cot", "--factor", "colour").stderr

    done = compare("plain", "cot")
    assert done.code == 0, done.output
    (row,) = pd.read_csv(tmp_path / "out" / "paired.csv").itertuples()
    assert (row.factor, row.baseline, row.level, row.n_pairs) == ("strategy", "default", "cot", 12)
    assert (row.level_only, row.baseline_only, row.delta_pass) == (6, 0, pytest.approx(0.5))
    assert row.p_mcnemar == pytest.approx(2 * 0.5 ** 6) and pd.isna(row.p_wilcoxon)  # nothing was scored
    # both settings named: the arms differ in two factors at once, so no pair isolates either
    both = compare("plain", "cot-warm", "--factor", "strategy", "--factor", "temperature")
    assert both.code == 0 and "no pairs" in both.stdout

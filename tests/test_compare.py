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


def _name(model: str | dict[str, Any]) -> str:
    return model["model"] if isinstance(model, dict) else model


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
                              model=_name(config["models"][0]), sample_index=sample, feedback=config["feedback"],
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
    assert refused.stderr == ("error: plain and cot-warm differ in strategy (--strategy) and temperature "
                              "(--temperature); name the factor(s) to compare with --factor")
    assert "not named: temperature" in compare("plain", "cot-warm", "--factor", "strategy").stderr
    assert "differ in scoring_mode (--scoring-mode), which no factor covers" in compare("plain", "harness").stderr
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


def _compare(runs: Path, out: Path, *args: str):
    result = run_sysmo("compare", *args, "-o", str(runs), "--out", str(out))
    result.stderr = " ".join(result.stderr.split())  # the console wraps the line at its width
    return result


def test_compare_refuses_another_seed_unless_seed_is_the_factor(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    tasks = [f"t{i}" for i in range(6)]
    experiment(runs, "seed0", tasks, {(t, s): i < 2 for i, t in enumerate(tasks) for s in range(2)})
    experiment(runs, "seed7", tasks, {(t, s): i < 5 for i, t in enumerate(tasks) for s in range(2)}, seed=7)
    experiment(runs, "seed7-cot", tasks, {}, seed=7, strategy="cot")

    refused = _compare(runs, tmp_path / "out", "seed0", "seed7")
    assert refused.code == 2 and "Traceback" not in refused.stderr
    assert refused.stderr == (
        "error: seed0 and seed7 were run with another --seed (0, 7): every model call was sent another seed, so "
        "their attempts are not the same samples (as `sysmo run --resume` refuses a --seed change); compare "
        "experiments run with one --seed, or add --factor seed to compare the seeds")
    # naming another factor does not let the seed through
    assert "another --seed (0, 7)" in _compare(runs, tmp_path / "out", "seed0", "seed7-cot", "--factor",
                                               "strategy").stderr

    named = _compare(runs, tmp_path / "out", "seed0", "seed7", "--factor", "seed")
    assert named.code == 0, named.output
    assert "factor(s): seed" in named.stdout and "baseline: seed=0 (default)" in " ".join(named.stdout.split())
    (row,) = pd.read_csv(tmp_path / "out" / "paired.csv").itertuples()
    assert (row.factor, str(row.baseline), str(row.level), row.n_pairs, row.level_only) == ("seed", "0", "7", 12, 6)


def test_compare_refuses_a_model_asked_for_its_tool_calls_another_way(tmp_path: Path) -> None:
    """Models are compared by name: their role option ``tool_calling`` (``--tool-calling``) is a setting of its own,
    so an openhands run with native tool calls and one with the text protocol are not paired as the same arm."""
    runs = tmp_path / "runs"
    tasks = [f"t{i}" for i in range(3)]
    experiment(runs, "native", tasks, {}, agents=["openhands"])
    experiment(runs, "text", tasks, {}, agents=["openhands"], models=[{"model": "openai/m", "tool_calling": "text"}])
    experiment(runs, "auto", tasks, {}, agents=["openhands"], models=[{"model": "openai/m", "tool_calling": "auto"}])
    experiment(runs, "text-cot", tasks, {}, agents=["openhands"], strategy="cot",
               models=[{"model": "openai/m", "tool_calling": "text"}])

    refused = _compare(runs, tmp_path / "out", "native", "text")
    assert refused.code == 2 and "Traceback" not in refused.stderr
    assert "native and text differ in tool_calling (--tool-calling), which no factor covers" in refused.stderr
    assert "differ in tool_calling (--tool-calling)" in _compare(runs, tmp_path / "out", "native", "text-cot",
                                                                 "--factor", "strategy").stderr
    # a model named alone runs with tool_calling auto: the same setting as auto named
    assert "have the same settings" in _compare(runs, tmp_path / "out", "native", "auto").stderr
    assert _compare(runs, tmp_path / "out", "text", "text-cot").code == 0


def test_compare_takes_a_baseline_or_every_pair(tmp_path: Path) -> None:
    runs, out = tmp_path / "runs", tmp_path / "out"
    tasks = [f"t{i}" for i in range(8)]
    experiment(runs, "own", tasks, {(t, s): i < 2 for i, t in enumerate(tasks) for s in range(2)})
    experiment(runs, "few", tasks, {(t, s): i < 4 for i, t in enumerate(tasks) for s in range(2)},
               strategy="few-shot")
    experiment(runs, "cot", tasks, {(t, s): i < 7 for i, t in enumerate(tasks) for s in range(2)}, strategy="cot")

    default = _compare(runs, out, "own", "few", "cot")
    assert default.code == 0, default.output
    assert "baseline: strategy=default (default)" in " ".join(default.stdout.split())
    rows = pd.read_csv(out / "paired.csv")
    assert {(r.baseline, r.level) for r in rows.itertuples()} == {("default", "few-shot"), ("default", "cot")}
    assert "baseline: strategy=default (default)" in (out / "compare.md").read_text()

    chosen = _compare(runs, out, "own", "few", "cot", "--baseline", "strategy=cot")
    assert chosen.code == 0, chosen.output
    rows = {r.level: r for r in pd.read_csv(out / "paired.csv").itertuples()}
    assert set(rows) == {"default", "few-shot"} and {r.baseline for r in rows.values()} == {"cot"}
    # cot passes on tasks 0-6, few-shot on 0-3: three tasks x two samples only cot passed
    assert (rows["few-shot"].level_only, rows["few-shot"].baseline_only) == (0, 6)
    assert "baseline: strategy=cot (--baseline)" in (out / "compare.md").read_text()

    every = _compare(runs, out, "own", "few", "cot", "--all-pairs")
    assert every.code == 0, every.output
    rows = pd.read_csv(out / "paired.csv")
    assert {(r.baseline, r.level) for r in rows.itertuples()} == {
        ("default", "few-shot"), ("default", "cot"), ("few-shot", "cot")}
    by_hand = [min(1.0, p) for p in holm_by_hand(list(rows["p_mcnemar"]))]
    assert list(rows["p_mcnemar_adjusted"]) == pytest.approx(by_hand)  # Holm over the three together
    assert "strategy: every pair of levels (--all-pairs)" in (out / "compare.md").read_text()

    for args, message in (
            (("--baseline", "strategy=grammar"), "error: --baseline strategy=grammar: no attempt ran strategy "
                                                 "grammar; its levels here: default, few-shot, cot"),
            (("--baseline", "colour=red"), "error: --baseline colour=red: no factor 'colour'; name one of agent, "
                                           "model, feedback, strategy, temperature, max_rounds, seed"),
            (("--baseline", "feedback=none"), "error: --baseline feedback=none: feedback is not a factor of this "
                                              "analysis (factors: strategy)"),
            (("--baseline", "strategy"), "error: --baseline 'strategy': write FACTOR=LEVEL, e.g. feedback=bare")):
        refused = _compare(runs, out, "own", "few", "cot", *args)
        assert (refused.code, refused.stderr) == (2, message)


def holm_by_hand(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out

"""The offline control experiment end to end: run, SIGKILL mid-run, resume; tables equal an uninterrupted run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from sysmo_cli import run_sysmo

# two kinds of task (PlantUML class, architecture) x the one-call and the tool-calling agent x the 2 control
# providers x 2 samples: 16 attempts, agent by agent (runner/units.py `expand`), so killed once 8 are stored the
# run leaves the tool-calling agent's attempts on both kinds to resume. The resume logic does not depend on the
# kind or the agent (SysML v2 and the other agents run end to end in tests/test_agents_controls.py and
# tests/test_view_browser.py); each `sysmo run` here starts one PlantUML server and no SysML kernel (36 attempts
# over three kinds took 80 s, 60 s CPU; these 16 take 50 s, 41 s CPU, at load 3; with the uninterrupted run in this
# process and the lighter scoring below, 39 s at load 4.5 where it took 94 s).
ARGS = ["--ids", "starter/uml_class/library_loans,starter/architecture/bike_sharing_system",
        "--agent", "base_modeling", "--agent", "openhands", "--samples", "2", "--no-progress"]
STABLE = ["agent", "model", "kind", "tasks", "samples", "pass@1", "pass@2"]
# Every stage is scored, names compared by their tokens instead of by the MiniLM and BERTScore models: each
# `sysmo run` process would otherwise import torch and load them (7 of its 19 CPU s); the embeddings are tested on
# their own (tests/test_clue_sigma.py, tests/test_architecture_real_output.py). The resumed run must keep these
# settings of the experiment (checked below).
LIGHT_SCORING = "scoring:\n  embedding: token\n  similarity: token\n  text.bertscore: false\n"


def sysmo(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "sysmo.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def attempts(db: Path) -> dict[tuple, tuple]:
    """(task, agent, model, sample) -> (finished_at, model calls): attempt ids differ between experiments."""
    if not db.exists():
        return {}
    with sqlite3.connect(db) as conn:
        try:
            rows = conn.execute("SELECT task_id, agent, model, sample_index, finished_at, "
                                "(SELECT COUNT(*) FROM llm_calls WHERE attempt_id = attempts.id) FROM attempts").fetchall()
        except sqlite3.OperationalError:
            return {}
    return {tuple(r[:4]): (r[4], r[5]) for r in rows}


def comparable(report_dir: Path) -> pd.DataFrame:
    summary = pd.read_csv(report_dir / "summary.csv")
    metric_cols = [c for c in summary.columns
                   if c not in ("cost $", "spent $", "tokens", "wall s") and not c.endswith("CI")]
    return summary[metric_cols].sort_values(["agent", "model", "kind"]).reset_index(drop=True)


@pytest.mark.slow
def test_control_experiment_survives_sigkill_and_resumes_to_the_same_tables(tmp_path):
    env = {**os.environ, "SYSMO_HOME": str(tmp_path / "home")}
    out = tmp_path / "runs"
    settings = tmp_path / "light-scoring.yaml"
    settings.write_text(LIGHT_SCORING)
    # the uninterrupted run, to compare with: `sysmo run`'s own code (the command, its report) in this process,
    # without an interpreter start of its own; the run that is killed and the one that resumes it are processes
    straight = run_sysmo("run", str(settings), *ARGS, "--id", "straight", "-o", str(out),
                         env={"SYSMO_HOME": env["SYSMO_HOME"]})
    assert straight.code == 0, straight.output
    assert "CONTROL" in straight.output

    victim = sysmo("run", str(settings), *ARGS, "--id", "killed", "-o", str(out), "--concurrency", "1", env=env)
    db = out / "killed" / "results.sqlite"
    deadline = time.monotonic() + 600
    while len(attempts(db)) < 8 and time.monotonic() < deadline and victim.poll() is None:
        time.sleep(0.2)
    assert victim.poll() is None, "the run ended before it could be killed; give it more work"
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    before = attempts(db)
    assert 8 <= len(before) < len(attempts(out / "straight" / "results.sqlite"))

    resumed = sysmo("run", "--resume", "killed", "-o", str(out), "--no-progress", env=env)
    text, _ = resumed.communicate(timeout=900)
    assert resumed.returncode == 0, text
    after = attempts(db)
    # finished work was neither recomputed nor asked of the model again
    for unit, (finished_at, n_calls) in before.items():
        assert after[unit] == (finished_at, n_calls)
    assert set(after) == set(attempts(out / "straight" / "results.sqlite"))
    pd.testing.assert_frame_equal(comparable(out / "straight" / "report"), comparable(out / "killed" / "report"))
    md = (out / "killed" / "report" / "report.md").read_text()
    assert "CONTROL EXPERIMENT" in md and "### uml_class" in md and "| openhands | mockllm/control |" in md
    assert "'clue.embedding': 'token'" in md  # the resumed run kept the experiment's scoring settings

    # `sysmo trace` in this process (the command's own code, without another interpreter start)
    trace = run_sysmo("trace", "killed", "--all", "-o", str(out), "--json", env={"SYSMO_HOME": env["SYSMO_HOME"]})
    assert trace.code == 0 and '"status": "passed"' in trace.stdout, trace.output

    # every attempt's steps are in the experiment's checkpoint file, up to the graph's end
    from sysmo.graphs.checkpoint import history

    with sqlite3.connect(out / "straight" / "results.sqlite") as conn:
        ids = sorted(r[0] for r in conn.execute("SELECT id FROM attempts"))
    for attempt_id in ids[:6]:
        steps = history(out / "straight" / "checkpoints.sqlite", attempt_id)
        assert steps and steps[-1].next == [] and steps[-1].status in ("passed", "failed")


@pytest.mark.parametrize("mode", ["steps", "none"])
def test_the_checkpoint_setting_decides_whether_steps_are_kept(mode: str, tmp_path: Path, monkeypatch) -> None:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.graphs.checkpoint import history
    from sysmo.runner import ExperimentConfig, run_experiment
    from sysmo.store import Store

    monkeypatch.setenv("SYSMO_HOME", str(tmp_path / "home"))
    config = ExperimentConfig(id="ck", output_dir=tmp_path, agents=["base_modeling"], models=["reference"], samples=1,
                              score=False, checkpoints=mode,
                              tasks=TaskSelection(benchmarks=["starter"], ids=["starter/uml_class/library_loans"]))
    summary = run_experiment(config, progress=False)
    assert summary.ran == 1 and summary.passed == 1
    store = Store(tmp_path / "ck" / "results.sqlite")
    (row,) = store.query("SELECT id FROM attempts")
    attempt = store.attempt(row["id"])
    store.close()
    if mode == "none":
        assert attempt.checkpoint_db is None and not (tmp_path / "ck" / "checkpoints.sqlite").exists()
    else:
        assert attempt.checkpoint_db == str(tmp_path / "ck" / "checkpoints.sqlite")
        nodes = [s.node for s in history(Path(attempt.checkpoint_db), attempt.id) if s.node not in (None, "__start__")]
        assert nodes == ["first_request", "generate", "check"]
    # `sysmo trace` names the graph steps, and its JSON gives their checkpoint ids (to fork from)
    import json

    from rich.console import Console
    from sysmo.evals.trace_view import attempt_json, render_attempt

    console = Console(record=True, width=200)
    render_attempt(attempt, None, console)
    steps = json.loads(attempt_json(attempt, None))["graph_steps"]
    if mode == "none":
        assert "graph steps" not in console.export_text() and steps == []
    else:
        assert "first_request > generate > check" in console.export_text()
        assert steps[-1]["node"] == "check" and all(s["checkpoint_id"] for s in steps)
        # a path recorded relative to another working directory is found in the experiment's folder
        moved = attempt.model_copy(update={"checkpoint_db": "elsewhere/ck/checkpoints.sqlite"})
        assert json.loads(attempt_json(moved, None))["graph_steps"] == []
        assert json.loads(attempt_json(moved, None, experiment_dir=tmp_path / "ck"))["graph_steps"] == steps


def test_a_model_that_cannot_be_used_stops_the_run_before_any_work(tmp_path: Path, monkeypatch) -> None:
    from sysmo.benchmarks.selection import TaskSelection
    from sysmo.errors import ConfigError
    from sysmo.runner import ExperimentConfig, run_experiment

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = ExperimentConfig(id="nokey", output_dir=tmp_path, models=["openai/gpt-4.1"], samples=1,
                              tasks=TaskSelection(benchmarks=["starter"], kinds=["uml_class"]))
    with pytest.raises(ConfigError, match="openai/gpt-4.1.*OPENAI_API_KEY"):
        run_experiment(config, progress=False)
    assert not (tmp_path / "nokey").exists()

"""`sysmo run` selects tasks with the same filters as `sysmo tasks list`, and names the agents it skips and why."""

from __future__ import annotations

from sysmo.store import Store
from sysmo_cli import run_sysmo


def test_run_filters_by_domain_difficulty_and_exclude_and_names_skipped_agents(tmp_path):
    # the selection is the point: the attempts run and are checked by PlantUML, but not scored (no CLUE model
    # to load); the flags add to the experiment file's settings
    settings = tmp_path / "no-score.yaml"
    settings.write_text("score: false\n")
    # `sysmo run` through its entry point in this process (tests/sysmo_cli.py): no interpreter start of its own
    run = run_sysmo(
        "run", str(settings), "--benchmark", "starter", "--domain", "transport*", "--difficulty", "4-5",
        "--exclude", "*parking*", "--agent", "base_modeling", "--agent", "trace_learning", "--model", "reference",
        "--samples", "1", "--max-rounds", "0", "--id", "filters", "-o", str(tmp_path), "--no-report", "--no-progress",
        "--checkpoints", "none")
    assert run.code == 0, run.output
    store = Store(tmp_path / "filters" / "results.sqlite")
    tasks = {r["task_id"] for r in store.query("SELECT DISTINCT task_id FROM attempts WHERE status = 'passed'")}
    assert store.query("SELECT COUNT(*) AS n FROM scores")[0]["n"] == 0
    store.close()
    # Transportation, difficulty 4-5: bike_sharing_system (architecture 4), fleet_rental (uml_class 4);
    # parking_garage (uml_class 5) is excluded
    assert tasks == {"starter/architecture/bike_sharing_system", "starter/uml_class/fleet_rental"}
    out = run.output
    assert "skipped pairs the agents cannot do: 2 (agent, task)" in out
    # the run's summary whole at any width (a table when it fits, else a block): no figure or heading cut
    assert "…" not in out and "already done" in out and "seconds" in out
    assert "trace_learning: 2 tasks: it does tla only" in out


def test_no_score_runs_and_checks_the_attempts_without_scoring_them(tmp_path):
    run = run_sysmo(
        "run", "-b", "starter", "--ids", "starter/sysml/electric_kettle", "-a", "base_modeling", "-m", "reference",
        "-n", "1", "--max-rounds", "0", "--no-score", "--id", "unscored", "-o", str(tmp_path), "--no-report",
        "--no-progress", "--checkpoints", "none")
    assert run.code == 0, run.output
    store = Store(tmp_path / "unscored" / "results.sqlite")
    (attempt,) = list(store.attempts("unscored"))
    assert attempt.status.value == "passed" and attempt.rounds[0].check is not None
    assert store.query("SELECT COUNT(*) AS n FROM scores")[0]["n"] == 0
    store.close()

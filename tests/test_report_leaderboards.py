"""Reports read at a glance: one leaderboard per task kind with only its metrics, sorted; a line per metric;
errored attempts counted apart and said out loud; wide tables only in CSV/Parquet; whole-number round axes."""

from __future__ import annotations

import matplotlib
import pandas as pd
import pytest

from sysmo.evals.leaderboard import error_counts, leaderboards, metric_lines
from sysmo.evals.report import plot_rounds, write_report
from sysmo.contracts.scorecard import ScoreCard, StageResult
from sysmo.evals.tables import attempts_frame, summary_frame
from sysmo.contracts.attempt import Attempt, AttemptStatus
from sysmo.store import Store

UML = {"benchmark": "starter", "kind": "uml_class"}
TLA = {"benchmark": "starter", "kind": "tla"}


@pytest.fixture()
def experiment(tmp_path):
    directory = tmp_path / "exp"
    store = Store(directory / "results.sqlite")
    store.save_experiment("exp", {"samples": 2, "max_rounds": 3}, {}, True)
    rows = [  # (id, task, agent, status, error, meta, stages)
        ("u1", "t/u1", "good", "passed", None, UML, {"syntax": 1.0, "clue": 0.9}),
        ("u2", "t/u1", "good", "passed", None, UML, {"syntax": 1.0, "clue": 0.7}),
        ("u3", "t/u1", "weak", "failed", None, UML, {"syntax": 0.0, "clue": 0.0}),
        ("u4", "t/u1", "weak", "error", "PlantUML server crashed: exit 137", UML, {}),
        ("k1", "t/k1", "good", "error", "model call failed: RateLimitError", TLA, {}),
        ("k2", "t/k1", "good", "passed", None, TLA, {"syntax": 1.0, "invariants": 0.5}),
    ]
    for n, (attempt_id, task, agent, status, error, meta, stages) in enumerate(rows):
        store.save_attempt("exp", Attempt(id=attempt_id, task_id=task, agent=agent, model="mockllm/t",
                                          sample_index=n % 2, status=AttemptStatus(status), error=error,
                                          is_control=True), meta)
        if stages:
            store.save_score("exp", attempt_id, ScoreCard(task_id=task, cascade=meta["kind"], stages=[
                StageResult(stage=name, value=v, passed=v == 1.0) for name, v in stages.items()]))
    store.close()
    return directory


def _frames(directory):
    store = Store(directory / "results.sqlite")
    try:
        frame = attempts_frame(store, "exp")
    finally:
        store.close()
    return frame, summary_frame(frame, ks=(1, 2))


def test_each_kind_has_its_own_metrics_sorted_best_first(experiment):
    frame, summary = _frames(experiment)
    boards = leaderboards(summary, frame)
    assert set(boards) == {"uml_class", "tla"}
    uml, tla = boards["uml_class"], boards["tla"]
    assert list(uml["agent"]) == ["good", "weak"]  # pass@1 1.0 before 0.0
    assert "clue" in uml.columns and "invariants" not in uml.columns
    assert "invariants" in tla.columns and "clue" not in tla.columns
    assert uml.loc[1, "errors"] == "1 (1 infrastructure)" and tla.loc[0, "errors"] == "1 (1 model)"
    lines = metric_lines(boards)
    assert any(line.startswith("clue: ") for line in lines) and any(line.startswith("errors: ") for line in lines)
    counts = error_counts(frame).set_index("agent")
    assert counts.loc["weak", "infrastructure errors"] == 1


def test_report_says_when_pass_at_1_counts_errors_and_keeps_wide_tables_in_files(experiment):
    paths = write_report(experiment)
    md = paths["markdown"].read_text()
    assert "## Leaderboards per task kind" in md and "### uml_class" in md and "### tla" in md
    assert "Errored attempts count as not passed in pass@1" in md and "weak / mockllm/t / uml_class: 1 of 2" in md
    assert "| infrastructure | PlantUML server crashed: exit 137 | 1 |" in md
    assert "All score metrics" not in md and "clue.clue_class" not in md  # sub-metrics: CSV only
    assert "clue" in pd.read_csv(paths["summary_csv"]).columns
    html = paths["html"].read_text()
    assert "<h3>tla</h3>" in html and "<h2>Attempts</h2>" not in html


def test_round_axis_has_whole_numbers(tmp_path):
    curves = pd.DataFrame([{"agent": "a", "model": "m", "round": r, "passed_share": r / 3} for r in range(4)])
    captured = {}
    original = matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        captured["ticks"] = [t for t in fig.axes[0].get_xticks() if 0 <= t <= 3]
        return original(fig, *args, **kwargs)

    matplotlib.figure.Figure.savefig = keep
    try:
        plot_rounds(curves, tmp_path)
    finally:
        matplotlib.figure.Figure.savefig = original
    assert captured["ticks"] and all(float(t).is_integer() for t in captured["ticks"])


def test_cost_plot_labels_points_on_one_spot_once(tmp_path):
    from sysmo.evals.report import plot_cost

    summary = pd.DataFrame([{"agent": a, "model": "m", "kind": "tla", "cost $": c, "pass@1": p}
                            for a, c, p in (("x", 0.0, 1.0), ("y", 0.0, 1.0), ("z", 0.5, 0.25))])
    captured = {}
    original = matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        ax = fig.axes[0]
        captured["labels"] = sorted(t.get_text() for t in ax.texts)
        captured["legend"] = [t.get_text() for t in ax.get_legend().get_texts()]
        captured["xmin"] = ax.get_xlim()[0]
        return original(fig, *args, **kwargs)

    matplotlib.figure.Figure.savefig = keep
    try:
        plot_cost(summary, tmp_path)
    finally:
        matplotlib.figure.Figure.savefig = original
    assert captured["labels"] == ["1, 2", "3"]
    assert captured["legend"] == ["1: x / m / tla", "2: y / m / tla", "3: z / m / tla"]
    assert captured["xmin"] > -0.05


def test_pass_at_1_heatmap_says_how_many_attempts_errored(experiment, tmp_path):
    from sysmo.evals.report import plot_heatmaps

    frame, summary = _frames(experiment)
    texts = []
    original = matplotlib.figure.Figure.savefig

    def keep(fig, *args, **kwargs):
        # the title as one line (it wraps to the figure's width)
        texts.append((" ".join(fig.axes[0].get_title().split()), [t.get_text() for t in fig.axes[0].texts]))
        return original(fig, *args, **kwargs)

    matplotlib.figure.Figure.savefig = keep
    try:
        plot_heatmaps(summary, tmp_path, error_counts(frame))
    finally:
        matplotlib.figure.Figure.savefig = original
    cells = dict(texts)
    # weak: its one run failed, its other errored; good: one passed, one errored
    assert "0.00\n(1 errored)" in cells["pass@1 after repair (uml_class) per agent and model"]
    assert "0.50\n(1 errored)" in cells["pass@1 after repair (tla) per agent and model"]


def test_pass_at_k_variants_stay_with_pass_at_k_not_with_the_stages():
    summary = pd.DataFrame([{"agent": "a", "model": "m", "kind": "uml_class", "tasks": 1, "samples": 2,
                             "pass@1": 0.5, "pass_rate_ci": "[0.000, 1.000]", "pass@2": 1.0,
                             "first answer parses pass@1": 0.0, "first answer parses pass@2": 0.0,
                             "first answer passes pass@1": 0.0, "first answer passes pass@2": 0.0, "syntax": 0.5,
                             "syntax CI": "[0.000, 1.000]", "mean rounds to pass": 2.0, "cost $": 0.0}])
    board = leaderboards(summary, pd.DataFrame())["uml_class"]
    columns = list(board.columns)
    assert columns.index("pass@2 after repair") < columns.index("pass@1 first answer parses (OODEval)") \
        < columns.index("pass@2 first answer parses (OODEval)") < columns.index("pass@1 first answer passes") \
        < columns.index("syntax")
    assert "pass@2 first answer passes" not in columns  # beside pass@1 first answer parses; every k in the CSV
    assert any(line.startswith("pass@K first answer parses (OODEval): OODEval's single-shot pass@K")
               for line in metric_lines({"uml_class": board}))

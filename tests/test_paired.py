"""The paired analysis (``sysmo.evals.paired``): pairing on (task, sample) with the other factors held fixed,
baselines, the tests against scipy computed by hand, and the multiple-comparison adjustments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sysmo.errors import AnalysisError
from sysmo.evals.paired import (EXACT_SIGN_FLIPS_MAX_N, adjust, holm, level_order, paired_rows, rows_frame,
                                wilcoxon_signed_rank)


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


# differences with ties, zeros, both, neither; one and the most differences computed here, and one more (scipy's
# normal approximation then)
WILCOXON_CASES = [[0.5, 0.5, -0.25, 1.0], [0.0, 0.25, 0.5, -0.5, 0.75], [1.0, 0.0, 0.0, -1.0, 1.0, 1.0],
                  [0.1, 0.2, -0.3, 0.4], [0.3], [-0.4, 0.0], [1.0] * 8 + [-1.0] * 2,
                  [0.2, -0.2, 0.4, 0.4, 0.0, 0.6, -0.6, 0.8, 0.8, 1.0, 0.2, -0.4, 0.6],
                  [0.2, -0.2, 0.4, 0.4, 0.0, 0.6, -0.6, 0.8, 0.8, 1.0, 0.2, -0.4, 0.6, 0.6]]


@pytest.mark.parametrize("differences", WILCOXON_CASES, ids=[str(len(c)) for c in WILCOXON_CASES])
def test_the_wilcoxon_p_value_is_scipys(differences: list[float]) -> None:
    assert len(WILCOXON_CASES[-2]) == EXACT_SIGN_FLIPS_MAX_N
    assert wilcoxon_signed_rank(differences) == stats.wilcoxon(differences, zero_method="wilcox").pvalue


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


def test_a_chosen_baseline_and_every_pair_of_levels() -> None:
    from sysmo.evals.paired import Pairing, baseline_lines

    frame = _attempts()
    listed = {"model": ["a", "b"]}
    chosen = paired_rows(frame, headline={"uml_class": "clue.clue"}, listed=listed,
                         pairing=Pairing.of(["feedback=bare"]))
    feedback = {(r.level, r.baseline, r.held_fixed): r for r in chosen if r.factor == "feedback"}
    assert set(feedback) == {("none", "bare", "model=a"), ("diagnostics", "bare", "model=a"),
                             ("none", "bare", "model=b"), ("diagnostics", "bare", "model=b")}
    # diagnostics vs bare by hand: bare repairs nothing, so the pairs diagnostics alone passed are its repairs
    base = frame[(frame.model == "a") & (frame.feedback == "bare")].set_index(["task_id", "sample_index"])
    level = frame[(frame.model == "a") & (frame.feedback == "diagnostics")].set_index(["task_id", "sample_index"])
    gained = int(((level.passed == 1) & (base.passed == 0)).sum())
    assert feedback[("diagnostics", "bare", "model=a")].level_only == gained == 12
    assert {r.baseline for r in chosen if r.factor == "model"} == {"a"}  # the other factor keeps its default
    assert baseline_lines(frame, Pairing.of(["feedback=bare"]), listed=listed) == [
        "model=a (default)", "feedback=bare (--baseline)"]

    every = paired_rows(frame, headline={"uml_class": "clue.clue"}, listed=listed, pairing=Pairing(all_pairs=True))
    pairs = {(r.factor, r.baseline, r.level, r.held_fixed) for r in every}
    # three feedback levels: three pairs per model, the earlier level (declared order) as the baseline
    assert {p for p in pairs if p[0] == "feedback" and p[3] == "model=a"} == {
        ("feedback", "none", "bare", "model=a"), ("feedback", "none", "diagnostics", "model=a"),
        ("feedback", "bare", "diagnostics", "model=a")}
    assert len(every) == 3 * 2 + 3  # + model b vs a under each feedback level
    # every row adjusted together (Holm over all nine)
    assert [r.p_mcnemar_adjusted for r in every] == pytest.approx(holm([r.p_mcnemar for r in every]))
    assert baseline_lines(frame, Pairing(all_pairs=True), listed=listed) == [
        "model: every pair of levels (--all-pairs)", "feedback: every pair of levels (--all-pairs)"]
    assert baseline_lines(frame, listed=listed) == ["model=a (default)", "feedback=none (default)"]


def test_a_baseline_that_names_no_factor_or_level_is_refused_naming_what_there_is() -> None:
    from sysmo.evals.paired import Pairing

    frame = _attempts()
    with pytest.raises(AnalysisError, match=r"--baseline feedback=nonee: no attempt ran feedback nonee; its levels "
                                            r"here: none, bare, diagnostics$"):
        paired_rows(frame, headline={}, pairing=Pairing.of(["feedback=nonee"]))
    with pytest.raises(AnalysisError, match=r"no factor 'colour'; name one of agent, model, feedback, strategy, "
                                            r"temperature, max_rounds$"):
        Pairing.of(["colour=red"])
    with pytest.raises(AnalysisError, match="write FACTOR=LEVEL, e.g. feedback=bare"):
        Pairing.of(["feedback"])
    with pytest.raises(AnalysisError, match=r"two baselines of feedback \(bare, none\)"):
        Pairing.of(["feedback=bare", "feedback=none"])
    # a number names its level by value
    rows = [{"kind": "tla", "agent": "x", "model": "m", "temperature": t, "task_id": f"t{i}", "sample_index": 0,
             "passed": int(t > 0.5 and i < 3)} for t in (0.2, 0.7, 1.0) for i in range(4)]
    found = paired_rows(pd.DataFrame(rows), headline={}, pairing=Pairing.of(["temperature=0.70"]))
    assert {(r.baseline, r.level) for r in found} == {("0.7", "0.2"), ("0.7", "1")}


def test_all_pairs_leaves_a_factor_with_a_chosen_baseline_to_it() -> None:
    from sysmo.evals.paired import Pairing, baseline_lines

    frame = _attempts()
    listed = {"model": ["a", "b"]}
    pairing = Pairing.of(["model=b"], all_pairs=True)
    rows = paired_rows(frame, headline={}, listed=listed, pairing=pairing)
    assert {(r.baseline, r.level) for r in rows if r.factor == "model"} == {("b", "a")}
    assert {(r.baseline, r.level) for r in rows if r.factor == "feedback"} == {
        ("none", "bare"), ("none", "diagnostics"), ("bare", "diagnostics")}
    assert baseline_lines(frame, pairing, listed=listed) == ["model=b (--baseline)",
                                                              "feedback: every pair of levels (--all-pairs)"]

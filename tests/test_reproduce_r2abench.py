"""``sysmo reproduce r2abench`` on a small checkout in the replication package's layout (written here)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sysmo.cli.reproduce import reproduce_app
from sysmo.reproduce.r2abench import package_names, rescore

from r2abench_checkout import ALIGNMENT, NO_REAL_CHECKOUT, PREDICTED, REFERENCE, real_checkout

# worked by hand with the package's rules: the container Logic is an unmatched reference node (GED 1.0) and
# the worst case is 3 (1.0 + 2.0) + 2 * 0.8 + 1 * 1.0 + 1 * 1.2 = 12.8
EXPECTED = {
    "l0_valid": 1.0,
    "l1_node_coverage": 1.0,
    "l1_gen_precision": 1.0,
    "l1_edge_precision": 1.0,
    "l1_edge_recall": 1.0,
    "l1_edge_f1": 1.0,
    "l1_ged_accuracy": 100 * (1 - 1 / 12.8),
    "l1_orphan_ratio": 0.0,
    "l1_god_ratio": 0.0,
}


def _checkout(root: Path) -> Path:
    ref = root / "Dataset" / "E-R2A" / "JAVA" / "tiny" / "AD"
    ref.mkdir(parents=True)
    (ref / "ad.puml").write_text(REFERENCE)
    out = root / "Output" / "E-R2A" / "direct" / "gpt-5" / "tiny"
    out.mkdir(parents=True)
    (out / "predicted.puml").write_text(PREDICTED)
    (out / "judge_alignment_gpt-5.4-mini.json").write_text(json.dumps(ALIGNMENT))
    with (root / "Output" / "results_e_r2a.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["sample_id", "workflow", "model_id", *EXPECTED])
        writer.writeheader()
        writer.writerow({"sample_id": "tiny", "workflow": "direct", "model_id": "gpt-5",
                         **{k: "TRUE" if k == "l0_valid" else round(v, 4) for k, v in EXPECTED.items()}})
        writer.writerow({"sample_id": "tiny", "workflow": "metagpt", "model_id": "gpt-5", **dict.fromkeys(EXPECTED, 0)})
    return root


def test_package_names_follow_the_replication_packages_paths():
    graph = package_names(PREDICTED)
    assert graph.nodes == ["Global::Alpha\\n(core", "Global::Beta"]
    assert graph.edges == [("Global::Alpha\\n(core", "Global::Beta")]
    ref = package_names(REFERENCE)
    assert ref.leaves == ["Logic::Alpha", "Logic::Beta"] and "Global::Logic" in ref.nodes


@pytest.mark.slow
def test_rescoring_matches_hand_worked_package_values(tmp_path):
    result = rescore(_checkout(tmp_path))
    assert (result.rows_in_csv, result.rescored, result.missing) == (2, 1, 1)
    by_column = {c.column: c for c in result.columns}
    for column, value in EXPECTED.items():
        assert by_column[column].ours == pytest.approx(value, abs=1e-9), column
        assert by_column[column].mean_abs_diff == pytest.approx(0.0, abs=1e-4), column


def test_the_command_prints_one_row_per_column(tmp_path):
    result = CliRunner().invoke(reproduce_app, ["r2abench", "--data-dir", str(_checkout(tmp_path)), "--from-files",
                                                "--no-validity"], env={"COLUMNS": "150"})
    assert result.exit_code == 0, result.output
    assert "1 of 2 CSV rows re-scored, scored from the files" in result.output and "l1_ged_accuracy" in result.output
    assert "not re-scored: 1 row(s): no predicted.puml in the checkout" in result.output
    assert "92.188" in result.output


def test_a_folder_without_the_results_csv_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(reproduce_app, ["r2abench", "--data-dir", str(tmp_path)])
    assert result.exit_code != 0


# A prediction that fails L0 the way real model output does (an edge from a multi-word name PlantUML cannot
# read): the package writes no judge alignment for it and leaves its L1 columns empty.
BROKEN = """@startuml
package "Backend" {
  [Api] as api
}
Backend Layer ..> api : deployed within
@enduml
"""


def _with_a_failed_prediction(root: Path) -> Path:
    _checkout(root)
    out = root / "Output" / "E-R2A" / "direct" / "deepseek-v3.2" / "tiny"
    out.mkdir(parents=True)
    (out / "predicted.puml").write_text(BROKEN)
    with (root / "Output" / "results_e_r2a.csv").open("a", newline="") as handle:
        csv.DictWriter(handle, ["sample_id", "workflow", "model_id", *EXPECTED]).writerow(
            {"sample_id": "tiny", "workflow": "direct", "model_id": "deepseek-v3.2", "l0_valid": "FALSE"}
        )
    return root


@pytest.mark.slow
def test_a_prediction_without_an_alignment_is_still_scored_for_validity(tmp_path):
    result = rescore(_with_a_failed_prediction(tmp_path))
    assert (result.rows_in_csv, result.rescored, result.missing) == (3, 2, 1)
    failed = next(r for r in result.per_row if r["model"] == "deepseek-v3.2")
    assert failed["l0_valid"] == 0.0 and failed["published_l0_valid"] == 0.0
    assert failed["l1_node_coverage"] is None and failed["published_l1_node_coverage"] is None
    by_column = {c.column: c for c in result.columns}
    assert by_column["l0_valid"].n == 2 and by_column["l0_valid"].ours == pytest.approx(0.5)
    assert by_column["l0_valid"].mean_abs_diff == 0.0
    assert by_column["l1_node_coverage"].n == 1


def test_without_the_validity_check_a_prediction_without_an_alignment_is_not_counted(tmp_path):
    result = rescore(_with_a_failed_prediction(tmp_path), validity=False)
    assert (result.rescored, result.missing) == (1, 2)


def test_a_skinparam_block_closes_its_container_as_the_package_reads_it():
    # The package skips a skinparam block's first line only, so the block's closing brace closes the
    # enclosing package: Beta, declared after the block, lands at the top level. The reproduction must
    # read it the same way to use the stored node paths (which is why copies of the data keep style blocks).
    text = """@startuml
package "Logic" as L {
  rectangle "Alpha" as A
  skinparam rectangle {
    BackgroundColor #EEEEEE
  }
  rectangle "Beta" as B
}
A --> B
@enduml
"""
    graph = package_names(text)
    assert "Logic::Alpha" in graph.nodes and "Global::Beta" in graph.nodes
    assert graph.edges == [("Logic::Alpha", "Global::Beta")]


def test_per_node_scans_win_over_the_pairs_for_node_scores():
    # The package's current prompt asks for two independent 0/1 scans; where an answer has them, node coverage and
    # generation precision come from them, not from the pairs (the pairs still drive edges and GED).
    from sysmo.reproduce.r2abench import node_scores

    alignment = {
        **ALIGNMENT,
        "reference_node_coverage": [
            {"gt_node": "Logic::Alpha", "covered": True, "covering_predicted_nodes": ["Global::Alpha\\n(core"]},
            {"gt_node": "Logic::Beta", "covered": False, "covering_predicted_nodes": []},
            {"gt_node": "Global::Logic", "covered": False, "covering_predicted_nodes": []},
            "not a scan item",
        ],
        "predicted_node_grounding": [
            {"predicted_node": "Global::Alpha\\n(core", "grounded": True, "reference_nodes": ["Logic::Alpha"]},
            {"predicted_node": "Global::Beta", "grounded": True, "reference_nodes": ["Logic::Beta"]},
        ],
    }
    assert node_scores(alignment) == (pytest.approx(1 / 3), 1.0)
    assert node_scores(ALIGNMENT) == (1.0, 1.0)  # pairs only: covered / (covered + unmatched)
    only_reference = {**ALIGNMENT, "reference_node_coverage": alignment["reference_node_coverage"]}
    assert node_scores(only_reference) == (pytest.approx(1 / 3), 1.0)


@pytest.mark.slow
def test_the_real_checkout_reproduces_every_deterministic_column():
    # a checkout of the replication package (whole or partial): every row it can re-score from the files agrees with
    # results_e_r2a.csv up to the CSV's rounding (0-1 columns to 4 decimals, GED accuracy to 2)
    checkout = real_checkout()
    if checkout is None:
        pytest.skip(NO_REAL_CHECKOUT)
    result = rescore(checkout)
    if not result.rescored:
        pytest.skip("the checkout holds no prediction with its reference")
    for column in result.columns:
        if column.n == 0:
            continue
        tolerance = 0.006 if column.column == "l1_ged_accuracy" else 1e-4
        assert column.within_rounding == column.n, column
        assert column.mean_abs_diff <= tolerance, column
        assert column.ours == pytest.approx(column.published, abs=tolerance), column
        if column.pearson is not None:
            assert column.pearson > 0.999, column

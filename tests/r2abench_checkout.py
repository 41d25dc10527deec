"""A small checkout in the R2ABench replication package's layout, written here (never the package's files).

Two projects with a reference and an SRS (no PRD, as in a partial copy); published predictions for two models
and two workflows, with the judge's stored alignments (pairs only, and with per-node scans as the OpenHands
answers have them); a prediction PlantUML rejects (no alignment, as the package writes none); and
``Output/results_e_r2a.csv`` whose L1 values were worked by hand with the package's rules.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

SRS = "# Software Requirements Specification\n\nFR-001 The system shall let a member reserve a copy.\n"
REFERENCE = """@startuml
skinparam componentStyle rectangle
package "Logic" as L {
  rectangle "Alpha" as A
  rectangle "Beta" as B
}
A --> B
@enduml
"""
PREDICTED = """@startuml
component "Alpha\\n(core)" as a
component "Beta" as b
a --> b : calls
@enduml
"""
# the same diagram with one extra unaligned component and no edge between the aligned pair
PREDICTED_LOOSE = """@startuml
component "Alpha\\n(core)" as a
component "Beta" as b
component "Gamma" as g
a --> g : calls
@enduml
"""
BROKEN = """@startuml
package "Backend" {
  [Api] as api
}
Backend Layer ..> api : deployed within
@enduml
"""
ALIGNMENT = {
    "matched_pairs": [
        {"gt_nodes": ["Logic::Alpha"], "predicted_nodes": ["Global::Alpha\\n(core"], "is_boundary_correct": True},
        {"gt_nodes": ["Logic::Beta"], "predicted_nodes": ["Global::Beta"], "is_boundary_correct": True},
    ],
    "unmatched_gt_nodes": [],
    "unmatched_predicted_nodes": [],
}
SCANNED = {
    "reference_node_coverage": [
        {"gt_node": "Logic::Alpha", "covered": True}, {"gt_node": "Logic::Beta", "covered": True},
        {"gt_node": "Global::Logic", "covered": False},
    ],
    "predicted_node_grounding": [
        {"predicted_node": "Global::Alpha\\n(core", "grounded": True}, {"predicted_node": "Global::Beta", "grounded": True},
        {"predicted_node": "Global::Gamma", "grounded": False},
    ],
    **ALIGNMENT,
    "unmatched_predicted_nodes": ["Global::Gamma"],
}
COLUMNS = ("l0_valid", "l1_node_coverage", "l1_gen_precision", "l1_edge_precision", "l1_edge_recall", "l1_edge_f1",
           "l1_ged_accuracy", "l1_orphan_ratio", "l1_god_ratio")
# Worked by hand. PREDICTED: the container Logic is an unmatched reference node (GED 1.0); worst case
# 3 (1.0 + 2.0) + 2 * 0.8 + 1 * 1.0 + 1 * 1.2 = 12.8. PREDICTED_LOOSE (scanned): coverage 2/3, grounding 2/3; its
# edge Alpha->Gamma maps to no reference edge (precision 0, recall 0); GED = Logic 1.0 + Gamma 0.8 + the missing
# edge 1.0 + the extra edge 1.2 = 4.0 of 3 * 3.0 + 3 * 0.8 + 1.0 + 1.2 = 13.6; leaves Alpha, Beta, Gamma: Beta is
# an orphan.
EXACT = {"l0_valid": 1.0, "l1_node_coverage": 1.0, "l1_gen_precision": 1.0, "l1_edge_precision": 1.0,
         "l1_edge_recall": 1.0, "l1_edge_f1": 1.0, "l1_ged_accuracy": 100 * (1 - 1 / 12.8), "l1_orphan_ratio": 0.0,
         "l1_god_ratio": 0.0}
LOOSE = {"l0_valid": 1.0, "l1_node_coverage": 2 / 3, "l1_gen_precision": 2 / 3, "l1_edge_precision": 0.0,
         "l1_edge_recall": 0.0, "l1_edge_f1": 0.0, "l1_ged_accuracy": 100 * (1 - 4.0 / 13.6),
         "l1_orphan_ratio": 1 / 3, "l1_god_ratio": 0.0}

# (workflow, model, project) -> (prediction, alignment or None, published CSV values)
PREDICTIONS = {
    ("direct", "gpt-5", "library_loans"): (PREDICTED, ALIGNMENT, EXACT),
    ("direct", "gpt-5", "recipe_share"): (PREDICTED, ALIGNMENT, EXACT),
    ("openhands", "gpt-5", "library_loans"): (PREDICTED_LOOSE, SCANNED, LOOSE),
    ("direct", "deepseek-v3.2", "library_loans"): (BROKEN, None, {"l0_valid": 0.0}),
}
PROJECTS = {"library_loans": "JAVA", "recipe_share": "Python"}


def write_checkout(root: Path, predictions: dict = PREDICTIONS) -> Path:
    for project, language in PROJECTS.items():
        folder = root / "Dataset" / "E-R2A" / language / project
        (folder / "AD").mkdir(parents=True)
        (folder / "AD" / "ad.puml").write_text(REFERENCE)
        (folder / "checked_srs.md").write_text(SRS)
    rows = []
    for (workflow, model, project), (text, alignment, values) in predictions.items():
        out = root / "Output" / "E-R2A" / workflow / model / project
        out.mkdir(parents=True)
        (out / "predicted.puml").write_text(text)
        if alignment is not None:
            (out / "judge_alignment_gpt-5.4-mini.json").write_text(json.dumps(alignment))
        row = {"sample_id": project, "candidate_id": f"{workflow}/{model}", "workflow": workflow, "model_id": model}
        for column in COLUMNS:
            value = values.get(column)
            row[column] = "" if value is None else ("TRUE" if value else "FALSE") if column == "l0_valid" else round(value, 4)
        rows.append(row)
    rows.append({"sample_id": "elsewhere", "candidate_id": "direct/gpt-5", "workflow": "direct", "model_id": "gpt-5",
                 "l0_valid": "TRUE"})  # a CSV row whose files the checkout lacks
    with (root / "Output" / "results_e_r2a.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, ["sample_id", "candidate_id", "workflow", "model_id", *COLUMNS])
        writer.writeheader()
        writer.writerows(rows)
    return root


def real_checkout() -> Path | None:
    """A checkout of the replication package itself, where the machine has one: ``$SYSMO_R2ABENCH_DIR``, else
    ``$SYSMO_TEST_DATA_DIR/r2abench``, when it holds ``Output/results_e_r2a.csv`` (None otherwise)."""
    import os

    named, data = os.environ.get("SYSMO_R2ABENCH_DIR"), os.environ.get("SYSMO_TEST_DATA_DIR")
    for root in (Path(named) if named else None, Path(data) / "r2abench" if data else None):
        if root is not None and (root / "Output" / "results_e_r2a.csv").is_file():
            return root
    return None


NO_REAL_CHECKOUT = ("no checkout of luuquangkhai9/R2ABench with Output/results_e_r2a.csv: set $SYSMO_R2ABENCH_DIR "
                    "(or put it at $SYSMO_TEST_DATA_DIR/r2abench)")

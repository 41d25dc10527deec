"""What ``sysmo reproduce r2abench`` prints: the per-column table, the judges used, the per-group means, the CSV."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sysmo.reproduce.r2abench_groups import COLUMNS, GroupReport
from sysmo.reproduce.r2abench import DETERMINISTIC, Reproduction

GROUP_DIGITS = {"SV": 4, "node_f1": 4, "edge_f1": 4, "GED": 2, "orphan_pct": 2, "god_pct": 2}
GROUP_HEADERS = {"SV": "SV", "node_f1": "node F1", "edge_f1": "edge F1", "GED": "GED", "orphan_pct": "orphan %",
                 "god_pct": "god %"}


def _fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def per_row_csv(result: Reproduction) -> str:
    """One line per re-scored row: identity, the judge whose alignment was used, ours and the CSV's per column."""
    fields = ["workflow", "model", "sample_id", "attempt_id", "judge_file_model", "notes"]
    for column in DETERMINISTIC:
        fields += [column, f"published_{column}"]
    out = io.StringIO()
    writer = csv.DictWriter(out, fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for record in result.per_row:
        writer.writerow({k: "" if record.get(k) is None else record.get(k) for k in fields})
    return out.getvalue()


def print_columns(console: Console, result: Reproduction) -> None:
    source = f"replayed in {result.experiment_dir}" if result.experiment_dir else "scored from the files"
    table = Table(title=f"R2ABench: {result.rescored} of {result.rows_in_csv} CSV rows re-scored, {source} "
                  f"({result.missing} not: see below)")
    for name in ("column", "n", "= CSV", "ours", "published", "Pearson r", "Spearman r", "mean |diff|"):
        table.add_column(name, justify="left" if name == "column" else "right")
    for c in result.columns:
        table.add_row(c.column, str(c.n), f"{c.within_rounding}/{c.n}", _fmt(c.ours, 3), _fmt(c.published, 3),
                      _fmt(c.pearson, 3), _fmt(c.spearman, 3), _fmt(c.mean_abs_diff, 3))
    console.print(table)
    console.print("  = CSV: rows whose value equals the CSV's up to its rounding (4 decimals; GED accuracy 2).")
    if (warning := result.judges.warning) is not None:
        console.print(f"  judges: {warning}", soft_wrap=True)
    if result.judges.without_asked_judge:
        console.print(f"  judges: {result.judges.without_asked_judge} row(s) scored for validity only: their folder "
                      "has no alignment of the judges asked for", soft_wrap=True)
    reasons: dict[str, int] = {}
    for row in result.missing_rows:
        reasons[row["why"]] = reasons.get(row["why"], 0) + 1
    for why, count in sorted(reasons.items(), key=lambda kv: -kv[1]):
        console.print(f"  not re-scored: {count} row(s): {why}", soft_wrap=True)
    if result.experiment_dir:
        console.print(f"  attempts: sysmo view {Path(result.experiment_dir).parent}  "
                      f"(sysmo trace {Path(result.experiment_dir).name} --all -o {Path(result.experiment_dir).parent})",
                      soft_wrap=True)


def print_groups(console: Console, report: GroupReport) -> None:
    """Per model x workflow: ours and the CSV's means over the same rows; Table 3 only where it is comparable."""
    console.print(f"\nPer model x workflow (Table 3's columns). {report.note}", soft_wrap=True)
    if not report.groups:
        console.print("  no group has a re-scored row.")
        return
    table = Table(title=f"means over the rows re-scored: ours = the CSV's in {report.agreeing} of "
                  f"{len(report.groups)} group(s)")
    table.add_column("workflow / model")
    table.add_column("rows", justify="right")
    table.add_column("source")
    for column in COLUMNS:
        table.add_column(GROUP_HEADERS[column], justify="right")
    table.add_column("ours vs CSV")
    for group in report.groups:
        label = f"{group.workflow} / {group.model}"
        verdict = ("agree" if not group.differing else "differ: " + ", ".join(
            f"{GROUP_HEADERS[c]} {_fmt(group.ours[c], GROUP_DIGITS[c])} vs {_fmt(group.csv[c], GROUP_DIGITS[c])}"
            for c in group.differing))
        table.add_row(label, f"{group.rescored}/{group.csv_rows}", "ours",
                      *(_fmt(group.ours[c], GROUP_DIGITS[c]) for c in COLUMNS), verdict)
        table.add_row("", "", "CSV", *(_fmt(group.csv[c], GROUP_DIGITS[c]) for c in COLUMNS), "")
        if group.paper is not None:
            table.add_row("", "", "paper Table 3 *", *(_fmt(group.paper[c], GROUP_DIGITS[c]) for c in COLUMNS),
                          "context, not a difference")
        else:
            table.add_row("", "", "paper Table 3 *", *([""] * len(COLUMNS)), group.paper_note)
    console.print(table)
    console.print("  * the paper's earlier evaluation (see above), shown only beside a group with all its projects "
                  "re-scored.", soft_wrap=True)
    console.print("  rows: re-scored of the group's CSV rows; SV over all of them, the L1 columns over the valid "
                  "rows that have them (node F1: the harmonic mean of coverage and precision per row).", soft_wrap=True)
    if report.not_rescored:
        console.print(f"  {len(report.not_rescored)} group(s) of the CSV have no row re-scored in the checkout "
                      f"(e.g. {', '.join(report.not_rescored[:3])}).", soft_wrap=True)

"""The detection matrix of a sensitivity run: per family, operators x columns, and its CSV / report-table forms.

Cell legend: ``✓ 3/3`` every mutant lost points where declared; ``✗ 1/3`` only one of three did (a MISS);
``= 2/2`` every variant kept the gold's value where declared; ``✗ kept 1/2`` one lost it (a MISS); ``(2/3)`` an
undeclared column that lost points in two of three variants (measured, not judged); ``·`` undeclared and never
lost; ``n/a`` the gold has no points to lose there.
"""

from __future__ import annotations

import csv
import io

from pydantic import BaseModel

from sysmo.evals.sensitivity.suite import COLUMNS, SensitivityReport, VariantResult, operators


class MatrixRow(BaseModel):
    operator: str
    preserving: bool
    variants: int
    tasks: int
    cells: dict[str, str]
    misses: int
    errors: list[str] = []


def _cell(results: list[VariantResult], column: str, declared: str | None) -> tuple[str, int]:
    verdicts = [r.verdicts.get(column, "-") for r in results if r.error is None]
    judged = [v for v in verdicts if v != "n/a"]
    if declared is None:
        lost = sum(v == "(lost)" for v in verdicts)
        return (f"({lost}/{len(verdicts)})" if lost else "·"), 0
    if not judged:
        return "n/a", 0
    if declared == "lose":
        hits = sum(v == "lost" for v in judged)
        return (f"✓ {hits}/{len(judged)}" if hits == len(judged) else f"✗ {hits}/{len(judged)}"), len(judged) - hits
    kept = sum(v == "kept" for v in judged)
    return (f"= {kept}/{len(judged)}" if kept == len(judged) else f"✗ kept {kept}/{len(judged)}"), len(judged) - kept


def family_matrix(report: SensitivityReport, family: str) -> list[MatrixRow]:
    rows: list[MatrixRow] = []
    for op in operators(family):
        results = [r for r in report.results if r.family == family and r.operator == op.name]
        cells: dict[str, str] = {}
        misses = 0
        for column in COLUMNS[family]:
            declared = "lose" if column.name in op.must_lose else "keep" if column.name in op.must_keep else None
            text, missed = _cell(results, column.name, declared)
            cells[column.name] = text
            misses += missed
        errors = [f"{r.task} [{r.target}]: {r.error}" for r in results if r.error]
        rows.append(MatrixRow(operator=op.name, preserving=op.preserving, variants=len(results),
                              tasks=len({r.task for r in results}), cells=cells, misses=misses + len(errors),
                              errors=errors))
    return rows


def render_text(report: SensitivityReport) -> str:
    """The matrices as aligned plain text (one block per family), then the misses and what did not apply."""
    out: list[str] = []
    for family in report.families:
        rows = family_matrix(report, family)
        columns = [c.name for c in COLUMNS[family]]
        header = ["operator", "n", *columns]
        table = [header] + [[("= " if r.preserving else "") + r.operator, f"{r.variants}/{r.tasks}t",
                             *(r.cells[c] for c in columns)] for r in rows]
        widths = [max(len(line[i]) for line in table) for i in range(len(header))]
        golds = [t for t in report.golds if any(r.task == t and r.family == family for r in report.results)]
        out.append(f"{family}: {len(golds)} gold model(s), {sum(r.variants for r in rows)} variants, "
                   f"{sum(r.misses for r in rows)} miss(es)")
        for i, line in enumerate(table):
            out.append("  " + "  ".join(cell.ljust(widths[j]) for j, cell in enumerate(line)))
            if i == 0:
                out.append("  " + "  ".join("-" * w for w in widths))
        for row in rows:
            out.extend(f"  error: {row.operator}: {e}" for e in row.errors)
        out.append("")
    misses = [r for r in report.results if not r.ok]
    if misses:
        out.append(f"MISSES ({len(misses)} variants):")
        for r in misses:
            cols = [c for c, v in r.verdicts.items() if v == "MISS"]
            shown = ", ".join(f"{c} {_num(r.values.get(c))} (gold {_num(r.gold.get(c))})" for c in cols)
            out.append(f"  {r.family} {r.task} {r.operator} [{r.target}]: " + (shown or str(r.error)))
    if report.not_applied:
        out.append(f"Not applicable ({len(report.not_applied)}):")
        out.extend(f"  {n.family} {n.task} {n.operator}: {n.why}" for n in report.not_applied)
    if report.gold_problems:
        out.append("Data notes:")
        out.extend(f"  {p}" for p in report.gold_problems)
    out.append("Legend: ✓ k/n declared lost in k of n; = k/n declared kept in k of n; ✗ a miss; (k/n) undeclared, "
               "lost in k of n; · undeclared, never lost; '= op' rows are semantics-preserving variants.")
    return "\n".join(out) + "\n"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


CSV_FIELDS = ["family", "task", "source", "operator", "target", "preserving", "column", "declared", "gold", "value",
              "verdict", "seconds", "error"]


def to_csv(report: SensitivityReport) -> str:
    """One line per variant and column."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS)
    writer.writeheader()
    for r in report.results:
        for column in COLUMNS[r.family]:
            name = column.name
            declared = "lose" if name in r.must_lose else "keep" if name in r.must_keep else ""
            writer.writerow({"family": r.family, "task": r.task, "source": r.source, "operator": r.operator,
                             "target": r.target, "preserving": r.preserving, "column": name, "declared": declared,
                             "gold": r.gold.get(name), "value": r.values.get(name), "verdict": r.verdicts.get(name, ""),
                             "seconds": f"{r.seconds:.2f}", "error": r.error or ""})
    return buffer.getvalue()

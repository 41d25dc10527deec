"""The viewer's page over two or more experiments: ``sysmo compare``'s paired analysis (``evals.compare``), the
same tables with the same numbers as ``compare.md``, each test significant after correction marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from pydantic import BaseModel, Field

from sysmo.view.models import PairedTable


class CrossComparison(BaseModel):
    experiments: list[str]
    factors: list[str]
    shared_tasks: int
    correction: str  # "Holm" or "Benjamini-Hochberg"
    tables: list[PairedTable] = Field(default_factory=list)
    method: str = ""
    no_pairs: str = ""  # why there is no table (``evals.compare.NO_PAIRS``), when there is none
    significance_note: str = ""


def cross_comparison(directories: Sequence[Path], factors: Sequence[str] = (),
                     correction: str = "holm") -> CrossComparison:
    """``evals.compare.compare`` of the experiments in ``directories``, as the page shows it: the tables of
    ``evals.paired.display_tables`` (every column, as compare.md) with the cells of significant tests marked."""
    from sysmo.evals.compare import NO_PAIRS, compare
    from sysmo.evals.paired import CORRECTION_NAMES, display_tables
    from sysmo.evals.significance import significance_note, significant_columns

    result = compare(list(directories), list(factors), correction)  # type: ignore[arg-type]
    by_family: dict[str, list[Any]] = {}
    for row in result.rows:
        by_family.setdefault(row.family, []).append(row)
    tables = []
    for family, table in display_tables(result.rows, correction).items():  # type: ignore[arg-type]
        columns = [str(c) for c in table.columns]
        tables.append(PairedTable(
            family=family, columns=columns,
            rows=[["" if v is None else str(v) for v in row] for row in table.itertuples(index=False)],
            significant=[[j in significant_columns(columns, r) for j in range(len(columns))] for r in by_family[family]]))
    name = CORRECTION_NAMES[correction]  # type: ignore[index]
    return CrossComparison(
        experiments=result.experiments, factors=result.factors, shared_tasks=result.shared_tasks, correction=name,
        tables=tables, method=result.rows[0].method if result.rows else "", no_pairs="" if result.rows else NO_PAIRS,
        significance_note=significance_note(name)[2:])

"""Which paired comparisons are significant after correction, and how the report and the viewer mark them: a
test whose adjusted p (Holm by default, ``evals.paired``) is below ``SIGNIFICANCE`` has its Δ cell and its p cell
marked ``*``, and the note above the tables names the correction and the threshold."""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

SIGNIFICANCE = 0.05  # an adjusted p below it marks a paired comparison significant after correction
MARK = "*"


def significance_note(correction: str) -> str:
    """``* Holm-adjusted p < 0.05: ...``: what the mark means (``correction``: the correction's display name)."""
    return (f"{MARK} {correction}-adjusted p < {SIGNIFICANCE:g}: significant after correcting for every comparison "
            "shown; an unmarked difference may be chance, however small its raw p.")


def significant_columns(columns: Sequence[str], row: Any) -> set[int]:
    """The cells of one paired row (``evals.paired.PairedRow``) whose test is significant after correction: each
    test's Δ column and its p column (matched by their names in ``evals.paired.display_tables``)."""
    tests = (("Δpass after repair", "p McNemar pass after repair", row.p_mcnemar_adjusted),
             ("Δfirst answer parses", "p McNemar first answer parses", row.p_mcnemar_first_answer_parses_adjusted),
             ("Δfirst answer passes", "p McNemar first answer passes", row.p_mcnemar_first_answer_passes_adjusted),
             ("Δscore", "p Wilcoxon score", row.p_wilcoxon_adjusted))
    marked: set[int] = set()
    for delta, p_name, adjusted in tests:
        if adjusted is not None and adjusted < SIGNIFICANCE:
            marked |= {j for j, c in enumerate(columns) if c.startswith(delta) or c.startswith(p_name)}
    return marked


def marked_table(table: pd.DataFrame, rows: Sequence[Any]) -> pd.DataFrame:
    """``table`` (one family of ``display_tables``, its rows in the order of ``rows``) with `` *`` after each
    significant cell."""
    columns = [str(c) for c in table.columns]
    out = table.astype(object).copy()
    for i, row in enumerate(rows):
        for j in significant_columns(columns, row):
            out.iat[i, j] = f"{out.iat[i, j]} {MARK}"
    return out

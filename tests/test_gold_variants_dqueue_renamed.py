"""The gold-model robustness control on SysMoBench's PGo dqueue and its real traces, first half: the five renamed
variants (variables, actions, constants, and together) keep full marks on every stage. The five granularity
changes are ``test_gold_variants_dqueue_regrained.py``; the spinlock's ten ``test_gold_variants_spinlock.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from gold_variants import FULL_MARKS, REGRAINS, RENAMES, dqueue_variants, score_variants
from sysmo.benchmarks import sysmobench


@pytest.mark.slow
def test_five_renamed_dqueue_variants_keep_full_marks_on_the_real_traces(shared_benchmarks: Path) -> None:
    dqueue = next(t for t in sysmobench.load(shared_benchmarks / "sysmobench") if t.id == "sysmobench/dqueue")
    variants = dqueue_variants(dqueue.references.model)
    assert [v.name for v in variants] == RENAMES + REGRAINS  # ten, this file scores the first five
    renamed = [v for v in variants if v.name in RENAMES]
    assert all(v.renames and not v.event_actions for v in renamed)
    assert score_variants(dqueue, renamed) == {v.name: FULL_MARKS for v in renamed}

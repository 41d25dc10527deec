"""The gold-model robustness control on SysMoBench's PGo dqueue and its real traces, second half: the five
granularity variants (actions ``c``+``c1`` merged, ``p1`` split by queue length, both, each also with renames)
keep full marks on every stage. The renames alone are ``test_gold_variants_dqueue_renamed.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from gold_variants import FULL_MARKS, REGRAINS, dqueue_variants, score_variants
from sysmo.benchmarks import sysmobench


@pytest.mark.slow
def test_five_regrained_dqueue_variants_keep_full_marks_on_the_real_traces(shared_benchmarks: Path) -> None:
    dqueue = next(t for t in sysmobench.load(shared_benchmarks / "sysmobench") if t.id == "sysmobench/dqueue")
    regrained = [v for v in dqueue_variants(dqueue.references.model) if v.name in REGRAINS]
    assert [v.name for v in regrained] == REGRAINS
    assert all(v.event_actions and v.artifact.main_text != dqueue.references.model.main_text for v in regrained)
    assert score_variants(dqueue, regrained) == {v.name: FULL_MARKS for v in regrained}

"""The gold-model robustness control: renamed and re-grained gold specs keep full marks on every stage.

Ten variants each of the starter spinlock (here) and of SysMoBench's PGo dqueue on its real traces
(``test_gold_variants_dqueue_*``: its renames and its granularity changes are two files, so the two halves run
side by side): variables, actions and constants renamed (deterministically, see ``gold_variants``), actions merged
and split; the mapping of trace names is the deterministic matcher's when names are kept, else the scripted
helper's.
"""

from __future__ import annotations

import pytest
from gold_variants import FULL_MARKS, REGRAINS, RENAMES, score_variants, spin_variants, variant
from sysmo.benchmarks.starter import STARTER_DIR, load_task_folder
from sysmo.contracts.task import Task


@pytest.fixture(scope="module")
def spinlock() -> Task:
    return load_task_folder(STARTER_DIR / "tla" / "spinlock")


def test_renames_leave_strings_and_comments_alone(spinlock: Task) -> None:
    renamed = variant(spinlock.references.model, "x", {"pc": "phase", "idle": "IDLE"}).artifact.main_text
    assert 'phase = [p \\in Procs |-> "idle"]' in renamed and "(* N workers" in renamed
    assert "CONSTANT N = 3" in variant(spinlock.references.model, "x", {"N": "Workers"}).artifact.files[
        "Spinlock.cfg"].replace("Workers", "N")


@pytest.mark.slow
def test_ten_spinlock_variants_keep_full_marks(spinlock: Task) -> None:
    variants = spin_variants(spinlock.references.model)
    assert [v.name for v in variants] == RENAMES + REGRAINS
    scores = score_variants(spinlock, variants)
    assert scores == {v.name: FULL_MARKS for v in variants}

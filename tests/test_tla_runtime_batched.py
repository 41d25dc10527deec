"""``runtime.batched`` (off by default): one TLC simulation of runs x num behaviours; a run with an error falls
back to the seeded runs, so errors are blamed as without the option."""

from __future__ import annotations

import pytest
from sysmo.benchmarks.starter import STARTER_DIR, load_task_folder
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.check import Outcome
from sysmo.evals.cascade import ScoringContext
from sysmo.evals.cascades import tla
from sysmo.evals.metrics import tla_runtime

BROKEN = """---- MODULE Broken ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Up == x' = x + 1
Bad == x = 2 /\\ x' = x + "a"
Next == Up \\/ Bad
====
"""


@pytest.mark.slow
def test_batched_is_one_run_when_clean_and_the_seeded_runs_after_an_error() -> None:
    task = load_task_folder(STARTER_DIR / "tla" / "spinlock")
    gold = task.references.model
    config = tla_runtime.model_config(gold, task)
    batched = tla_runtime.score(gold, config, runs=3, num=10, depth=20, batched=True)
    seeded = tla_runtime.score(gold, config, runs=3, num=10, depth=20)
    assert (len(batched.runs), batched.settings["batched"]) == (1, 1)
    assert (len(seeded.runs), seeded.settings["batched"]) == (3, 0)
    assert batched.value == seeded.value == 1.0 and batched.actions == seeded.actions
    broken = Artifact(language=Language.TLA, files={"Broken.tla": BROKEN, "Broken.cfg": "INIT Init\nNEXT Next\n"})
    fallback = tla_runtime.score(broken, tla_runtime.model_config(broken), runs=3, num=5, depth=5, batched=True)
    alone = tla_runtime.score(broken, tla_runtime.model_config(broken), runs=3, num=5, depth=5)
    assert len(fallback.runs) == 3 and fallback.settings["batched"] == 0
    assert [r.model_dump(exclude={"duration_s"}) for r in fallback.runs] == \
        [r.model_dump(exclude={"duration_s"}) for r in alone.runs]
    assert fallback.error_actions == alone.error_actions != [] and fallback.outcome == Outcome.FAILED


def test_the_cascade_passes_the_option() -> None:
    task = load_task_folder(STARTER_DIR / "tla" / "spinlock")
    result = tla.runtime_stage(task.references.model, task,
                               ScoringContext(options={"runtime.batched": "true", "runtime.runs": 2,
                                                       "runtime.num": 5, "runtime.depth": 5}))
    assert result.detail["settings"]["batched"] == 1 and len(result.detail["runs"]) == 1

"""Self-checks of the starter TLA+ tasks: the TLA+ cascade's stages on the references and the buggy variants.

Every stage here is the cascade's own (``sysmo.evals.cascades.tla`` and the metric modules behind it); this
module only frames them as pass/fail checks of the suite: every reference passes every stage, and every
known-buggy variant loses exactly the stage that exposes its bug. No LLM is used: the invariant templates'
``tla_example`` definitions are written against the reference's names.

    python -m sysmo.evals.starter_tla_checks          # a table: task/variant x stage
"""

from __future__ import annotations

import sys

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import TaskError
from sysmo.evals.cascade import ScoringContext, cascade_for
from sysmo.evals.cascades import tla as tla_cascade
from sysmo.evals.metrics import tla_conformance, tla_invariants, tla_runtime
from sysmo.contracts.check import Outcome
from sysmo.tools.tla.trace_validation import ConformanceResult

STAGES = ("syntax", "runtime", "conformance", "invariants")
# the starter systems are small: one simulation shows every action, and every reference's state space is far
# below the bound (which stops a buggy variant whose state space is unbounded)
SUITE_OPTIONS = {"runtime.runs": 1, "invariants.timeout_s": 120, "invariants.max_states": 50_000}


class StageCheck(BaseModel):
    """One stage on one artifact: passed or not, and the evidence."""

    stage: str
    passed: bool
    outcome: Outcome
    detail: str = ""
    failing: list[str] = Field(default_factory=list)  # actions not covered / invariants not holding / traces


def _adhoc_task(artifact: Artifact) -> Task:
    return Task(id="starter/tla/adhoc", benchmark="starter", kind=TaskKind.TLA)


def syntax(artifact: Artifact) -> StageCheck:
    result = tla_cascade.syntax_stage(artifact, _adhoc_task(artifact), ScoringContext(options=SUITE_OPTIONS))
    return StageCheck(
        stage="syntax",
        passed=result.passed and result.value == 1.0,
        outcome=Outcome(result.outcome),
        failing=[d["name"] for d in result.detail["failing_definitions"]],
        detail="; ".join(result.detail["diagnostics"][:3]),
    )


def runtime(artifact: Artifact, num: int = 50, depth: int = 50, seed: int = 1) -> StageCheck:
    """A simulation without error in which every action of the next-state relation fires."""
    score = tla_runtime.score(
        artifact, tla_runtime.model_config(artifact), runs=1, num=num, depth=depth, seed=seed, timeout_s=60
    )
    silent = [a for a in score.actions if a not in score.covered]
    return StageCheck(
        stage="runtime",
        passed=score.passed and score.value == 1.0,
        outcome=score.outcome,
        failing=silent,
        detail=f"{len(score.covered)}/{len(score.actions)} actions covered",
    )


def conformance(artifact: Artifact, task: Task) -> tuple[StageCheck, ConformanceResult]:
    if tla_conformance.task_traces(task) is None:
        raise TaskError(f"{task.id} has no traces to check conformance on")
    score = tla_conformance.score(artifact, task, tla_runtime.model_config(artifact, task), timeout_s=60)
    result = score.result
    rejected = [f"{v.trace}@{v.first_failing_event}" for v in result.traces if not v.accepted]
    return StageCheck(
        stage="conformance",
        passed=result.score == 1.0,
        outcome=result.outcome,
        failing=rejected,
        detail=f"{result.accepted}/{len(result.traces)} traces accepted",
    ), result


def invariants(artifact: Artifact, task: Task, only: list[str] | None = None) -> StageCheck:
    templates = [t for t in task.references.invariants if only is None or t.name in only]
    score = tla_invariants.score(
        artifact,
        templates,
        tla_runtime.model_config(artifact, task),
        task_id=task.id,
        timeout_s=SUITE_OPTIONS["invariants.timeout_s"],
        max_states=SUITE_OPTIONS["invariants.max_states"],
    )
    failing = [v.name for v in score.verdicts if not v.holds]
    return StageCheck(
        stage="invariants",
        passed=not failing,
        outcome=score.outcome,
        failing=failing,
        detail=f"{len(templates) - len(failing)}/{len(templates)} hold",
    )


def all_stages(artifact: Artifact, task: Task) -> dict[str, StageCheck]:
    return {
        "syntax": syntax(artifact),
        "runtime": runtime(artifact),
        "conformance": conformance(artifact, task)[0],
        "invariants": invariants(artifact, task),
    }


def main() -> int:
    from sysmo.benchmarks.starter import load_starter_tasks

    ok = True
    cascade = cascade_for(TaskKind.TLA)
    for task in [t for t in load_starter_tasks() if t.kind.value == "tla"]:
        assert task.references.model is not None
        rows = [("reference", task.references.model, None)] + [
            (b.name, b.artifact, b.exposed_by) for b in task.references.buggy_variants
        ]
        for name, artifact, exposed_by in rows:
            card = cascade.score(artifact, task, ScoringContext(options=SUITE_OPTIONS))
            before = STAGES[: STAGES.index(exposed_by)] if exposed_by else STAGES
            good = all(card.metric(s) == 1.0 for s in before) and (
                exposed_by is None or (card.metric(exposed_by) or 0.0) < 1.0
            )
            ok &= good
            cells = "  ".join(f"{s.stage}={s.value:.2f}/{s.outcome}" for s in card.stages)
            print(f"{'ok ' if good else 'BAD'} {task.id:<32} {name:<26} {cells}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

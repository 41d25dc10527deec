"""Self-checks of the starter TLA+ tasks: syntax, runtime, conformance and invariants on the real tools.

These are the four stages of the TLA+ scoring cascade applied directly (no LLM: the invariant templates'
``tla_example`` definitions are written against the reference's names). They show that every reference
passes every stage and that every known-buggy variant loses exactly the stage that exposes its bug.

    python -m sysmo.benchmarks.starter.tla.checks          # a table: task/variant x stage
"""

from __future__ import annotations

import sys

from pydantic import BaseModel, Field

from sysmo.artifact import Artifact, Language
from sysmo.benchmarks.task import InvariantTemplate, Task
from sysmo.errors import TaskError
from sysmo.tools.result import CheckResult, Outcome
from sysmo.tools.tla import sany, tlc
from sysmo.tools.tla.cfg import parse as parse_cfg
from sysmo.tools.tla.trace_validation import ConformanceResult, validate_traces

STAGES = ("syntax", "runtime", "conformance", "invariants")
WRAPPER = "SysmoInvariant"


class StageCheck(BaseModel):
    """One stage on one artifact: passed or not, and the evidence."""

    stage: str
    passed: bool
    outcome: Outcome
    detail: str = ""
    failing: list[str] = Field(default_factory=list)  # invariants that do not hold / traces not accepted


def _main_module(artifact: Artifact) -> str:
    return (artifact.main_file or "Spec.tla").removesuffix(".tla")


def syntax(artifact: Artifact) -> StageCheck:
    result = sany.check(artifact)
    return StageCheck(stage="syntax", passed=result.ok, outcome=result.outcome, detail=result.summary(3))


def runtime(artifact: Artifact, num: int = 50, depth: int = 50, seed: int = 1) -> StageCheck:
    """A simulation without error in which every action of the next-state relation fires."""
    result = tlc.simulate(artifact, num=num, depth=depth, seed=seed, check_deadlock=True, timeout_s=60)
    coverage = tlc.report_of(result).coverage
    silent = [c.name for c in coverage if not c.covered]
    passed = result.ok and bool(coverage) and not silent
    return StageCheck(stage="runtime", passed=passed, outcome=result.outcome, failing=silent,
                      detail=f"{len(coverage) - len(silent)}/{len(coverage)} actions covered; {result.summary(2)}")


def conformance(artifact: Artifact, task: Task) -> tuple[StageCheck, ConformanceResult]:
    traces = task.references.traces
    if traces is None or not traces.files:
        raise TaskError(f"{task.id} has no traces to check conformance on")
    result = validate_traces(artifact, traces.files, timeout_s=60)
    rejected = [f"{v.trace}@{v.first_failing_event}" for v in result.traces if not v.accepted]
    return StageCheck(stage="conformance", passed=result.score == 1.0, outcome=result.outcome, failing=rejected,
                      detail=f"{result.accepted}/{len(result.traces)} traces accepted"), result


def invariant(artifact: Artifact, template: InvariantTemplate, timeout_s: float = 120) -> CheckResult:
    """Model-check one template's ``tla_example`` (safety: INVARIANT; liveness: PROPERTY under ``Spec``)."""
    module = _main_module(artifact)
    wrapper = (f"---- MODULE {WRAPPER} ----\nEXTENDS {module}, Naturals, Sequences, FiniteSets\n\n"
               f"{template.tla_example.strip()}\n====\n")
    base = parse_cfg(artifact.files.get(f"{module}.cfg", "SPECIFICATION Spec\n"))
    check = {"invariants": [template.name]} if template.type == "safety" else {"properties": [template.name]}
    cfg = base.model_copy(update={"invariants": [], "properties": [], **check})
    files = {**artifact.files, f"{WRAPPER}.tla": wrapper}
    return tlc.model_check(Artifact(language=Language.TLA, files=files), cfg, module=WRAPPER,
                           check_deadlock=False, timeout_s=timeout_s)


def invariants(artifact: Artifact, task: Task, only: list[str] | None = None) -> StageCheck:
    results = {t.name: invariant(artifact, t) for t in task.references.invariants if only is None or t.name in only}
    failing = [name for name, r in results.items() if not r.ok]
    outcomes = {r.outcome for r in results.values()}
    outcome = Outcome.FAILED if Outcome.FAILED in outcomes else (
        Outcome.INCONCLUSIVE if Outcome.INCONCLUSIVE in outcomes else
        Outcome.ERROR if Outcome.ERROR in outcomes else Outcome.OK)
    return StageCheck(stage="invariants", passed=not failing, outcome=outcome, failing=failing,
                      detail=f"{len(results) - len(failing)}/{len(results)} hold")


def all_stages(artifact: Artifact, task: Task) -> dict[str, StageCheck]:
    return {"syntax": syntax(artifact), "runtime": runtime(artifact),
            "conformance": conformance(artifact, task)[0], "invariants": invariants(artifact, task)}


def main() -> int:
    from sysmo.benchmarks.starter import load_starter_tasks

    ok = True
    for task in [t for t in load_starter_tasks() if t.kind.value == "tla"]:
        assert task.references.model is not None
        rows = [("reference", task.references.model, None)] + \
               [(b.name, b.artifact, b.exposed_by) for b in task.references.buggy_variants]
        for name, artifact, exposed_by in rows:
            stages = all_stages(artifact, task)
            expected = {s: s != exposed_by for s in STAGES}
            good = all(stages[s].passed == expected[s] for s in STAGES)
            ok &= good
            cells = "  ".join(f"{s}={'pass' if stages[s].passed else 'FAIL'}" for s in STAGES)
            print(f"{'ok ' if good else 'BAD'} {task.id:<32} {name:<26} {cells}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

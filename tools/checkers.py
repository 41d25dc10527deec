"""The check an agent runs inside its repair loop, per task kind: one ``CheckResult`` from the real tools.

- TLA+: SANY on the whole module; if it parses and a ``.cfg`` came with it, a short TLC simulation so
  runtime errors (and their error traces) reach the model too, as in SysMoBench's compile/runtime feedback.
  A simulation that ends inconclusive (time limit, heap, TLC's enumeration limits) is ``inconclusive``: not a
  pass.
- SysML v2: OpenSysML validation (strict typing codes count as errors).
- PlantUML (class and architecture diagrams): the warm PlantUML server plus our lint rules.
"""

from __future__ import annotations

import hashlib

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome, Severity

IN_LOOP_SIMULATION = {"num": 10, "depth": 30, "timeout_s": 30.0}


def artifact_seed(artifact: Artifact) -> int:
    """The in-loop simulation's seed, made from the artifact's files (names and texts): the same spec gets the same
    verdict every time it is checked, and its run is deterministic (so the run cache can serve it)."""
    digest = hashlib.blake2b(digest_size=8)
    for name in sorted(artifact.files):
        digest.update(name.encode() + b"\0" + artifact.files[name].encode() + b"\0")
    return int.from_bytes(digest.digest(), "big") % (2**31 - 1) + 1


def check_tla(artifact: Artifact, task: Task | None = None) -> CheckResult:
    from sysmo.tools.tla import sany

    module = task.inputs.module_name if task else None
    if module and f"{module}.tla" not in artifact.files:
        module = None
    parsed = sany.check(artifact, module)
    if not parsed.ok:
        return parsed
    cfgs = [n for n in artifact.files if n.endswith(".cfg")]
    if not cfgs:
        return parsed
    from sysmo.tools.tla import tlc

    # a run that ends inconclusive (its time limit, memory, TLC's enumeration limits) stays so: it is no pass,
    # and the repair request says how to make the state space finite (graphs.repair.INCONCLUSIVE_ADVICE)
    run = tlc.simulate(artifact, num=IN_LOOP_SIMULATION["num"], depth=IN_LOOP_SIMULATION["depth"],
                       timeout_s=IN_LOOP_SIMULATION["timeout_s"], module=parsed.details.get("module"),
                       seed=artifact_seed(artifact))
    run.details.setdefault("sany", {"outcome": parsed.outcome.value, "version": parsed.tool_version})
    return run


def check_sysml(artifact: Artifact, task: Task | None = None) -> CheckResult:
    from sysmo.tools.sysml.validate import validate

    return validate(artifact)


def check_plantuml(artifact: Artifact, task: Task | None = None) -> CheckResult:
    from sysmo.tools.plantuml.check import check

    return check(artifact.main_text)


def check_artifact(artifact: Artifact, task: Task | None = None) -> CheckResult:
    """Dispatch on the artifact's language; an artifact in the wrong language fails with a clear message."""
    if task is not None and artifact.language != task.language:
        return CheckResult(tool="sysmo", outcome=Outcome.FAILED, diagnostics=[Diagnostic(
            tool="sysmo", severity=Severity.ERROR, code="wrong-language",
            message=f"expected a {task.language.value} model, got {artifact.language.value}")])
    if artifact.is_empty():
        return CheckResult(tool="sysmo", outcome=Outcome.FAILED, diagnostics=[Diagnostic(
            tool="sysmo", severity=Severity.ERROR, code="empty", message="the model is empty")])
    return {Language.TLA: check_tla, Language.SYSML: check_sysml, Language.PLANTUML: check_plantuml}[artifact.language](
        artifact, task)

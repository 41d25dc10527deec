"""One invariant check by ``sysmo.tools.tla.bug_hunt`` instead of a single BFS (``strategy="hunt"``).

``strategy="hunt"`` (cascade option ``invariants.strategy``; default ``"bfs"``, SysMoBench's one BFS per
template) replaces the single BFS by ``sysmo.tools.tla.bug_hunt.hunt`` with its default work bounds
(``HuntBounds``: distinct states per BFS, simulation runs x behaviours from seed 1): BFS, then random simulation,
then BFS and simulation with smaller finite-set constants, stopping at the first counterexample (the steps taken
are in the verdict's notes). ``timeout_s`` is only the hunt's safety net, to be set well above what the bounds
take (``sysmo reproduce sysmobench``: 900 s): when it expires the check is inconclusive, so a found or
clean verdict never depends on how fast the machine was. It is for bug controls, whose bug lies deeper than BFS reaches.
"""

from __future__ import annotations

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.check import CheckResult
from sysmo.evals.metrics.tla_invariants.checks import _Check
from sysmo.evals.metrics.tla_invariants.formulas import CHECKED_NAME
from sysmo.evals.metrics.tla_invariants.verdicts import InvariantVerdict
from sysmo.tools.tla import bug_hunt


def hunted(check: _Check, files: dict[str, str], timeout_s: float, bounded: str,
           ) -> tuple[CheckResult, InvariantVerdict]:
    """The escalating search's last TLC result for ``check`` and the verdict it gives, with the steps taken."""
    found = bug_hunt.hunt(
        Artifact(language=Language.TLA, files=files),
        check.config,
        ("property" if check.as_property else "invariant", CHECKED_NAME),
        module=check.module,
        budget_s=timeout_s,
    )
    verdict = check.verdict(found.result, bounded)
    verdict.notes += found.notes()
    verdict.duration_s = found.seconds
    return found.result, verdict

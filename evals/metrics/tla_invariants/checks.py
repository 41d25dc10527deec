"""One concretised template ready for TLC (its cfg, its constraint guard), and what a grouped TLC run says of it.

Checking: the formula is defined as ``SysmoInvariant`` in a module ``SysmoInv<k>`` extending the model, and
TLC model-checks that one name: a safety template whose formula is a state predicate under INVARIANT;
liveness templates and temporal safety formulas (``[][A]_v``) under PROPERTY, with the model's own
specification formula (its fairness) even when its cfg names INIT/NEXT. Deadlocks are not reported.

State-constraint templates: a safety template that is a conjunct of the model's own state CONSTRAINT (raftkvs's
``LimitTerm`` and ``LimitCommitIndex`` are conjuncts of its ``MCConstraint``) is a bound on the explored
state space, not a property: TLC checks invariants on every generated state, including the boundary states it
prunes afterwards for violating the constraint, so checked alone it always fails on the model that defines it.
It is checked as ``Constraint => T`` (the conjunction of the cfg's CONSTRAINTs implies it), which holds exactly
when it holds on every state TLC explores further; the verdict's notes say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sysmo.contracts.check import CheckResult, Outcome
from sysmo.contracts.task import InvariantTemplate
from sysmo.evals.metrics.tla_invariants.formulas import (
    CHECKED_NAME,
    IDENT,
    STANDARD_MODULES,
    TEMPORAL,
    Candidate,
)
from sysmo.evals.metrics.tla_invariants.verdicts import InvariantVerdict, _verdict
from sysmo.evals.metrics.tla_runtime import without_checks
from sysmo.evals.metrics.tla_syntax import blank_comments
from sysmo.tools.tla import cfg as tlc_cfg
from sysmo.tools.tla import tlc

DEFINITION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)[ \t]*==(.*?)(?=^\S|\Z)", re.DOTALL | re.MULTILINE)


def _parse_failure(result: CheckResult) -> bool:
    return any(v.kind == "parse" for v in tlc.report_of(result).violations)


def _check_config(
    config: tlc_cfg.TlcConfig, spec_operators: set[str], as_property: bool, liveness: bool
) -> tuple[tlc_cfg.TlcConfig, list[str]]:
    notes = []
    base = without_checks(config)
    if liveness and base.specification is None and "Spec" in spec_operators:
        base = base.model_copy(update={"specification": "Spec", "init": None, "next": None})
        notes.append("checked under SPECIFICATION Spec (the model's fairness), not the cfg's INIT/NEXT")
    checked = base.model_copy(
        update={"properties": [CHECKED_NAME]} if as_property else {"invariants": [CHECKED_NAME]}
    )
    return checked, notes


def _definition_bodies(texts: list[str]) -> dict[str, str]:
    """Top-level ``Name == body`` definitions (no parameters) of the given module texts, comments blanked."""
    bodies: dict[str, str] = {}
    for text in texts:
        for match in DEFINITION.finditer(blank_comments(text, strings=True)):
            bodies.setdefault(match.group(1), match.group(2))
    return bodies


def constraint_conjuncts(constraints: list[str], texts: list[str]) -> set[str]:
    """Names that are conjuncts of the given CONSTRAINT operators, followed through named conjunctions."""
    bodies = _definition_bodies(texts)
    found: set[str] = set()
    pending = list(constraints)
    while pending:
        name = pending.pop()
        for conjunct in re.split(r"/\\", bodies.get(name, "")):
            conjunct = conjunct.strip().strip("()").strip()
            if IDENT.fullmatch(conjunct) and conjunct not in found:
                found.add(conjunct)
                pending.append(conjunct)
    return found


def _under_constraint(
    template: InvariantTemplate, candidate: Candidate, wrapper: str, constraints: list[str], conjuncts: set[str]
) -> tuple[Candidate, str] | None:
    """The candidate checked as ``Constraint => T`` when the template is a conjunct of the cfg's CONSTRAINT."""
    body = candidate.body.strip()
    if template.type != "safety" or candidate.possibility or candidate.temporal:
        return None
    if template.name not in conjuncts and not (IDENT.fullmatch(body) and body in conjuncts):
        return None
    constraint = " /\\ ".join(constraints)
    guarded = candidate.model_copy(update={"body": f"({constraint}) =>\n    ({body})"})
    return guarded, wrapper.replace(candidate.definitions(), guarded.definitions())


@dataclass
class _Check:
    """One concretised template, ready for TLC: its formula, its wrapper module and the cfg it runs under."""

    index: int
    template: InvariantTemplate
    candidate: Candidate
    wrapper: str
    source: str
    notes: list[str]
    as_property: bool
    config: tlc_cfg.TlcConfig
    cfg_notes: list[str]

    @property
    def module(self) -> str:
        return re.search(r"MODULE (\w+)", self.wrapper).group(1)  # type: ignore[union-attr]

    @property
    def standard(self) -> bool:
        return f", {STANDARD_MODULES}\n" in self.wrapper.split("\n\n", 1)[0] + "\n"

    def verdict(self, result: CheckResult, bounded: str, extra: list[str] | None = None) -> InvariantVerdict:
        return _verdict(self.template, result, self.as_property, self.candidate, self.source,
                        self.notes + self.cfg_notes + (extra or []), bounded)


def groupable(check: _Check) -> bool:
    """A safety template TLC names when it is violated: a state predicate (INVARIANT), or ``[]P`` / ``[][A]_v``
    under PROPERTY with nothing temporal inside. Possibility checks (expected to be violated at once) and
    liveness properties (TLC does not say which temporal property failed) are checked alone."""
    candidate = check.candidate
    if check.template.type != "safety" or candidate.possibility:
        return False
    if not candidate.temporal:
        return True
    body = blank_comments(candidate.body, strings=True).strip()
    helpers = blank_comments("\n".join(candidate.helpers), strings=True)
    return body.startswith("[]") and not TEMPORAL.search(body[2:]) and not TEMPORAL.search(helpers)


def liveness_groupable(check: _Check) -> bool:
    """A liveness template expected to hold, checked under PROPERTY: several such are checked in one TLC run
    (``group_liveness``); a violation, which TLC does not pin on one property, sends each to a run alone."""
    return (check.template.type == "liveness" and check.as_property and not check.candidate.possibility
            and check.template.expected != "violated")


def _attributed(result: CheckResult, names: dict[str, _Check]) -> _Check | None:
    """The one template of a grouped run that TLC reports violated, if the run failed on exactly that."""
    if result.outcome != Outcome.FAILED:
        return None
    violations = tlc.report_of(result).violations
    failing = [v for v in violations if v.kind in tlc.FAILING_KINDS | tlc.ERROR_KINDS]
    named = {v.name for v in failing if v.kind in ("invariant", "property", "action-property")}
    if len(named) != 1 or len(failing) != sum(v.name in named for v in failing):
        return None
    return names.get(next(iter(named)))


def _temporal_violation(result: CheckResult) -> bool:
    """The run failed on a violated temporal property and nothing else."""
    failing = [v for v in tlc.report_of(result).violations if v.kind in tlc.FAILING_KINDS | tlc.ERROR_KINDS]
    return result.outcome == Outcome.FAILED and bool(failing) and all(v.kind == "property" for v in failing)

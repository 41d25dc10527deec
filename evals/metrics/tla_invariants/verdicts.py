"""Per-template verdicts of the TLA+ invariant score: what a TLC run means for a template, and the score.

A template the modelled system is documented to violate (``expected="violated"``, e.g. locksvc's
NoPriorityInversion, see ``benchmarks/sysmobench.KNOWN_VIOLATIONS``) counts as holding when TLC finds the
violation, and as failed when the property holds: the model then hides the system's real behaviour.

Outcomes: ``ok`` (holds), ``failed`` (violated, with the counterexample's length), ``inconclusive`` (time
or state bound: reported, counted as not holding, never a pass), ``error`` (no formula, or TLC could not
evaluate it). Score = holding / templates.

Counting a bounded check (``bounded``, cascade option ``invariants.bounded``): ``"harness"`` (default) counts
a check that TLC ran until the time limit without finding a violation (nor an evaluation error) as holding,
as SysMoBench's harness does (its ``runtime_check.py`` treats ``subprocess.TimeoutExpired`` with no violation
or deadlock in the output as success, and ``manual_invariant_evaluator.py`` counts that template as passed):
the paper's figures are computed that way, and a gold model whose state space outgrows the time limit keeps
full marks. For a template the system is documented to violate, a time-out without the violation also counts
as passed under ``"harness"`` (the harness has no such notion: its check just finds no violation).
``"strict"`` keeps such a check ``inconclusive`` (never a pass). ``"sysmo"`` (the ``sysmo`` scoring mode's default,
with a state bound, ``SYSMO_MAX_STATES``, and a generous wall-clock limit, ``SYSMO_TIMEOUT_S``): the state bound,
which TLC honours deterministically with one worker, ends a check, not the clock. A state predicate (INVARIANT,
not a possibility) that TLC checked on every state up to the bound without a violation holds *within the bound*
(``WITHIN_BOUND_NOTE`` in its notes), and so does a temporal property (liveness, ``[][A]_v``) for which TLC found
no counterexample in the graph explored up to the bound (the frontier states look like stuttering, which can only
add counterexamples: one found under the bound is ``inconclusive``); a possibility, or a template the system is
documented to violate, whose check stops at the bound stays ``inconclusive`` (it may lie beyond); a check that still
reaches the wall-clock limit is ``inconclusive``, never holding (docs/tla-verdicts.md). The harness runs each template alone, with
``-deadlock`` (no deadlock check, as here), under the model's cfg, with a per-check limit of 60 s
(``ManualInvariantEvaluator(tlc_timeout=60)``), sysmo's default too (``timeout_s``, cascade option
``invariants.timeout_s``; it was 120 s, which changed no score of the 13 PGo gold and example specs and made a
time-out cost twice the harness's). The verdict says which it was (``notes``,
``reason``); state/depth bounds, resource exhaustion and early exits are never counted as holding.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from sysmo.contracts.check import CheckResult, Outcome
from sysmo.contracts.task import InvariantTemplate
from sysmo.evals.metrics.tla_invariants.formulas import Candidate
from sysmo.evals.metrics.tla_invariants.settings import DEFAULT_BOUNDED, DEFAULT_TIMEOUT_S, WITHIN_BOUND_NOTE
from sysmo.tools.tla import tlc

class InvariantVerdict(BaseModel):
    name: str
    type: Literal["safety", "liveness"]
    outcome: Outcome
    source: Literal["template", "helper", "none"] = "none"
    formula: str | None = None  # the definitions TLC checked (``SysmoInvariant == ...``)
    checked_as: Literal["INVARIANT", "PROPERTY", "POSSIBLE"] | None = None
    reason: str = ""
    counterexample_states: int | None = None
    distinct_states: int | None = None
    duration_s: float = 0.0
    notes: list[str] = Field(default_factory=list)

    @property
    def holds(self) -> bool:
        return self.outcome == Outcome.OK


class InvariantsScore(BaseModel):
    verdicts: list[InvariantVerdict] = Field(default_factory=list)
    tlc_version: str = ""
    sany_version: str = ""
    helper_model: str | None = None
    cfg_notes: list[str] = Field(default_factory=list)
    bounded: str = DEFAULT_BOUNDED  # how a time-out without violation was counted (module doc)
    max_states: int | None = None  # the state bound of every check (None: none)
    max_states_temporal: int | None = None  # the bound of a run with temporal properties (None: max_states)
    timeout_s: float = DEFAULT_TIMEOUT_S  # the wall-clock limit of every check

    @property
    def value(self) -> float:
        return sum(v.holds for v in self.verdicts) / len(self.verdicts) if self.verdicts else 0.0

    def count(self, outcome: Outcome) -> int:
        return sum(v.outcome == outcome for v in self.verdicts)

    @property
    def outcome(self) -> Outcome:
        """failed if any invariant is violated; else inconclusive if any hit a bound; else error; else ok."""
        for worst in (Outcome.FAILED, Outcome.INCONCLUSIVE, Outcome.ERROR):
            if self.count(worst):
                return worst
        return Outcome.OK if self.verdicts else Outcome.ERROR


def _verdict(
    template: InvariantTemplate,
    result: CheckResult,
    as_property: bool,
    candidate: Candidate,
    source: str,
    notes: list[str],
    bounded: str = DEFAULT_BOUNDED,
) -> InvariantVerdict:
    report = tlc.report_of(result)
    verdict = InvariantVerdict(
        name=template.name,
        type=template.type,
        source=source,  # type: ignore[arg-type]
        formula=candidate.definitions(),
        checked_as="PROPERTY" if as_property else "INVARIANT",
        outcome=result.outcome,
        duration_s=result.duration_s,
        notes=notes,
        reason=str(result.details.get("reason", "")),
        distinct_states=report.distinct_states,
    )
    if result.outcome == Outcome.FAILED:
        kinds = {v.kind for v in report.violations}
        bound = result.details.get("bound_hit")
        if kinds & {"invariant", "property", "action-property"} and as_property and bound:
            # states cut off by the bound have no successors, so they look like stuttering forever:
            # a temporal counterexample found under a bound may be an artefact of the bound
            verdict.outcome = Outcome.INCONCLUSIVE
            verdict.counterexample_states = len(report.trace) or None
            verdict.reason = (
                f"a temporal counterexample was found, but under a bound ({bound}): not conclusive"
            )
        elif kinds & {"invariant", "property", "action-property"}:
            verdict.counterexample_states = len(report.trace) or None
            verdict.reason = f"violated; counterexample of {len(report.trace)} states"
        else:  # the model or the formula could not be evaluated: no verdict on the property
            verdict.outcome = Outcome.ERROR
            verdict.reason = f"TLC could not evaluate it: {result.summary(2)[:500]}"
    elif result.outcome == Outcome.ERROR and result.details.get("early_exit"):
        verdict.reason = f"not checked to the end: {result.details.get('reason', '')}"
    elif result.outcome == Outcome.ERROR:
        verdict.reason = f"TLC did not run the check: {result.summary(2)[:500]}"
    if template.expected == "violated":  # the system violates it: the model should show that violation
        if verdict.outcome == Outcome.FAILED:
            verdict.outcome = Outcome.OK
            verdict.reason = (f"violated, as the modelled system is documented to violate it "
                              f"({template.expected_source[:200]}); counterexample of "
                              f"{verdict.counterexample_states} states")
        elif verdict.outcome == Outcome.OK:
            verdict.outcome = Outcome.FAILED
            verdict.reason = f"holds, but the modelled system violates it ({template.expected_source[:200]})"
    if (bounded == "sysmo" and verdict.outcome == Outcome.INCONCLUSIVE and result.details.get("bound_hit")
            and not result.details.get("timed_out") and not report.violations
            and not candidate.possibility and template.expected != "violated"):
        # checked on the state graph explored up to a deterministic state/depth bound, with no violation: it
        # holds there (the deterministic counterpart of the harness's time-out rule). For a temporal property
        # the bound's frontier states look like stuttering, which can only add counterexamples, never hide one
        # inside the explored graph; a counterexample found under the bound is inconclusive (above). A
        # possibility or an expected violation not found within the bound may lie beyond it: inconclusive.
        verdict.outcome = Outcome.OK
        verdict.reason = (f"holds within the bound: {result.details.get('bound_hit')}, no violation "
                          f"(invariants.bounded=sysmo; the bound, not the clock, ended the check)")
        verdict.notes.append(f"{WITHIN_BOUND_NOTE} ({report.distinct_states} distinct states)")
        return verdict
    if bounded == "sysmo" and verdict.outcome == Outcome.INCONCLUSIVE and result.details.get("timed_out"):
        verdict.reason = (f"inconclusive: the wall-clock limit ({result.duration_s:.0f} s) ended the check "
                          f"before its state bound ({report.distinct_states} distinct states); a time-out is "
                          f"never counted as holding (invariants.bounded=sysmo)")
    if (bounded == "harness" and verdict.outcome == Outcome.INCONCLUSIVE and result.details.get("timed_out")
            and not result.details.get("bound_hit") and not report.violations):
        verdict.outcome = Outcome.OK
        verdict.reason = (f"no violation within the time limit ({result.duration_s:.0f} s, "
                          f"{report.distinct_states} distinct states): counted as holding, as SysMoBench's "
                          f"harness counts a time-out (invariants.bounded=harness; strict: inconclusive)")
        verdict.notes.append("bounded=harness: time-out without violation counted as holding")
        return verdict
    if candidate.possibility:  # ``~ENABLED step`` violated = a reachable state where the step can happen
        verdict.checked_as = "POSSIBLE"
        if verdict.outcome == Outcome.FAILED:
            verdict.outcome, verdict.counterexample_states = Outcome.OK, None
            verdict.reason = f"possible: TLC reached a state where the step is enabled ({len(report.trace)} states)"
        elif verdict.outcome == Outcome.OK:
            verdict.outcome = Outcome.FAILED
            verdict.reason = "never possible: no reachable state enables the step"
    return verdict

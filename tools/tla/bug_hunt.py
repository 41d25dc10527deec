"""Looking for a violation of one check with a fixed amount of work: BFS, then random simulation, then smaller constants.

Exhaustive breadth-first search answers "does it hold" but can stop long before it reaches a bug a dozen
steps deep (SysMoBench's redisraft bug spec: 3 servers, ~10^7 states to depth 12). A bug hunt escalates and
stops at the first counterexample; every step is bounded by work (``HuntBounds``), never by seconds, so the
same hunt takes the same steps and gives the same verdict on a quiet machine and on a loaded one:

1. ``bfs``: TLC model-checks the check under the cfg as given, up to ``bfs_states`` distinct states (a
   complete clean run ends the hunt: the check holds in the whole state space, there is nothing to find;
   another error on the way, such as the evaluation error redisraft's spec meets at depth 12, does not);
2. ``simulate``: TLC ``-simulate`` runs of ``sim_behaviours`` random behaviours each, at most ``depth`` steps,
   seeds ``seed``, ``seed + 1``, ... for ``sim_runs`` runs (one TLC worker each, so a seed fixes them), same
   constants (safety checks only: a random finite behaviour proves nothing about a liveness property). TLC
   ends a run early at the first evaluation error of any behaviour; the next run starts with the next seed;
3. ``smaller-constants``: BFS (``smaller_bfs_states``) then, for safety checks, simulation
   (``smaller_sim_runs`` runs, the same seeds) with one finite-set constant cut to fewer elements
   (``Server = {1, 2, 3}`` -> ``{1, 2}``), one constant at a time, largest set first. A counterexample found there is a real behaviour of the specification,
   for that smaller instance; the step and the constants used are recorded in the result, so the verdict
   says which instance was violated.

Temporal properties are checked once, on the explored graph (``-lncheck final``: not whenever TLC's
minute-long liveness timer fires), as TLC checks them under a cfg's own CONSTRAINT. TLC
runs with one worker by default: with more, which states a bounded search reaches depends on thread timing.

``budget_s`` is only a safety net against a run that takes far longer than its bounds suggest: when it
expires the hunt stops and is ``inconclusive`` whatever the steps so far showed, never "found nothing". A
hunt that finds nothing within its bounds is ``inconclusive`` too, with what each step explored.

>>> result = hunt(spec_text, cfg_text, ("invariant", "Safe"))
>>> result.found, result.strategy, result.constants, result.counterexample_states
(True, 'smaller-constants', ['Server = {1, 2}', ...], 15)
"""

from __future__ import annotations

import re
import time
from typing import Literal

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome, Severity
from sysmo.log import get_logger
from sysmo.tools.tla import tlc
from sysmo.tools.tla.cfg import TlcConfig, make_compatible
from sysmo.tools.tla.source import prepare

log = get_logger(__name__)

Strategy = Literal["bfs", "simulate", "smaller-constants"]
CheckKind = Literal["invariant", "property"]
VIOLATION_KINDS = {"invariant", "property", "action-property"}
DEFAULT_BUDGET_S = 1800.0
GENERATED = re.compile(r"([\d,]+) states generated")
SET_CONSTANT = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*=\s*\{(?P<body>.*)\}$", re.DOTALL)


class HuntBounds(BaseModel):
    """The work each step of a hunt may do (see the module doc); the defaults find every SysMoBench bug spec."""

    bfs_states: int = Field(100_000, ge=1, description="distinct-state bound of the BFS with the cfg's constants")
    smaller_bfs_states: int = Field(100_000, ge=1, description="distinct-state bound of each smaller-constants BFS")
    sim_runs: int = Field(4, ge=1, description="TLC simulation runs with the cfg's constants (seeds seed, seed + 1, ...)")
    smaller_sim_runs: int = Field(4, ge=1, description="TLC simulation runs with each smaller set of constants")
    sim_behaviours: int = Field(20_000, ge=1, description="random behaviours per simulation run")
    depth: int = Field(100, ge=2, description="longest simulated behaviour (steps)")
    seed: int = Field(1, description="seed of a simulation step's first run")


class HuntStep(BaseModel):
    """One TLC run of a hunt: what it tried, within which bound, how far it got."""

    strategy: Strategy
    outcome: Outcome
    reason: str = ""
    seconds: float = 0.0
    bound: str = ""
    constants: list[str] = Field(default_factory=list)
    seeds: list[int] = Field(default_factory=list)
    distinct_states: int | None = None
    generated_states: int | None = None
    depth: int | None = None
    counterexample_states: int | None = None

    @property
    def states_per_s(self) -> float | None:
        states = self.distinct_states or self.generated_states
        return states / self.seconds if states and self.seconds > 0 else None

    def line(self) -> str:
        reach = [f"{self.distinct_states} distinct states" if self.distinct_states is not None else "",
                 f"{self.generated_states} generated" if self.generated_states is not None else "",
                 f"depth {self.depth}" if self.depth is not None else ""]
        where = f" with {', '.join(self.constants)}" if self.strategy == "smaller-constants" else ""
        shown = ", ".join(r for r in reach if r)
        return (f"{self.strategy}{where} ({self.bound}): {self.outcome.value} in {self.seconds:.1f} s"
                f"{' (' + shown + ')' if shown else ''}; {self.reason}")

    def key(self) -> tuple:
        """What the step did and found, without its seconds: equal for the same hunt at any load."""
        return (self.strategy, self.outcome.value, tuple(self.constants), tuple(self.seeds), self.distinct_states,
                self.generated_states, self.depth, self.counterexample_states)


class HuntResult(BaseModel):
    """The decisive TLC result (the violation, or the last run), and every step taken."""

    check: str
    kind: CheckKind
    result: CheckResult
    steps: list[HuntStep] = Field(default_factory=list)
    bounds: HuntBounds
    budget_s: float
    safety_net_expired: bool = False

    @property
    def found(self) -> bool:
        return _is_violation(self.result)

    @property
    def strategy(self) -> Strategy | None:
        return self.steps[-1].strategy if self.found else None

    @property
    def constants(self) -> list[str]:
        return self.steps[-1].constants if self.steps else []

    @property
    def counterexample_states(self) -> int | None:
        return len(tlc.report_of(self.result).trace) or None if self.found else None

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    def notes(self) -> list[str]:
        return [f"hunt step {i + 1}: {s.line()}" for i, s in enumerate(self.steps)]


def shrink_candidates(constants: list[str], minimum: int = 2) -> list[tuple[int, str]]:
    """(index, smaller assignment) for each ``Name = {a, b, c, ...}`` of more than ``minimum`` plain elements.

    The set keeps its first ``minimum`` elements. Largest sets first. Nested or computed values are left alone.
    """
    found: list[tuple[int, int, str]] = []
    for index, assignment in enumerate(constants):
        match = SET_CONSTANT.match(assignment.strip())
        if not match or re.search(r"[{}\[\]()<>]", match.group("body")):
            continue
        elements = [e.strip() for e in match.group("body").split(",") if e.strip()]
        if len(elements) > minimum:
            found.append((len(elements), index, f"{match.group('name')} = {{{', '.join(elements[:minimum])}}}"))
    return [(index, text) for _, index, text in sorted(found, key=lambda f: (-f[0], f[1]))]


def _is_violation(result: CheckResult) -> bool:
    return result.outcome == Outcome.FAILED and bool(
        {v.kind for v in tlc.report_of(result).violations} & VIOLATION_KINDS)


def _step(strategy: Strategy, result: CheckResult, bound: str, constants: list[str],
          seeds: list[int] | None = None, generated: int | None = None) -> HuntStep:
    report = tlc.report_of(result)
    reason = str(result.details.get("reason", ""))
    if result.outcome == Outcome.FAILED and not _is_violation(result) and report.violations:
        # TLC stopped at something other than a violated check (an evaluation error, a deadlock): say which,
        # so "failed" in a hunt step is never read as the bug being found
        first = report.violations[0]
        message = first.message
        shown = message if len(message) <= 160 else message[:160] + "..."
        reason = f"not a violation of the check: TLC stopped on an error ({first.kind}): {shown}"
    return HuntStep(strategy=strategy, outcome=result.outcome, reason=reason, seconds=round(result.duration_s, 2),
                    bound=bound, constants=constants, seeds=seeds or [], distinct_states=report.distinct_states,
                    generated_states=generated if generated is not None else report.states_generated,
                    depth=report.depth, counterexample_states=len(report.trace) or None)


class _Clock:
    """The hunt's safety net: the wall-clock time left, and whether a run was stopped by it."""

    def __init__(self, budget_s: float) -> None:
        self.end = time.monotonic() + budget_s
        self.expired = False

    def left(self) -> float:
        return self.end - time.monotonic()

    def note(self, result: CheckResult) -> CheckResult:
        if result.details.get("timed_out") or self.left() <= 0:
            self.expired = True
        return result


def _bfs(source: Artifact | str, config: TlcConfig, kind: CheckKind, max_states: int, clock: _Clock,
         module: str | None, check_deadlock: bool, workers: int) -> CheckResult:
    """BFS up to ``max_states`` distinct states (temporal properties checked once, on the explored graph)."""
    return clock.note(tlc.model_check(source, config, module=module, check_deadlock=check_deadlock,
                                      workers=workers, max_states=max_states, liveness_at_end=kind == "property",
                                      timeout_s=max(1.0, clock.left())))


def _generated(result: CheckResult) -> int:
    """States a simulation run generated (its last progress line: simulation counts no distinct states)."""
    counts = GENERATED.findall(result.raw_output or "")
    return int(counts[-1].replace(",", "")) if counts else tlc.report_of(result).states_generated or 0


def _simulate(source: Artifact | str, config: TlcConfig, bounds: HuntBounds, runs: int, clock: _Clock,
              module: str | None, check_deadlock: bool, workers: int) -> tuple[CheckResult, list[int], int]:
    """Up to ``runs`` runs of ``sim_behaviours`` behaviours of at most ``depth`` steps, seeds ``seed``,
    ``seed + 1``, ...; the first violation ends it.

    Returns the last run's result, the seeds run and the states all runs generated.
    """
    seeds: list[int] = []
    generated = 0
    result: CheckResult | None = None
    for run in range(runs):
        seed = bounds.seed + run
        result = clock.note(tlc.simulate(source, config, num=bounds.sim_behaviours, depth=bounds.depth, seed=seed,
                                         coverage=False, module=module, check_deadlock=check_deadlock,
                                         find_violation=True, workers=workers, timeout_s=max(1.0, clock.left())))
        seeds.append(seed)
        generated += _generated(result)
        log.info("bug_hunt.simulation", seed=seed, depth=bounds.depth, outcome=result.outcome.value,
                 seconds=round(result.duration_s, 1), violation=_is_violation(result))
        if _is_violation(result) or clock.expired or result.outcome == Outcome.ERROR:
            break
    assert result is not None  # sim_runs >= 1
    if len(seeds) > 1:
        result.details["reason"] = (f"{result.details.get('reason', '')} ({len(seeds)} simulation runs, seeds "
                                    f"{seeds[0]}..{seeds[-1]}, {generated} states generated)")
    return result, seeds, generated


def hunt(
    source: Artifact | str,
    cfg: str | TlcConfig | None,
    check: tuple[CheckKind, str],
    *,
    module: str | None = None,
    bounds: HuntBounds | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
    workers: int = 1,
    check_deadlock: bool = False,
    strategies: tuple[Strategy, ...] = ("bfs", "simulate", "smaller-constants"),
) -> HuntResult:
    """Look for a violation of ``check`` (("invariant"|"property", name)) within ``bounds`` (see the module doc).

    ``cfg`` is the model's configuration (its own checks are replaced by ``check``); ``workers`` TLC worker
    threads per run (1: the same result at any load); ``budget_s`` the wall-clock safety net, whose expiry
    makes the hunt inconclusive.
    """
    bounds = bounds or HuntBounds()
    kind, name = check
    spec = prepare(source, module)
    base = make_compatible(tlc._cfg_for(spec, cfg)).config
    single = base.only(prop=name) if kind == "property" else base.only(invariant=name)
    plan = [s for s in strategies if not (s == "simulate" and kind == "property")]
    clock = _Clock(budget_s)
    steps: list[HuntStep] = []
    last: CheckResult | None = None

    def sim_bound(runs: int) -> str:
        return f"{runs} runs x {bounds.sim_behaviours} behaviours, depth {bounds.depth}, seeds from {bounds.seed}"

    options = {"module": module, "check_deadlock": check_deadlock, "workers": workers}

    for strategy in plan:
        if clock.expired:
            break
        if strategy == "bfs":
            last = _bfs(source, single, kind, bounds.bfs_states, clock, **options)
            steps.append(_step(strategy, last, f"{bounds.bfs_states} states", single.constants))
            # stop at a violation, a complete clean search or a spec TLC does not accept; an evaluation
            # error or a deadlock on the way does not end the hunt (simulation may go past it)
            if _is_violation(last) or last.outcome in (Outcome.OK, Outcome.ERROR):
                break
        elif strategy == "simulate":
            last, seeds, generated = _simulate(source, single, bounds, bounds.sim_runs, clock, **options)
            steps.append(_step(strategy, last, sim_bound(bounds.sim_runs), single.constants, seeds, generated))
            if _is_violation(last):
                break
        else:
            for index, smaller in shrink_candidates(single.constants):
                if clock.expired:
                    break
                constants = [smaller if i == index else c for i, c in enumerate(single.constants)]
                reduced = single.model_copy(update={"constants": constants})
                result = _bfs(source, reduced, kind, bounds.smaller_bfs_states, clock, **options)
                steps.append(_step(strategy, result, f"{bounds.smaller_bfs_states} states", constants))
                if not _is_violation(result) and result.outcome not in (Outcome.OK, Outcome.ERROR) \
                        and kind == "invariant" and not clock.expired:
                    # BFS stopped at another error, or at its bound: random behaviours may go past it
                    result, seeds, generated = _simulate(source, reduced, bounds, bounds.smaller_sim_runs, clock,
                                                         **options)
                    steps.append(_step(strategy, result, sim_bound(bounds.smaller_sim_runs), constants, seeds,
                                       generated))
                last = result if _is_violation(result) or last is None else last
                if _is_violation(result):
                    break
            if last is not None and _is_violation(last):
                break
    if last is None:
        raise ValueError(f"no hunt step ran (strategies {strategies!r}, safety net {budget_s} s)")
    outcome = HuntResult(check=name, kind=kind, result=last, steps=steps, bounds=bounds, budget_s=budget_s,
                         safety_net_expired=clock.expired)
    if clock.expired and not outcome.found:
        reason = (f"the hunt's wall-clock safety net of {budget_s:g} s expired before its bounds were used: "
                  "inconclusive; " + "; ".join(s.line() for s in steps))
        outcome.result = last.model_copy(update={"outcome": Outcome.INCONCLUSIVE,
                                                 "details": {**last.details, "reason": reason}})
    elif outcome.found and outcome.strategy == "smaller-constants":
        last.diagnostics.append(Diagnostic(
            tool=tlc.TOOL, severity=Severity.INFO, code="smaller-constants",
            message=f"violated with smaller constants: {', '.join(outcome.constants)}"))
    # a deadlock or an evaluation error stays "failed" (the spec is wrong); a hunt that used its bounds
    # without finding anything is inconclusive, with what each step explored
    elif not outcome.found and last.outcome not in (Outcome.OK, Outcome.FAILED) and len(steps) > 1:
        outcome.result = last.model_copy(update={"outcome": Outcome.INCONCLUSIVE, "details": {
            **last.details, "reason": "no violation found within the hunt's bounds: "
            + "; ".join(s.line() for s in steps)}})
    log.info("bug_hunt.done", check=name, found=outcome.found, strategy=outcome.strategy,
             seconds=round(outcome.seconds, 1), steps=len(steps), safety_net_expired=clock.expired)
    return outcome

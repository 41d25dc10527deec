"""Looking for a violation of one check within a wall-clock budget: BFS, then random simulation, then smaller constants.

Exhaustive breadth-first search answers "does it hold" but can run out of time long before it reaches a bug
a dozen steps deep (SysMoBench's redisraft bug spec: 3 servers, ~10^7 states to depth 12). A bug hunt
escalates, each step with a share of the budget, and stops at the first counterexample:

1. ``bfs``: TLC model-checks the check under the cfg as given (a complete clean run ends the hunt: the check
   holds in the whole state space, there is nothing to find; another error on the way, such as the
   evaluation error redisraft's spec meets at depth 12, does not);
2. ``simulate``: TLC ``-simulate`` random behaviours of at most ``depth`` steps, same constants (safety
   checks only: a random finite behaviour proves nothing about a liveness property). A run that TLC ends
   early without the violation (it stops at the first deadlock or evaluation error of any behaviour) is
   started again with the next seed until the step's time is used;
3. ``smaller-constants``: BFS again, then (safety checks) simulation, with one finite-set constant cut to
   fewer elements (``Server = {1, 2, 3}`` -> ``{1, 2}``), one constant at a time, largest set first. A counterexample found there is a
   real behaviour of the specification, for that smaller instance; the step and the constants used are
   recorded in the result, so the verdict says which instance was violated.

A hunt that finds nothing is ``inconclusive`` with what each step explored (distinct states, depth,
states per second): enough to tell what budget a complete search would need.

>>> result = hunt(spec_text, cfg_text, ("invariant", "Safe"), budget_s=120)
>>> result.found, result.strategy, result.constants, result.counterexample_states
(True, 'smaller-constants', ['Server = {1, 2}', ...], 15)
"""

from __future__ import annotations

import re
import time
from typing import Literal

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact
from sysmo.log import get_logger
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome, Severity
from sysmo.tools.tla import tlc
from sysmo.tools.tla.cfg import TlcConfig, make_compatible
from sysmo.tools.tla.source import prepare

log = get_logger(__name__)

Strategy = Literal["bfs", "simulate", "smaller-constants"]
CheckKind = Literal["invariant", "property"]
VIOLATION_KINDS = {"invariant", "property", "action-property"}
DEFAULT_SHARES: dict[str, float] = {"bfs": 0.15, "simulate": 0.1, "smaller-constants": 0.75}
DEFAULT_DEPTH = 100
DEFAULT_SEED = 1
MIN_STEP_S = 5.0
SMALLER_BFS_SHARE = 0.25  # of a smaller-constants step, for BFS (safety checks); the rest simulates
SET_CONSTANT = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*=\s*\{(?P<body>.*)\}$", re.DOTALL)


class HuntStep(BaseModel):
    """One TLC run of a hunt: what it tried, how long, how far it got."""

    strategy: Strategy
    outcome: Outcome
    reason: str = ""
    seconds: float = 0.0
    budget_s: float = 0.0
    constants: list[str] = Field(default_factory=list)
    distinct_states: int | None = None
    generated_states: int | None = None
    depth: int | None = None

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
        return (f"{self.strategy}{where}: {self.outcome.value} in {self.seconds:.1f}/{self.budget_s:.0f} s"
                f"{' (' + shown + ')' if shown else ''}; {self.reason}")


class HuntResult(BaseModel):
    """The decisive TLC result (the violation, or the last run), and every step taken."""

    check: str
    kind: CheckKind
    result: CheckResult
    steps: list[HuntStep] = Field(default_factory=list)
    budget_s: float

    @property
    def found(self) -> bool:
        return self.result.outcome == Outcome.FAILED and bool(
            {v.kind for v in tlc.report_of(self.result).violations} & VIOLATION_KINDS)

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


def _step(strategy: Strategy, result: CheckResult, budget_s: float, constants: list[str]) -> HuntStep:
    report = tlc.report_of(result)
    reason = str(result.details.get("reason", ""))
    if result.outcome == Outcome.FAILED and not _is_violation(result) and report.violations:
        # TLC stopped at something other than a violated check (an evaluation error, a deadlock): say which,
        # so "failed" in a hunt step is never read as the bug being found
        first = report.violations[0]
        message = first.message
        shown = message if len(message) <= 160 else message[:160] + "..."
        reason = f"not a violation of the check: TLC stopped on an error ({first.kind}): {shown}"
    return HuntStep(strategy=strategy, outcome=result.outcome, reason=reason,
                    seconds=round(result.duration_s, 2), budget_s=round(budget_s, 1), constants=constants,
                    distinct_states=report.distinct_states,
                    generated_states=report.states_generated, depth=report.depth)


def _is_violation(result: CheckResult) -> bool:
    return result.outcome == Outcome.FAILED and bool(
        {v.kind for v in tlc.report_of(result).violations} & VIOLATION_KINDS)


def _simulate(source: Artifact | str, config: TlcConfig, budget_s: float, depth: int, seed: int,
              module: str | None, check_deadlock: bool, workers: int) -> CheckResult:
    """Random simulation for ``budget_s``; a run that ends early (a deadlock, an evaluation error on one
    behaviour) without violating the check is started again with the next seed, alternating short and long
    behaviours (``depth`` // 3 and ``depth`` steps)."""
    end = time.monotonic() + budget_s
    runs = 0
    result: CheckResult | None = None
    generated = 0
    while result is None or (end - time.monotonic() >= 1.0 and not _is_violation(result)):
        steps = depth if runs % 2 else max(10, depth // 3)
        result = tlc.simulate(source, config, num=2**31 - 1, depth=steps, seed=seed + runs, coverage=False,
                              module=module, check_deadlock=check_deadlock, find_violation=True,
                              workers=workers, timeout_s=max(1.0, end - time.monotonic()))
        generated += tlc.report_of(result).states_generated or 0
        log.info("bug_hunt.simulation", seed=seed + runs, depth=steps, outcome=result.outcome.value,
                 seconds=round(result.duration_s, 1), violation=_is_violation(result))
        runs += 1
    if runs > 1:
        result.details["reason"] = f"{result.details.get('reason', '')} ({runs} simulation runs, seeds " \
            f"{seed}..{seed + runs - 1}{f', {generated} states generated' if generated else ''})"
    return result


def hunt(
    source: Artifact | str,
    cfg: str | TlcConfig | None,
    check: tuple[CheckKind, str],
    *,
    module: str | None = None,
    budget_s: float = 120.0,
    workers: int = 1,
    depth: int = DEFAULT_DEPTH,
    seed: int = DEFAULT_SEED,
    shares: dict[str, float] | None = None,
    check_deadlock: bool = False,
    strategies: tuple[Strategy, ...] = ("bfs", "simulate", "smaller-constants"),
) -> HuntResult:
    """Look for a violation of ``check`` (("invariant"|"property", name)) within ``budget_s`` (see the module doc).

    ``cfg`` is the model's configuration (its own checks are replaced by ``check``); ``workers`` TLC worker
    threads per run. The budget is shared among the steps by ``shares``; time a step leaves unused goes to
    the next one.
    """
    kind, name = check
    spec = prepare(source, module)
    base = make_compatible(tlc._cfg_for(spec, cfg)).config
    single = base.only(prop=name) if kind == "property" else base.only(invariant=name)
    shares = {**DEFAULT_SHARES, **(shares or {})}
    plan = [s for s in strategies if not (s == "simulate" and kind == "property")]
    start = time.monotonic()
    steps: list[HuntStep] = []
    last: CheckResult | None = None

    def remaining() -> float:
        return budget_s - (time.monotonic() - start)

    def allot(strategy: Strategy) -> float:
        later = sum(shares[s] for s in plan[plan.index(strategy):])
        return max(MIN_STEP_S, remaining() * shares[strategy] / later) if later else remaining()

    for strategy in plan:
        if remaining() < MIN_STEP_S:
            break
        if strategy == "bfs":
            step_s = allot(strategy)
            last = tlc.model_check(source, single, module=module, check_deadlock=check_deadlock,
                                   workers=workers, timeout_s=step_s)
            steps.append(_step(strategy, last, step_s, single.constants))
            # stop at a violation, a complete clean search or a spec TLC does not accept; an evaluation
            # error or a deadlock on the way does not end the hunt (simulation may go past it)
            if _is_violation(last) or last.outcome in (Outcome.OK, Outcome.ERROR):
                break
        elif strategy == "simulate":
            step_s = allot(strategy)
            last = _simulate(source, single, step_s, depth, seed, module, check_deadlock, workers)
            steps.append(_step(strategy, last, step_s, single.constants))
            if _is_violation(last):
                break
        else:
            candidates = shrink_candidates(single.constants)
            found = False
            for position, (index, smaller) in enumerate(candidates):
                if remaining() < MIN_STEP_S:
                    break
                step_s = max(MIN_STEP_S, remaining() / (len(candidates) - position))
                constants = [smaller if i == index else c for i, c in enumerate(single.constants)]
                reduced = single.model_copy(update={"constants": constants})
                step_end = time.monotonic() + step_s
                bfs_s = step_s if kind == "property" else max(MIN_STEP_S, step_s * SMALLER_BFS_SHARE)
                result = tlc.model_check(source, reduced, module=module, check_deadlock=check_deadlock,
                                         workers=workers, timeout_s=bfs_s)
                steps.append(_step(strategy, result, bfs_s, constants))
                left = step_end - time.monotonic()
                if not _is_violation(result) and result.outcome != Outcome.OK and kind == "invariant" \
                        and left >= MIN_STEP_S:
                    # BFS stopped at another error, or ran out of time: random behaviours may go past it
                    result = _simulate(source, reduced, left, depth, seed, module, check_deadlock, workers)
                    steps.append(_step(strategy, result, left, constants))
                if _is_violation(result):
                    last, found = result, True
                    break
                last = last or result
            if found:
                break
    if last is None:
        raise ValueError(f"budget of {budget_s} s is below one step ({MIN_STEP_S} s)")
    outcome = HuntResult(check=name, kind=kind, result=last, steps=steps, budget_s=budget_s)
    if outcome.found and outcome.strategy == "smaller-constants":
        last.diagnostics.append(Diagnostic(
            tool=tlc.TOOL, severity=Severity.INFO, code="smaller-constants",
            message=f"violated with smaller constants: {', '.join(outcome.constants)}"))
    # a deadlock or an evaluation error stays "failed" (the spec is wrong); a hunt that ran out of steps
    # without finding anything is inconclusive, with what each step explored
    if not outcome.found and last.outcome not in (Outcome.OK, Outcome.FAILED) and len(steps) > 1:
        last = last.model_copy(update={"outcome": Outcome.INCONCLUSIVE, "details": {
            **last.details, "reason": "no violation found within the budget: "
            + "; ".join(s.line() for s in steps)}})
        outcome.result = last
    log.info("bug_hunt.done", check=name, found=outcome.found, strategy=outcome.strategy,
             seconds=round(outcome.seconds, 1), steps=len(steps))
    return outcome

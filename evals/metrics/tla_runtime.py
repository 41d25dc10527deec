"""TLA+ runtime score: TLC simulation with per-action coverage; and the model configuration all stages use.

Score = actions covered without error / all actions, over ``runs`` simulations (SysMoBench: 20 runs of
``-simulate num=50 -depth 50``, 30 s each). Deliberate choices:

- Actions are what TLC's coverage report lists for the next-state relation (message 2772): TLC splits
  ``Next`` into its disjuncts and names each after the operator it calls (``\\E p : A(p) \\/ B(p)`` gives
  ``A`` and ``B``). Only if no run printed coverage (TLC failed before exploring) are the actions read from
  the spec: the definitions ``Next`` names that contain a prime or ``UNCHANGED``.
- An action is covered when it produced a successor state at least once (``generated > 0``; TLC prints
  ``distinct:generated`` per action, and the reference harness counts ``generated > 0`` too), so a stuttering
  step such as a failed test-and-set counts: it is real behaviour of the system.
- A run with an error (an evaluation error, a failed ``ASSUME``, any TLC error message, or an error trace)
  blames one action: the action whose definition holds the error's location, otherwise the last action of
  the error trace (the reference harness's rule). Blamed actions do not count as covered.
- An action that can only stutter (its body primes nothing and leaves the whole ``vars`` tuple UNCHANGED,
  such as PlusCal's ``Terminating``, which lets finished processes stutter) is excused when it never fired: it
  models no behaviour of the system, and whether it fires at all depends on whether every process finishes
  within the simulation's depth. It is listed in ``excused`` and left out of the denominator. This is the one
  difference from the reference harness's count, which keeps it in the denominator (both scoring modes excuse
  it: docs/scoring-modes.md).
- Deadlocks are not checked (the reference harness passes ``-deadlock``), and the cfg's INVARIANT/PROPERTY
  lines are dropped: this stage asks whether the model runs; the invariants stage judges properties.
- Seeds come from the base seed (``random.Random(seed)``), so a score is reproducible. A run that times
  out makes the stage ``inconclusive`` (never passed); the reference harness counts it as a success.
  ``cut_short_coverage`` (True, the harness's rule) counts the coverage such a run printed before it was cut
  short; the ``sysmo`` scoring mode passes False (how far a cut-short run got depends on the machine's load)
  and a generous time limit (``SYSMO_TIMEOUT_S``): runs x num x depth and the seeds bound the work.

``batched`` (cascade option ``runtime.batched``, default false): one TLC run simulates all
``runs x num`` behaviours from the first seed, in one JVM instead of ``runs`` (the PGo raftkvs spec takes
about 4 s of CPU to parse per JVM); if that run meets an error or its time limit (``runs x timeout_s``), the
``runs`` seeded simulations are run as without the option, so errors are blamed as always. A clean model's
coverage then comes from other random behaviours (the same number, of the same length), which can cover a
different set of actions: values can differ, so it is off by default. They do on PGo raftkvs: one run of 1,000
behaviours covered 9 of 15 actions, the 20 seeded runs of 50 covered 14 (TLC's behaviours within one run are
less varied than across seeds).

``shared_parse`` (cascade option ``runtime.shared_parse``, default true): the seeded simulations run one after
another in a few JVMs (one per parallel slot), each parsing the spec once (``tlc.simulate_seeds``, a TLC
``Simulator`` per seed sharing the parsed spec) instead of one JVM per seed. Each seed's output is that of a run of
the seed alone (the same coverage counts, checked seed by seed on PGo dqueue, locksvc and raftkvs), so the values
are the same; a seed that meets an error, a violation or its time limit there, and the seeds after it in its JVM,
run in JVMs of their own as without the option, so errors are blamed and cut-short runs treated as always.

Passed: every run finished without error (it gates nothing: conformance and invariants are scored for
every model SANY accepts). The value may still be below 1 when some action never fired. Coverage lines
are read in both forms TLC prints (``sysmo.tools.tla.tlc_output.COVERAGE``).
"""

from __future__ import annotations

import itertools
import random
import re
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task
from sysmo.errors import ConfigError
from sysmo.evals.metrics.tla_syntax import blank_comments, split_module
from sysmo.log import get_logger
from sysmo.contracts.check import CheckResult, Outcome
from sysmo.tools.tla import cfg as tlc_cfg
from sysmo.tools.tla import jvm, tlc
from sysmo.tools.tla.source import prepare
from sysmo.tools.tla.tlc_output import TlcReport, parse_output
from sysmo.tools.tla.trace_validation import signature

log = get_logger(__name__)

# SysMoBench's runtime_coverage defaults (reference harness RuntimeCoverageEvaluator)
DEFAULT_RUNS = 20
DEFAULT_NUM = 50
DEFAULT_DEPTH = 50
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_SEED = 1
# ``sysmo`` scoring mode: runs x num x depth and the seeds bound the work; the clock only catches a run that is
# pathologically slow, and such a run's partial coverage is not counted (docs/tla-verdicts.md)
SYSMO_TIMEOUT_S = 180.0


# ------------------------------------------------------------------------------------- configuration


class ModelConfig(BaseModel):
    """The TLC configuration a stage runs the model with, where it came from, and what was filled in."""

    config: tlc_cfg.TlcConfig
    source: str  # "artifact" (its own .cfg) or "generated"
    notes: list[str] = Field(default_factory=list)

    @property
    def text(self) -> str:
        return self.config.render()


def _constant_name(entry: str) -> str:
    return re.split(r"\s*(?:=|<-)\s*", entry, maxsplit=1)[0].strip()


def _own_cfg(artifact: Artifact) -> str | None:
    spec = prepare(artifact)
    own = spec.files.get(f"{spec.main_module}.cfg")
    if own is not None:
        return own
    cfgs = [text for name, text in spec.files.items() if name.endswith(".cfg")]
    return cfgs[0] if len(cfgs) == 1 else None


def model_config(artifact: Artifact, task: Task | None = None) -> ModelConfig:
    """The artifact's cfg; without one, a generated cfg (SPECIFICATION Spec, or INIT/NEXT) whose constants
    take the reference cfg's values where the names match, and otherwise a model value of the same name."""
    own = _own_cfg(artifact)
    if own is not None:
        return ModelConfig(config=tlc_cfg.parse(own), source="artifact")
    sig = signature(artifact, prepare(artifact).main_module)
    notes: list[str] = []
    if "Spec" in sig.operators:
        base = tlc_cfg.TlcConfig(specification="Spec")
    elif "Init" in sig.operators and "Next" in sig.operators:
        base = tlc_cfg.TlcConfig(init="Init", next="Next")
        notes.append("no Spec definition: INIT Init / NEXT Next (no fairness)")
    else:
        raise ConfigError(
            "the model has no .cfg and defines neither Spec nor Init and Next: add a cfg that "
            "names the specification"
        )
    reference: dict[str, str] = {}
    ref_model = task.references.model if task is not None else None
    if ref_model is not None:
        ref_cfg = _own_cfg(ref_model)
        if ref_cfg:
            reference = {_constant_name(c): c for c in tlc_cfg.parse(ref_cfg).constants}
    constants = []
    for name in sig.constants:
        entry = reference.get(name)
        if entry is not None and "<-" in entry and entry.split("<-", 1)[1].strip() not in sig.operators:
            entry = None  # the reference substitutes a definition this model does not have
        if entry is None:
            entry = f"{name} = {name}"
            notes.append(f"constant {name}: no value from the task; a model value")
        constants.append(entry)
    base.constants = constants
    log.info("tla.cfg_generated", constants=len(constants), notes=len(notes))
    return ModelConfig(config=base, source="generated", notes=notes)


def without_checks(config: tlc_cfg.TlcConfig) -> tlc_cfg.TlcConfig:
    return config.model_copy(update={"invariants": [], "properties": []})


# -------------------------------------------------------------------------------------------- runtime


class SimulationRun(BaseModel):
    seed: int
    outcome: Outcome
    covered: list[str] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list)
    error: str | None = None
    error_action: str | None = None
    blamed_by: str | None = None  # "location" or "trace" (the reference harness's rule)
    duration_s: float = 0.0


class RuntimeScore(BaseModel):
    actions: list[str] = Field(default_factory=list)
    actions_source: str = "tlc-coverage"  # or "spec" when no run printed coverage
    covered: list[str] = Field(default_factory=list)  # covered in some run, never blamed for an error
    error_actions: list[str] = Field(default_factory=list)
    excused: list[str] = Field(default_factory=list)  # stutter-only actions that never fired (not counted)
    runs: list[SimulationRun] = Field(default_factory=list)
    tlc_version: str = ""
    cfg: str = ""
    cfg_source: str = ""
    cfg_notes: list[str] = Field(default_factory=list)
    settings: dict[str, float | int] = Field(default_factory=dict)

    @property
    def value(self) -> float:
        counted = [a for a in self.actions if a not in self.excused]
        return len(self.covered) / len(counted) if counted else 0.0

    @property
    def outcome(self) -> Outcome:
        outcomes = {r.outcome for r in self.runs}
        for worst in (Outcome.ERROR, Outcome.FAILED, Outcome.INCONCLUSIVE):
            if worst in outcomes:
                return worst
        return Outcome.OK if self.runs else Outcome.ERROR

    @property
    def passed(self) -> bool:
        return self.outcome == Outcome.OK and bool(self.covered)


def seeds(base: int, runs: int) -> list[int]:
    """The runs' TLC seeds, derived from ``base`` so that a score can be reproduced."""
    rng = random.Random(base)
    return [rng.randrange(1, 2**31) for _ in range(runs)]


def _definition_at(text: str, line: int) -> str | None:
    units = split_module(text)
    lines = text.count("\n") + 1
    starts = [(u.line, u.name if u.kind == "definition" else None) for u in units.units] + [(lines + 1, None)]
    for (start, name), (end, _) in itertools.pairwise(starts):
        if start <= line < end:
            return name
    return None


def _blame(
    result: CheckResult, report: TlcReport, actions: list[str], main_text: str, main_module: str
) -> tuple[str | None, str | None]:
    located = [
        v.location for v in report.violations if v.location is not None and v.location.module == main_module
    ]
    for location in located:
        name = _definition_at(main_text, location.line)
        if name in actions:
            return name, "location"
    steps = [s.action for s in report.trace if s.action not in ("Initial predicate", "Stuttering")]
    if steps:
        return steps[-1], "trace"
    return None, None


def _one_run(
    artifact: Artifact,
    config: tlc_cfg.TlcConfig,
    seed: int,
    num: int,
    depth: int,
    timeout_s: float,
    main_text: str,
    main_module: str,
    cut_short_coverage: bool = True,
    given: CheckResult | None = None,
) -> tuple[SimulationRun, str]:
    """One seeded simulation, or the result ``given`` for it (``tlc.simulate_seeds``)."""
    result = given if given is not None else tlc.simulate(
        artifact,
        config,
        num=num,
        depth=depth,
        seed=seed,
        coverage=True,
        check_deadlock=False,
        timeout_s=timeout_s,
    )
    report = tlc.report_of(result)
    if not report.coverage and result.raw_output and cut_short_coverage:  # keep what a cut-short run printed
        report.coverage = parse_output(result.raw_output).coverage
    if result.outcome == Outcome.INCONCLUSIVE and not cut_short_coverage:
        # how far a run cut short by the clock or a resource got depends on the machine's load: nothing of it
        # counts (it makes the stage inconclusive all the same)
        report.coverage = []
    run = SimulationRun(
        seed=seed,
        outcome=result.outcome,
        duration_s=result.duration_s,
        actions=[c.name for c in report.coverage],
        covered=[c.name for c in report.coverage if c.generated > 0],
    )
    # every error-level message is a violation in the report (tools.tla.tlc_output), so an OK outcome with
    # violations or an error trace can only come from a run cut short before TLC's verdict
    if result.outcome == Outcome.OK and (report.violations or report.trace):
        run.outcome = Outcome.FAILED
    if run.outcome in (Outcome.FAILED, Outcome.ERROR):
        run.error = (
            result.summary(3) if result.outcome != Outcome.OK else "; ".join(v.message for v in report.violations)
        )[:1000]
        run.error_action, run.blamed_by = _blame(result, report, run.actions, main_text, main_module)
    elif run.outcome == Outcome.INCONCLUSIVE:
        run.error = str(result.details.get("reason", "timeout"))
    return run, result.tool_version


def _in_shared_jvms(artifact: Artifact, config: tlc_cfg.TlcConfig, plan: list[int], num: int, depth: int,
                    timeout_s: float, workers: int) -> list[CheckResult | None]:
    """The seeds of ``plan`` split into ``workers`` runs of consecutive seeds, each run one JVM that parses the spec
    once (``tlc.simulate_seeds``); None for a seed such a run did not finish cleanly."""
    size = -(-len(plan) // workers)
    groups = [plan[i:i + size] for i in range(0, len(plan), size)]
    with ThreadPoolExecutor(max_workers=len(groups)) as pool:
        parts = list(pool.map(lambda group: tlc.simulate_seeds(
            artifact, config, group, num=num, depth=depth, coverage=True, check_deadlock=False,
            timeout_s=timeout_s), groups))
    return [result for part in parts for result in part]


def _spec_actions(main_text: str) -> list[str]:
    """Fallback when TLC printed no coverage: the definitions ``Next`` names that change state."""
    units = split_module(main_text)
    nxt = units.definition("Next")
    if nxt is None:
        return []
    changes = {
        u.name
        for u in units.definitions
        if u.name and re.search(r"'|\bUNCHANGED\b", blank_comments(u.text, strings=True).split("==", 1)[-1])
    }
    return [n for n in nxt.uses if n in changes and n != "Next"]


def stutter_only(main_text: str) -> set[str]:
    """The definitions whose body primes no variable and leaves the whole variable tuple UNCHANGED."""
    units = split_module(main_text)
    spec_text = blank_comments(main_text, strings=True)
    subscript = re.search(r"\[\]\s*\[\s*Next\s*\]_\s*(\w+)", spec_text)
    tuple_name = subscript.group(1) if subscript else "vars"
    found = set()
    for unit in units.definitions:
        body = blank_comments(unit.text, strings=True).split("==", 1)[-1]
        if unit.name and "'" not in body and re.search(rf"\bUNCHANGED\s+{re.escape(tuple_name)}\b", body):
            found.add(unit.name)
    return found


def score(
    artifact: Artifact,
    config: ModelConfig,
    *,
    runs: int = DEFAULT_RUNS,
    num: int = DEFAULT_NUM,
    depth: int = DEFAULT_DEPTH,
    seed: int = DEFAULT_SEED,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    parallel: int | None = None,
    batched: bool = False,
    cut_short_coverage: bool = True,
    shared_parse: bool = True,
) -> RuntimeScore:
    """``runs`` simulations of ``num`` behaviours of at most ``depth`` steps (rules: the module doc);
    ``batched``: first one simulation of ``runs x num`` behaviours (module doc); ``cut_short_coverage``: the
    coverage a run cut short by its time limit or a resource printed counts (the harness's rule; ``False`` in
    the ``sysmo`` scoring mode); ``shared_parse``: the seeds run in ``parallel`` JVMs, each parsing the spec once
    (module doc)."""
    spec = prepare(artifact)
    main_text = spec.files[spec.main_file]
    checked = without_checks(config.config)
    plan = seeds(seed, runs)
    done: list[tuple[SimulationRun, str]] = []
    if batched and runs > 1:
        one = _one_run(artifact, checked, plan[0], num * runs, depth, timeout_s * runs, main_text,
                       spec.main_module, cut_short_coverage)
        if one[0].outcome == Outcome.OK:
            done = [one]
        else:
            log.info("tla_runtime.batch_fallback", module=spec.main_module, outcome=one[0].outcome.value)
    if not done:
        workers = max(1, parallel or jvm.default_parallel())
        given: list[CheckResult | None] = [None] * len(plan)
        if shared_parse and len(plan) > 1 and tlc.seeds_in_one_jvm():
            given = _in_shared_jvms(artifact, checked, plan, num, depth, timeout_s, workers)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(
                pool.map(
                    lambda s, r: _one_run(artifact, checked, s, num, depth, timeout_s, main_text,
                                          spec.main_module, cut_short_coverage, r),
                    plan, given,
                )
            )
    result = RuntimeScore(
        runs=[r for r, _ in done],
        tlc_version=next((v for _, v in done if v), ""),
        cfg=checked.render(),
        cfg_source=config.source,
        cfg_notes=config.notes,
        settings={"runs": runs, "num": num, "depth": depth, "seed": seed, "timeout_s": timeout_s,
                  "batched": int(len(done) == 1 and runs > 1), "cut_short_coverage": int(cut_short_coverage)},
    )
    actions = list(dict.fromkeys(a for r in result.runs for a in r.actions))
    if not actions:
        actions, result.actions_source = _spec_actions(main_text), "spec"
    errors = {r.error_action for r in result.runs if r.error_action}
    covered = {a for r in result.runs for a in r.covered}
    result.actions = actions
    result.error_actions = [a for a in actions if a in errors]
    result.covered = [a for a in actions if a in covered and a not in errors]
    stutters = stutter_only(main_text)
    result.excused = [a for a in actions if a in stutters and a not in covered and a not in errors]
    log.info(
        "tla_runtime.scored",
        module=spec.main_module,
        value=round(result.value, 3),
        outcome=result.outcome.value,
        actions=len(actions),
        errors=len(errors),
        runs=runs,
    )
    return result

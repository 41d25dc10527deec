"""TLC, the TLA+ model checker: breadth-first model checking, random simulation, one check at a time.

Every run ends in one outcome, never a timeout reported as success:
- ok: TLC finished and found nothing (BFS: the whole reachable state space within no bound; simulation: all
  requested behaviours ran clean, unless ``find_violation`` asks for a bug, then a clean run is inconclusive);
- failed: an invariant/property violation, a deadlock, a false ASSUME, an evaluation error in the spec;
- inconclusive: the wall-clock budget, the state bound or the depth bound was hit first, or a resource ran
  out: "Java heap space" and other OutOfMemoryErrors, "GC overhead limit exceeded", "File too large" (the
  sandbox's file-size limit on TLC's state files), a full disk, TLC's own enumeration limits ("too many
  elements"), or the JVM killed by the memory limit. The reason says which; it is never blamed on the spec;
- error: the spec does not parse, the cfg is wrong, TLC crashed, or the spec ends the check itself
  (``TLCSet("exit", ...)`` in its text, or TLC reporting "No error has been found" with states still on its
  queue): such a run is never ``ok``, and the diagnostic (code ``early-exit``) tells the model why.

Safety: TLC runs inside the sandbox (no network, writes only in its own work dir). TLC 2.15 has no IOUtils,
Json or exec operators, so a spec can only print; ``-metadir`` and ``-dump`` are always relative paths
inside the work dir, file names of artifacts are checked (no directories), and the work dir is deleted
after the run. The jar's manifest names a ``CommunityModules.jar`` next to it: its directory is read-only.

Example (``spec`` holds a module whose ``Safe`` fails at some reachable state)::

    result = model_check(spec, "INIT Init\\nNEXT Next\\nINVARIANT Safe")
    result.outcome, report_of(result).violations[0].name   # ('failed', 'Safe')
"""

from __future__ import annotations

import random
import re

from sysmo.contracts.artifact import Artifact
from sysmo.config import settings
from sysmo.errors import ConfigError
from sysmo.log import get_logger
from sysmo.sandbox import Limits, RunResult
from sysmo.tools.install import tla2tools_jar
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome, Severity
from sysmo.tools.status import ToolStatus
from sysmo.tools.tla import sany
from sysmo.tools.tla.cfg import CompatibleCfg, TlcConfig, make_compatible
from sysmo.tools.tla.jvm import jar_revision, run_java, tlc_flags
from sysmo.tools.tla.source import PreparedSpec, prepare
from sysmo.tools.tla.tlc_output import SourceSpan, TlcReport, Violation, parse_output

log = get_logger(__name__)

TOOL = "tlc"
DEFAULT_TIMEOUT_S = 120.0
CFG_FILE = "SysmoModel.cfg"
BOUND_MODULE = "SysmoBounded"
DUMP_FILE = "states.dump"
FAILING_KINDS = {"invariant", "property", "action-property", "deadlock", "assumption", "evaluation"}
ERROR_KINDS = {"config", "parse"}
EARLY_EXIT = re.compile(r"""TLCSet\(\s*"exit"\s*,""")
KILLED_CODES = {137, -9}  # SIGKILL: the sandbox's memory limit (the OOM killer) ended the JVM
EARLY_EXIT_ADVICE = ("TLC's verdict does not cover the whole state space, so nothing is proven: remove "
                     'TLCSet("exit", ...) and bound the model with its constants or a CONSTRAINT instead')
INCONCLUSIVE_NOTE = "inconclusive, not an error in the spec"


def _blank_comments(text: str) -> str:
    """The module text with ``(* ... *)`` and ``\\*`` comments blanked (line numbers kept)."""
    text = re.sub(r"\(\*.*?\*\)", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.DOTALL)
    return re.sub(r"\\\*[^\n]*", "", text)


def early_exit_call(spec: PreparedSpec) -> tuple[str, int] | None:
    """Where a module of the spec calls ``TLCSet("exit", ...)`` (file, line): it can end TLC's check early."""
    for file, text in spec.files.items():
        if file.endswith(".tla"):
            found = EARLY_EXIT.search(_blank_comments(text))
            if found:
                return file, text.count("\n", 0, found.start()) + 1
    return None


def report_of(result: CheckResult) -> TlcReport:
    """The typed TLC report stored in a result's details (trace, coverage, violations, statistics)."""
    return TlcReport.model_validate(result.details.get("report", {}))


def _cfg_for(spec: PreparedSpec, cfg: str | TlcConfig | None) -> str | TlcConfig:
    if cfg is not None:
        return cfg
    own = spec.files.get(f"{spec.main_module}.cfg")
    if own is None:
        raise ConfigError(f"no TLC configuration: pass cfg=..., or add {spec.main_module}.cfg to the artifact")
    return own


def _bounded_module(spec: PreparedSpec, compat: CompatibleCfg, max_states: int | None,
                    max_depth: int | None) -> tuple[str, CompatibleCfg]:
    """Wrap the spec in a module whose CONSTRAINTs stop exploring past the state/depth bound.

    TLC 2.15 has no state-count option, but ``TLCGet("distinct")`` and ``TLCGet("level")`` work in a
    CONSTRAINT; TLC then finishes normally (with statistics and coverage) and the bound shows in them.
    """
    if max_states is None and max_depth is None:
        return spec.main_module, compat
    if f"{BOUND_MODULE}.tla" in spec.files:
        raise ConfigError(f"the artifact may not contain a module named {BOUND_MODULE}")
    lines = [f"---- MODULE {BOUND_MODULE} ----", f"EXTENDS {spec.main_module}", "LOCAL INSTANCE TLC"]
    names = []
    if max_states is not None:
        lines.append(f'SysmoStateBound == TLCGet("distinct") < {int(max_states)}')
        names.append("SysmoStateBound")
    if max_depth is not None:
        lines.append(f'SysmoDepthBound == TLCGet("level") < {int(max_depth)}')
        names.append("SysmoDepthBound")
    lines.append("====")
    spec.files[f"{BOUND_MODULE}.tla"] = "\n".join(lines) + "\n"
    config = compat.config.model_copy(update={"constraints": compat.config.constraints + names})
    bounded = compat.model_copy(update={"config": config, "text": config.render()})
    return BOUND_MODULE, bounded


def _definition_line(spec: PreparedSpec, name: str | None) -> tuple[str, int, int] | None:
    """Where ``name`` is defined (file, line, column), to point a violation at its invariant."""
    if not name:
        return None
    pattern = re.compile(rf"^[ \t]*(?P<name>{re.escape(name)})[ \t]*(\([^)]*\))?\s*==", re.MULTILINE)
    for file, text in spec.files.items():
        if file.endswith(".tla"):
            match = pattern.search(text)
            if match:
                start = match.start("name")
                return file, text.count("\n", 0, start) + 1, start - (text.rfind("\n", 0, start) + 1) + 1
    return None


def _diagnostic_for(violation: Violation, spec: PreparedSpec) -> Diagnostic:
    location: SourceSpan | None = violation.location
    file, line, column = (f"{location.module}.tla", location.line, location.column) if location else (None, None, None)
    if location is None and violation.kind in ("invariant", "property", "action-property"):
        found = _definition_line(spec, violation.name)
        if found:
            file, line, column = found
    severity = Severity.WARNING if violation.kind == "resources" else Severity.ERROR
    message = violation.message
    if violation.kind == "resources":
        message = f"{message} ({INCONCLUSIVE_NOTE})"
    column = spec.original_column(file, line, column)
    return Diagnostic(tool=TOOL, severity=severity, code=violation.kind, message=message,
                      file=file, line=line, column=column)


def _judge(report: TlcReport, timed_out: bool, bound_hit: str | None, find_violation: bool,
           returncode: int | None, exit_call: tuple[str, int] | None = None) -> tuple[Outcome, str]:
    """The verdict of one run. Never ``ok`` unless TLC itself said it explored everything it was asked to:

    a violation TLC found is ``failed`` even if resources ran out later; running out of memory, disk, file
    size, time or one of TLC's limits is ``inconclusive`` (nothing wrong was shown); a spec that ends the
    check itself (``TLCSet("exit", ...)``, seen in its text or in states left on TLC's queue) is ``error``:
    the check it asked for did not happen, and the model is told so.
    """
    kinds = {v.kind for v in report.violations}
    where = f" ({exit_call[0]} line {exit_call[1]})" if exit_call else ""
    if exit_call is not None and any(v.kind == "evaluation" and "TLCSet" in v.message
                                     for v in report.violations):
        # simulation mode has no checker to stop: TLC 2.15 fails inside TLCSet("exit", TRUE) instead
        return Outcome.ERROR, f'the spec ended the check early{where}: TLCSet("exit", ...) stopped TLC; ' + \
            EARLY_EXIT_ADVICE
    if kinds & FAILING_KINDS:
        return Outcome.FAILED, "violation"
    if kinds & ERROR_KINDS:
        return Outcome.ERROR, "spec or configuration not accepted"
    if "resources" in kinds:
        first = next(v for v in report.violations if v.kind == "resources")
        return Outcome.INCONCLUSIVE, f"{first.message.split(': ', 1)[0]}: {INCONCLUSIVE_NOTE}"
    if timed_out:
        return Outcome.INCONCLUSIVE, "wall-clock budget exhausted before TLC finished"
    if not report.finished:
        if returncode in KILLED_CODES:
            return Outcome.INCONCLUSIVE, (f"TLC was killed (exit code {returncode}, the memory limit): "
                                          f"{INCONCLUSIVE_NOTE}")
        return Outcome.ERROR, f"TLC ended without finishing (exit code {returncode})"
    if bound_hit:
        return Outcome.INCONCLUSIVE, bound_hit
    if report.mode != "simulate" and report.success and (report.queue_left or 0) > 0:
        return Outcome.ERROR, (f"the spec ended the check early{where}: TLC stopped with {report.queue_left} "
                               f"states left on its queue after {report.distinct_states} distinct states; "
                               + EARLY_EXIT_ADVICE)
    if exit_call is not None:
        return Outcome.ERROR, f'the spec can end the check early: it calls TLCSet("exit", ...){where}; ' + \
            EARLY_EXIT_ADVICE
    if report.mode == "simulate":
        if find_violation:
            return Outcome.INCONCLUSIVE, "simulation found no violation within its bound (not a proof)"
        return Outcome.OK, "all simulated behaviours ran without error"
    if report.success:
        return Outcome.OK, "no error in the complete state space"
    return Outcome.ERROR, f"TLC finished without a verdict (exit code {returncode})"


def _run(
    source: Artifact | str,
    cfg: str | TlcConfig | None,
    *,
    module: str | None,
    mode_args: list[str],
    check_deadlock: bool | None,
    workers: int | str,
    coverage: bool,
    seed: int | None,
    fp: int | None,
    max_states: int | None,
    max_depth: int | None,
    timeout_s: float,
    heap_mb: int | None,
    find_violation: bool,
    dump_states: bool,
    limits: Limits | None,
    printed_marker: str | None = None,
    liveness_at_end: bool = False,
    keep_c2: bool = False,
) -> CheckResult:
    spec = prepare(source, module)
    compat = make_compatible(_cfg_for(spec, cfg), check_deadlock=check_deadlock)
    main, compat = _bounded_module(spec, compat, max_states if not mode_args else None, max_depth if not mode_args else None)
    spec.files[CFG_FILE] = compat.text
    args = _common_args(compat, workers, coverage)
    if seed is not None:
        args += ["-seed", str(seed)]
    if fp is not None:
        args += ["-fp", str(fp)]
    if dump_states:
        args += ["-dump", DUMP_FILE.removesuffix(".dump")]
    if liveness_at_end and not mode_args:
        args += ["-lncheck", "final"]
    args += mode_args + [main]
    heap = heap_mb or settings().sandbox.jvm_heap_mb
    limits = limits or Limits(timeout_s=timeout_s, cpu_s=int(timeout_s * 4) + 60, memory_mb=heap + 1024)
    if mode_args and seeds_in_one_jvm():  # a simulation's coverage reported at its end, always (TLCMain.java)
        args = [SIMULATE_FLAG, *args]
    run = run_java("tlc2.TLC", args, files=spec.files, limits=limits,
                   jvm_flags=tlc_flags(None if mode_args or keep_c2 else max_states), heap_mb=heap,
                   collect=[DUMP_FILE] if dump_states else None)
    return _checked(spec, compat, run.output, run, max_states=max_states, max_depth=max_depth,
                    simulation=bool(mode_args), find_violation=find_violation, dump_states=dump_states,
                    printed_marker=printed_marker)


def _common_args(compat: CompatibleCfg, workers: int | str, coverage: bool) -> list[str]:
    """TLC's arguments every run of ours takes: tool output, workers, the cfg, the states folder, deadlock and
    coverage as asked."""
    args = ["-tool", "-workers", str(workers), "-config", CFG_FILE, "-metadir", "states"]
    if compat.deadlock_flag:
        args.append("-deadlock")
    if coverage:
        args += ["-coverage", "1"]
    return args


def _simulation_args(num: int, depth: int) -> list[str]:
    return ["-simulate", f"num={int(num)}", "-depth", str(int(depth))]


def _checked(spec: PreparedSpec, compat: CompatibleCfg, output: str, run: RunResult, *, max_states: int | None,
             max_depth: int | None, simulation: bool, find_violation: bool, dump_states: bool = False,
             printed_marker: str | None = None, duration_s: float | None = None) -> CheckResult:
    """The result of one TLC run from its output (``run``: the process's exit, time-out and isolation)."""
    mode_args = ["-simulate"] if simulation else []
    report = parse_output(output)
    bound_hit = None
    if max_states is not None and not mode_args and (report.distinct_states or 0) >= max_states:
        bound_hit = f"state bound reached ({report.distinct_states} distinct states >= {max_states})"
    elif max_depth is not None and not mode_args and (report.depth or 0) >= max_depth:
        bound_hit = f"depth bound reached (depth {report.depth} >= {max_depth})"
    exit_call = early_exit_call(spec)
    outcome, reason = _judge(report, run.timed_out, bound_hit, find_violation, run.returncode, exit_call)
    early_exit = outcome == Outcome.ERROR and reason.startswith("the spec")
    properties = compat.config.properties
    for violation in report.violations:  # TLC does not say which temporal property failed
        if violation.kind == "property" and violation.name is None and len(properties) == 1:
            violation.name = properties[0]

    diagnostics = [_diagnostic_for(v, spec) for v in report.violations]
    if any(v.kind == "parse" for v in report.violations):  # SANY's own messages name the line
        parsed = sany.parse_output(report.untagged, spec.main_module)
        for d in parsed:
            d.tool = TOOL
            d.column = spec.original_column(d.file, d.line, d.column)
        diagnostics = parsed + diagnostics
    if report.trace and outcome == Outcome.FAILED:
        diagnostics.append(Diagnostic(tool=TOOL, severity=Severity.INFO, code="trace",
                                      message=f"error trace ({len(report.trace)} states):\n{report.trace_text()}"))
    if early_exit:
        file, line = exit_call if exit_call else (None, None)
        diagnostics.append(Diagnostic(tool=TOOL, severity=Severity.ERROR, code="early-exit", message=reason,
                                      file=file, line=line))
    elif outcome in (Outcome.INCONCLUSIVE, Outcome.ERROR) and not any(
            d.severity == Severity.ERROR or d.code == "resources" for d in diagnostics):
        diagnostics.append(Diagnostic(tool=TOOL, severity=Severity.WARNING if outcome == Outcome.INCONCLUSIVE
                                      else Severity.ERROR, code=outcome.value, message=reason))
    for note in compat.notes:
        diagnostics.append(Diagnostic(tool=TOOL, severity=Severity.INFO, code="cfg-compat", message=note))
    raw, truncated = CheckResult.bound_output(output)
    version = f"TLC {report.version} (rev {report.revision or jar_revision(tla2tools_jar())})"
    details = {
        "report": report.model_dump(exclude={"messages", "untagged"}),
        "reason": reason, "early_exit": early_exit,
        "timed_out": run.timed_out, "bound_hit": bound_hit, "returncode": run.returncode,
        "cfg": compat.text, "cfg_notes": compat.notes, "deadlock_flag": compat.deadlock_flag,
        "module": spec.main_module, "unicode_replacements": spec.unicode_replacements, "isolation": run.isolation,
    }
    if run.cached:
        details["cached"] = True
    if dump_states:
        details["states_dump"] = CheckResult.bound_output(run.files_out.get(DUMP_FILE, ""))[0]
    if printed_marker is not None:  # whole, unlike raw_output (cut at RAW_OUTPUT_LIMIT): the caller parses them
        details["printed"] = [line for line in output.splitlines() if printed_marker in line]
    seconds = run.duration_s if duration_s is None else duration_s
    log.info("tlc.run", module=spec.main_module, mode=report.mode, outcome=outcome.value, reason=reason,
             seconds=round(seconds, 2), distinct=report.distinct_states)
    return CheckResult(tool=TOOL, tool_version=version, outcome=outcome, diagnostics=diagnostics,
                       duration_s=seconds, raw_output=raw, truncated=truncated or run.stdout_truncated,
                       details=details)


def model_check(
    source: Artifact | str,
    cfg: str | TlcConfig | None = None,
    *,
    module: str | None = None,
    check_deadlock: bool | None = None,
    workers: int | str = 1,
    coverage: bool = False,
    seed: int | None = None,
    fp: int | None = None,
    max_states: int | None = None,
    max_depth: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    heap_mb: int | None = None,
    dump_states: bool = False,
    limits: Limits | None = None,
    printed_marker: str | None = None,
    liveness_at_end: bool = False,
    keep_c2: bool = False,
) -> CheckResult:
    """Breadth-first model checking of ``module`` under ``cfg`` (text or ``TlcConfig``; default: ``<Main>.cfg``).

    ``max_states``/``max_depth`` bound the search (hitting one makes a clean run inconclusive);
    ``liveness_at_end``: temporal properties are checked once, on the explored graph, after the search
    (``-lncheck final``) instead of also every minute of wall time on the graph so far: the verdict then depends on
    the explored graph alone, not on when the clock ticked (a bounded check's use; docs/tla-cascade-speed.md);
    ``check_deadlock`` overrides the cfg's CHECK_DEADLOCK (TLC's default is to report deadlocks);
    ``printed_marker``: the output lines holding it (what the spec printed with ``PrintT``) are kept whole in
    ``details["printed"]``; ``keep_c2``: the JVM keeps the C2 compiler whatever the state bound (``jvm.tlc_flags``:
    a check bounded to few states otherwise runs on C1 alone), for a run known to be long on few states.
    """
    return _run(source, cfg, module=module, mode_args=[], check_deadlock=check_deadlock, workers=workers,
                coverage=coverage, seed=seed, fp=fp, max_states=max_states, max_depth=max_depth,
                timeout_s=timeout_s, heap_mb=heap_mb, find_violation=False, dump_states=dump_states, limits=limits,
                printed_marker=printed_marker, liveness_at_end=liveness_at_end, keep_c2=keep_c2)


def simulate(
    source: Artifact | str,
    cfg: str | TlcConfig | None = None,
    *,
    num: int = 50,
    depth: int = 50,
    seed: int | None = None,
    coverage: bool = True,
    module: str | None = None,
    check_deadlock: bool | None = None,
    find_violation: bool = False,
    workers: int | str = 1,
    timeout_s: float = 30.0,
    heap_mb: int | None = None,
    limits: Limits | None = None,
) -> CheckResult:
    """Random simulation: ``num`` behaviours of at most ``depth`` steps, with per-action coverage.

    With ``find_violation=True`` (bug hunting) a clean run is ``inconclusive``, not ``ok``.
    """
    seed = seed if seed is not None else random.randrange(1, 2**31)
    return _run(source, cfg, module=module, mode_args=_simulation_args(num, depth),
                check_deadlock=check_deadlock, workers=workers, coverage=coverage, seed=seed, fp=None,
                max_states=None, max_depth=None, timeout_s=timeout_s, heap_mb=heap_mb,
                find_violation=find_violation, dump_states=False, limits=limits)


SEEDS_FLAG = "-sysmo-seeds"  # TLCMain.java's Seeds: one simulation per seed on a spec parsed once
# TLCMain.java's Simulation: TLC's main for one simulation whose coverage is reported at its end (TLC's own report
# thread may miss it: a race with the simulation's end, lost by short simulations on a warm or loaded JVM)
SIMULATE_FLAG = "-sysmo-simulate"
SEED_END = re.compile(r"^@!@!@SYSMO-SEED (-?\d+) (-?\d+)$", re.MULTILINE)
FINISHED_MS = re.compile(r"@!@!@STARTMSG 2186:\d+ @!@!@\n[^\n]*?(\d+)ms")


def seeds_in_one_jvm() -> bool:
    """Whether ``simulate_seeds`` can run several seeds in one JVM: it needs our launcher (``jvm_startup``), which
    a container's own Java does not have."""
    from sysmo.sandbox import get_sandbox
    from sysmo.tools.tla import jvm_startup

    return (jvm_startup.enabled() and get_sandbox().name != "docker"
            and jvm_startup.launcher() is not None)


def simulate_seeds(
    source: Artifact | str,
    cfg: str | TlcConfig | None,
    seeds: list[int],
    *,
    num: int = 50,
    depth: int = 50,
    coverage: bool = True,
    check_deadlock: bool | None = None,
    timeout_s: float = 30.0,
    heap_mb: int | None = None,
) -> list[CheckResult | None]:
    """``simulate`` once per seed, the seeds one after another in one JVM that parses the spec once
    (``TLCMain.java``'s ``Seeds``): per seed, the result ``simulate(..., seed=seed)`` gives, or None for a seed
    this run did not finish cleanly within ``timeout_s`` of its own (an error, a violation, the clock, or a seed
    after one of these), which the caller simulates in a JVM of its own. Each seed's result is read from its own
    part of the output, after the run's header (TLC's version), so it is the output of a run of that seed alone."""
    if not seeds:
        return []
    spec = prepare(source, None)
    compat = make_compatible(_cfg_for(spec, cfg), check_deadlock=check_deadlock)
    main, compat = _bounded_module(spec, compat, None, None)
    spec.files[CFG_FILE] = compat.text
    args = [*_common_args(compat, 1, coverage), *_simulation_args(num, depth), main]
    heap = heap_mb or settings().sandbox.jvm_heap_mb
    whole, alone_limits = timeout_s * len(seeds), Limits(timeout_s=timeout_s)
    limits = Limits(timeout_s=whole, cpu_s=int(whole * 4) + 60, memory_mb=heap + 1024,
                    output_limit_bytes=alone_limits.output_limit_bytes * len(seeds))  # each seed its own share
    run = run_java("tlc2.TLC", [SEEDS_FLAG, ",".join(str(s) for s in seeds), *args], files=spec.files,
                   limits=limits, jvm_flags=tlc_flags(None), heap_mb=heap)
    results: list[CheckResult | None] = [None] * len(seeds)
    if run.stdout_truncated:
        log.info("tlc.seeds_output_cut", module=spec.main_module, seeds=len(seeds))
        return results
    output, start, header = run.stdout, 0, ""
    for index, ended in enumerate(SEED_END.finditer(output)):
        part = output[start:ended.start()]
        start = ended.end() + 1
        if index >= len(seeds) or int(ended.group(1)) != seeds[index] or ended.group(2) != "0":
            break
        if index == 0:
            banner = part.find(f"@!@!@STARTMSG {2188}:")
            if banner < 0:
                break
            header = part[:banner]
        else:
            part = header + part
        finished = FINISHED_MS.search(part)
        seconds = int(finished.group(1)) / 1000 if finished else None
        if seconds is None or seconds > timeout_s or len(part.encode()) > alone_limits.output_limit_bytes:
            break  # a run of its own would have been cut short (its clock, its output): it runs alone
        alone = run.model_copy(update={"stdout": part, "stderr": "", "returncode": 0, "timed_out": False})
        results[index] = _checked(spec, compat, part, alone, max_states=None, max_depth=None, simulation=True,
                                  find_violation=False, duration_s=seconds)
    log.info("tlc.seeds", module=spec.main_module, seeds=len(seeds), done=sum(r is not None for r in results),
             seconds=round(run.duration_s, 2))
    return results


def check_invariants(
    source: Artifact | str,
    cfg: str | TlcConfig | None = None,
    names: list[str] | None = None,
    **options,
) -> dict[str, CheckResult]:
    """Model-check each invariant/property of the cfg (or only ``names``) alone, in its own TLC run.

    A name the cfg lists under PROPERTY is checked as a property; any other name as an INVARIANT.
    ``options`` go to ``model_check`` (bounds, timeout ...). Deadlocks are not reported unless
    ``check_deadlock=True``: a deadlock says nothing about the invariant under check.
    """
    spec = prepare(source, options.get("module"))
    config = make_compatible(_cfg_for(spec, cfg)).config
    options.setdefault("check_deadlock", False)
    wanted = names if names is not None else [name for _, name in config.checks]
    results: dict[str, CheckResult] = {}
    for name in wanted:
        single = config.only(prop=name) if name in config.properties else config.only(invariant=name)
        results[name] = model_check(source, single, **options)
    return results


SELF_CHECK_SPEC = """---- MODULE SelfCheck ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Next == x < 3 /\\ x' = x + 1
Safe == x < 3
====
"""


def self_check() -> ToolStatus:
    """Live check: TLC finds the violation of ``x < 3`` at the 4th state, with the trace parsed."""
    jar = tla2tools_jar()
    result = model_check(SELF_CHECK_SPEC, "INIT Init\nNEXT Next\nINVARIANT Safe\n", check_deadlock=False,
                         timeout_s=60)
    report = report_of(result)
    name = report.violations[0].name if report.violations else None
    ok = result.outcome == Outcome.FAILED and name == "Safe" and len(report.trace) == 4
    message = (f"found the violation of Safe with a 4-state trace in {result.duration_s:.2f} s" if ok
               else f"unexpected: {result.outcome.value}: {result.summary(3)}")
    return ToolStatus(name="TLC", ok=ok, version=result.tool_version, path=str(jar), message=message)

"""Trace validation inside the repair loop: once the tool check passes, replay the task's traces through TLC.

An agent declares it among its in-loop checks (``AgentSpec.loop_checks``; trace_learning does). Each round
whose spec parses and runs is replayed against every trace of the task, as the scoring cascade's
conformance stage replays them (``evals.metrics.tla_conformance``: NDJSON files, or PGo runs merged by
``tools.tla.pgo_trace`` with the task's Validate.cfg constants; ``tools.tla.trace_validation`` runs TLC),
with the name-based mapping (no helper model inside the loop), bounded by ``TIMEOUT_S``.

A rejected trace becomes one diagnostic for the repair request: the first failing line and its event, why
TLC could not match it, the mapping used for that event and for the state fields, and the logged state
before and after that line set against the spec's own state. The spec's state comes from a second short TLC
run (the probe): the accepted prefix of the trace replayed with an invariant that fails exactly when the
prefix is consumed, so TLC's counterexample ends in a state of the spec that matches lines 1..k. The whole
verdict (every trace, the whole mapping, the probe's path) is in ``details['trace_validation']`` and the
replay's TLC output in ``raw_output``: what ``--feedback full`` adds.

A replay that runs out of time is inconclusive, not passed (as the loop's short simulation is; the repair request
says to bound the state space, ``graphs.repair.INCONCLUSIVE_ADVICE``); traces the task
cannot read or write as TLA+ values, and a machine that cannot run TLC, leave the tool check's verdict as it
was (logged, and noted in the round's check details).

>>> check = trace_validation_check(artifact, task)
>>> check.outcome, check.diagnostics[0].code
(<Outcome.FAILED: 'failed'>, 'trace-rejected')
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task
from sysmo.errors import SandboxError, SysmoError, TaskError, ToolMissingError
from sysmo.evals.metrics import tla_conformance, tla_runtime
from sysmo.log import get_logger
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome, Severity
from sysmo.tools.tla import trace_validation as tv
from sysmo.tools.tla.source import prepare
from sysmo.tools.tla.tlc_output import Code, parse_variables, split_messages

log = get_logger(__name__)

TOOL = tv.TOOL
TIMEOUT_S = 60.0  # per TLC run of the in-loop replay (the scoring cascade allows 120 s)
PROBE = "TV__Probe"
MAX_VALUE_CHARS = 400
REPLAY_VARIABLES = {"tv__t", tv.POSITION}  # the replay module's own: which trace, how far (not the spec's)


def _short(text: str) -> str:
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + " ..."


def logged_state(line: tv.TraceLine, mapping: tv.TraceMapping) -> dict[str, str]:
    """A trace line's state as the spec's variables, TLA+ values (only the mapped fields)."""
    out: dict[str, str] = {}
    for entry in mapping.variables:
        if entry.field in line.state:
            try:
                out[entry.variable] = tv.tla_value(line.state[entry.field], entry.encoding == "set")
            except SysmoError:
                out[entry.variable] = json.dumps(line.state[entry.field], default=str)
    return out


def mapping_for_event(mapping: tv.TraceMapping, event: str) -> str:
    entry = mapping.for_event(event)
    if entry is None or entry.action is None:
        return f"{event} -> no action of the spec (only checked as a step of {mapping.next_action})"
    args = f"({', '.join(entry.arguments)})" if entry.arguments else ""
    return f"{event} -> {entry.action}{args}"


def mapping_text(mapping: tv.TraceMapping) -> str:
    fields = ", ".join(f"{v.field} -> {v.variable}" for v in mapping.variables) or "(none)"
    constants = ", ".join(f"{k} -> {c}" for k, c in mapping.constants.items()) or "(none)"
    lines = [f"state fields: {fields}", f"config: {constants}"]
    lines += [f"note: {n}" for n in mapping.notes]
    return "\n".join(lines)


def probe_spec_state(files: dict[str, str], main: str, cfg: str | None, trace: tv.Trace,
                     mapping: tv.TraceMapping, consumed: int) -> tuple[dict[str, str] | None, list[dict[str, Any]]]:
    """One state of the spec that matches the first ``consumed`` lines of ``trace`` (with no line matched: one
    of the spec's initial states), and TLC's path to it; None when TLC gives none in time."""
    if consumed == 0:  # nothing matched: the spec's own initial state, unconstrained by the log
        prefix = tv.Trace(name=trace.name, lines=trace.lines[:1])
        used = mapping.model_copy(update={"init_event": None})
    else:
        prefix, used = tv.Trace(name=trace.name, lines=trace.lines[:consumed]), mapping
    checking = tv.checking_module([prefix], used, main, cfg)
    body = checking.text.rstrip().removesuffix("====")  # the generated module ends with its closing line
    stop = f"{PROBE} == {tv.POSITION} < {consumed}\n"
    checking = checking.model_copy(update={"text": body + stop + "====\n",
                                           "cfg": checking.cfg.rstrip() + f"\nINVARIANT {PROBE}\n"})
    run, _ = tv._run(files, checking, TIMEOUT_S)  # the replay's own TLC run (same limits and output reading)
    path = run.details.get("error_trace") or []
    if not path:  # broken in an initial state: TLC prints that state inside its message, not as a trace
        initial = initial_state_of(run.raw_output)
        path = [{"number": 1, "action": "Initial predicate", "variables": initial}] if initial else []
    if not path:
        return None, []
    state = {k: v for k, v in path[-1].get("variables", {}).items() if k not in REPLAY_VARIABLES}
    return state, path


def initial_state_of(output: str) -> dict[str, str]:
    """The state of TLC's "Invariant ... is violated by the initial state:" message, variable -> value text."""
    messages, _ = split_messages(output)
    text = next((m.text for m in messages if m.code == Code.INVARIANT_VIOLATED_INITIAL), "")
    return parse_variables(text.split("\n", 1)[1]) if "\n" in text else {}


def _state_lines(title: str, state: dict[str, str] | None, variables: list[str]) -> str:
    if state is None:
        return f"{title}: (TLC gave none within {TIMEOUT_S:.0f} s)"
    shown = [f"{v} = {_short(state[v])}" for v in variables if v in state]
    return f"{title}: " + (", ".join(shown) if shown else "(no mapped variable)")


def rejection_message(trace: tv.Trace, verdict: tv.TraceVerdict, mapping: tv.TraceMapping,
                      spec_state: dict[str, str] | None) -> str:
    """The first failing line of a trace: event, reason, mapping, logged states before/after and the spec's."""
    index = verdict.first_failing_event or 0
    line = trace.lines[index]
    actor = f" (actor {json.dumps(line.actor, default=str)})" if line.actor is not None else ""
    args = f" args {json.dumps(line.args, default=str)}" if line.args else ""
    variables = list(dict.fromkeys(v.variable for v in mapping.variables))
    parts = [f"trace {trace.name} is rejected at line {index + 1} of {len(trace.lines)}: event "
             f"{line.event}{actor}{args}.", f"why: {verdict.reason}",
             f"mapping used: {mapping_for_event(mapping, line.event)}; {mapping_text(mapping)}"]
    after = logged_state(line, mapping)
    every = variables + [v for v in spec_state or {} if v not in variables]  # the spec's unlogged ones too
    if index == 0:
        parts.append(_state_lines("the spec's initial state (one of them)", spec_state, every))
    else:
        before = logged_state(trace.lines[index - 1], mapping)
        parts.append(_state_lines(f"logged state after line {index}", before, variables))
        parts.append(_state_lines(f"the spec's state matching lines 1-{index}", spec_state, every))
    parts.append(_state_lines(f"logged state after line {index + 1} ({line.event})", after, variables))
    if index > 0:
        changed = [v for v in variables if v in after and after[v] != before.get(v)]
        parts.append(f"the logged step changes: {', '.join(changed)}" if changed else
                     "the logged step changes none of the mapped variables (a step the spec must allow, "
                     "not a stutter it can skip)")
    return "\n".join(parts)


def rejection_line(verdict: tv.TraceVerdict) -> str:
    """A further rejected trace, in one line."""
    where = (f" at line {verdict.first_failing_event + 1} (event {verdict.failing_event})"
             if verdict.first_failing_event is not None else "")
    return f"trace {verdict.trace} is rejected{where}: {verdict.reason}"


def _traces(task: Task) -> tuple[list[tv.Trace], Any] | None:
    found = tla_conformance.task_traces(task)
    if found is None:
        return None
    validate = task.references.extra.get("pgo_validate_cfg")
    return tla_conformance.load_traces(found, Path(validate).read_text(encoding="utf-8") if validate else None), found


def trace_validation_check(artifact: Artifact, task: Task) -> CheckResult:
    """Replay the task's traces against ``artifact`` (its tool check passed); OK, or FAILED with the
    first failing line of each rejected trace as a diagnostic."""
    try:
        found = _traces(task)
    except (SysmoError, OSError) as exc:  # the task's traces, not the model: the loop goes on without them
        log.warning("trace_check.unreadable_traces", task=task.id, error=str(exc)[:300])
        return CheckResult(tool=TOOL, outcome=Outcome.OK, details={"trace_validation": f"not run: {exc}"})
    if found is None:
        return CheckResult(tool=TOOL, outcome=Outcome.OK, details={"trace_validation": "the task has no traces"})
    traces, trace_set = found
    try:
        config = tla_runtime.model_config(artifact, task)
        spec = prepare(artifact)  # the files TLC reads (the replay's own module and cfg are added to them)
        main, files = spec.main_module, {n: t for n, t in spec.files.items() if n.endswith(".tla")}
        cfg = tla_conformance.replay_cfg(task, trace_set, config, set(tv.signature(artifact).constants))
        result = tv.validate_traces(artifact, traces, cfg=cfg, timeout_s=TIMEOUT_S)
    except (TaskError, ToolMissingError, SandboxError) as exc:  # the task's traces or the machine, not the model
        log.warning("trace_check.not_run", task=task.id, error=str(exc)[:300])
        return CheckResult(tool=TOOL, outcome=Outcome.OK, details={"trace_validation": f"not run: {exc}"})
    except SysmoError as exc:  # no Spec nor Init/Next to replay, constants it cannot be given: the model's to fix
        return CheckResult(tool=TOOL, outcome=Outcome.FAILED, diagnostics=[Diagnostic(
            tool=TOOL, code="trace-replay", message=f"the traces could not be replayed against the spec: {exc}")],
            details={"trace_validation": str(exc)})
    version = result.runs[0].tool_version if result.runs else "unknown"
    summary = f"{result.accepted}/{len(result.traces)} traces accepted (mapping: {result.mapping.source})"
    if result.outcome == Outcome.OK:
        return CheckResult(tool=TOOL, tool_version=version, outcome=Outcome.OK,
                           duration_s=sum(r.duration_s for r in result.runs),
                           details={"trace_validation": summary, "outcome": result.outcome.value})
    if result.outcome == Outcome.INCONCLUSIVE:  # no trace rejected, but a replay did not finish: no pass
        undecided = [v for v in result.traces if v.outcome == Outcome.INCONCLUSIVE]
        return CheckResult(tool=TOOL, tool_version=version, outcome=Outcome.INCONCLUSIVE,
                           duration_s=sum(r.duration_s for r in result.runs),
                           diagnostics=[Diagnostic(tool=TOOL, severity=Severity.WARNING, code="inconclusive",
                                                   message=f"trace {v.trace}: the replay did not finish: {v.reason}")
                                        for v in undecided],
                           details={"trace_validation": summary, "outcome": result.outcome.value})
    by_name = {t.name: t for t in traces}
    diagnostics: list[Diagnostic] = []
    probes: list[str] = []
    for verdict in result.traces:
        if verdict.accepted or verdict.outcome == Outcome.INCONCLUSIVE:
            continue
        trace = by_name[verdict.trace]
        if verdict.first_failing_event is None:  # TLC could not run the replay at all
            diagnostics.append(Diagnostic(tool=TOOL, code="trace-replay", message=f"trace {trace.name}: "
                                          f"{verdict.reason}"))
            continue
        if diagnostics:  # the first rejection in full (with the probe); the others in a line each
            diagnostics.append(Diagnostic(tool=TOOL, code="trace-rejected", message=rejection_line(verdict)))
            continue
        state, path = probe_spec_state(files, main, cfg, trace, result.mapping, verdict.first_failing_event)
        diagnostics.append(Diagnostic(tool=TOOL, severity=Severity.ERROR, code="trace-rejected",
                                      message=rejection_message(trace, verdict, result.mapping, state)))
        if path:
            probes.append(f"TLC's path to the spec's state matching lines 1-{verdict.first_failing_event} of "
                          f"{trace.name}:\n" + "\n".join(tv_state(s) for s in path))
    verdicts = "\n".join(f"- {v.trace}: {'accepted' if v.accepted else 'rejected'}, {v.events_consumed}/"
                         f"{v.lines} lines matched; {v.reason}" for v in result.traces)
    mapping = json.dumps(result.mapping.model_dump(mode="json"))
    report = "\n".join([summary, verdicts, "mapping used:", mapping, *probes])
    failed_run = next((r for v in result.traces if not v.accepted and v.run is not None
                       for r in [result.runs[v.run]]), result.runs[-1] if result.runs else None)
    return CheckResult(tool=TOOL, tool_version=version, outcome=Outcome.FAILED, diagnostics=diagnostics,
                       duration_s=sum(r.duration_s for r in result.runs),
                       raw_output=failed_run.raw_output if failed_run else "",
                       details={"trace_validation": report, "accepted": result.accepted,
                                "traces": len(result.traces), "mapping": result.mapping.model_dump(mode="json")})


def tv_state(state: dict[str, Any]) -> str:
    head = f"State {state.get('number', '?')}: {state.get('action', '')}".rstrip()
    return "\n".join([head] + [f"  /\\ {k} = {_short(v)}" for k, v in (state.get("variables") or {}).items()
                               if k not in REPLAY_VARIABLES])

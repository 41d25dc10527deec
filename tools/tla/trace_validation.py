"""Trace validation: replay NDJSON event traces of a real system through TLC against a TLA+ spec.

A trace is one JSON object per line: ``{"event", "actor", "args", "state"}``; an optional first line with
``"event": "Init"`` gives the initial state and ``"config"`` (values for the spec's constants). A
``TraceMapping`` says which spec action each event is, where the action's arguments come from, and which
spec variable each state field is. When the names match (case/underscore-insensitive) the mapping is
built deterministically; otherwise a ``MappingProposer`` (the helper LLM, supplied by the caller) may
fill the gaps. Either way the mapping is recorded in the result.

A checking module is generated that EXTENDS the spec and holds the traces as literals (no Json module
needed: TLC 2.15 has none). ``TV__Next`` takes the mapped action and requires the logged state after it;
``tv__i`` counts the consumed lines of trace ``tv__t`` and every state reached prints it. A trace is
accepted only when its LAST line was consumed too (``tv__i = Len(log)``); otherwise the furthest line
reached gives the first failing line. TLC explores the whole replay, so no accepting path is missed.

>>> result = validate_traces(artifact, [Path("traces/seed-1.ndjson")])
>>> result.score, result.traces[0].first_failing_event
(1.0, None)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact, Language
from sysmo.config import settings
from sysmo.errors import TaskError
from sysmo.log import get_logger
from sysmo.sandbox import Limits
from sysmo.contracts.check import CheckResult, Diagnostic, Outcome, Severity
from sysmo.tools.tla import cfg as tlc_cfg
from sysmo.tools.tla.jvm import TLC_REPLAY_JVM_FLAGS, default_parallel, run_java
from sysmo.tools.tla.source import module_name, prepare
from sysmo.tools.tla.tlc_output import parse_output

log = get_logger(__name__)

TOOL = "tlc-trace"
INIT_EVENT = "Init"
POSITION = "tv__i"  # the checking module's count of consumed trace lines
REACHED = "tv__reached"  # tag of the lines the checking module prints
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_WALKS_PER_TRACE = 25
WALK_TIMEOUT_S = 20.0
REGISTER_BASE = 4096  # TLC registers REGISTER_BASE + t: the furthest line of trace t consumed (clear of a spec's own)

# ----------------------------------------------------------------------------------------------- traces


class TraceLine(BaseModel):
    """One logged step: the event, who took it, its arguments, and the traced variables after it."""

    event: str
    actor: Any = None
    args: dict[str, Any] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)


class Trace(BaseModel):
    """A whole trace file. ``lines[0]`` is the Init line when the trace has one."""

    name: str
    lines: list[TraceLine]

    @property
    def has_init(self) -> bool:
        return bool(self.lines) and self.lines[0].event == INIT_EVENT

    @property
    def config(self) -> dict[str, Any]:
        return self.lines[0].config if self.has_init else {}


def read_trace(source: Path | str, name: str | None = None) -> Trace:
    """Read an NDJSON trace from a file (or from text, when ``name`` is given). Blank lines are skipped."""
    if isinstance(source, Path):
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise TaskError(f"cannot read trace {source}: {exc.strerror}; check the task's trace paths") from exc
        name = name or source.name
    else:
        text = source
    lines: list[TraceLine] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
            lines.append(TraceLine.model_validate(data))
        except (json.JSONDecodeError, ValueError) as exc:
            raise TaskError(f"trace {name} line {number} is not an event object "
                            f'({{"event": ..., "state": {{...}}}}): {str(exc).splitlines()[0]}') from exc
    if not lines:
        raise TaskError(f"trace {name} has no events")
    return Trace(name=name or "trace", lines=lines)


# ----------------------------------------------------------------------------------------- spec names


class SpecSignature(BaseModel):
    """The names a spec declares: variables, constants, and operators with their parameter names."""

    module: str
    variables: list[str] = Field(default_factory=list)
    constants: list[str] = Field(default_factory=list)
    operators: dict[str, list[str]] = Field(default_factory=dict)


def _strip_tla_comments(text: str) -> str:
    text = re.sub(r"\(\*.*?\*\)", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.DOTALL)
    return "\n".join(line.split("\\*", 1)[0] for line in text.splitlines())


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets: ``F(_, _), x`` -> [``F(_, _)``, ``x``]."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [p for p in parts + [current.strip()] if p]


def _declared(text: str, keyword: str) -> list[str]:
    names: list[str] = []
    name = r"[A-Za-z_]\w*(?:\([_,\s]*\))?"  # x, or an operator constant F(_, _)
    for match in re.finditer(rf"\b{keyword}S?\b((?:\s*{name}\s*,)*\s*{name})", text):
        names += [re.sub(r"\(.*", "", n).strip() for n in _split_top(match.group(1))]
    return names


def signature(artifact: Artifact, module: str | None = None) -> SpecSignature:
    """Read the declarations of every ``.tla`` file of the artifact (definitions at the start of a line)."""
    main = module or module_name(artifact.main_text) or (artifact.main_file or "Spec").removesuffix(".tla")
    sig = SpecSignature(module=main)
    for name in sorted(artifact.files):
        if not name.endswith(".tla"):
            continue
        text = _strip_tla_comments(artifact.files[name])
        sig.variables += [v for v in _declared(text, "VARIABLE") if v not in sig.variables]
        sig.constants += [c for c in _declared(text, "CONSTANT") if c not in sig.constants]
        for match in re.finditer(r"^(?:LOCAL\s+)?([A-Za-z_]\w*)\s*(?:\(([^)]*(?:\([^)]*\)[^)]*)*)\))?\s*==",
                                 text, flags=re.MULTILINE):
            params = [re.sub(r"\(.*", "", p).strip() for p in _split_top(match.group(2) or "")]
            sig.operators.setdefault(match.group(1), params)
    return sig


# -------------------------------------------------------------------------------------------- mapping


class ActionMapping(BaseModel):
    """Event -> spec action. ``action=None`` means: any step of the next-state relation (state-only check).

    ``arguments`` give the action's parameters in order, each ``"actor"`` or ``"args.<field>"``.
    """

    event: str
    action: str | None = None
    arguments: list[str] = Field(default_factory=list)


class VariableMapping(BaseModel):
    """Trace state field -> spec variable. ``encoding="set"`` turns every JSON list in the value into a set."""

    field: str
    variable: str
    encoding: Literal["value", "set"] = "value"


class TraceMapping(BaseModel):
    """How a trace's names correspond to a spec's names; recorded with every conformance result."""

    actions: list[ActionMapping] = Field(default_factory=list)
    variables: list[VariableMapping] = Field(default_factory=list)
    constants: dict[str, str] = Field(default_factory=dict)  # trace config key -> spec constant
    init_event: str | None = INIT_EVENT  # a first line with this event constrains the initial state
    next_action: str = "Next"  # what unmapped events (action=None) are checked against
    source: Literal["names", "llm", "manual"] = "names"
    notes: list[str] = Field(default_factory=list)  # what could not be mapped, and what was done instead

    def for_event(self, event: str) -> ActionMapping | None:
        return next((a for a in self.actions if a.event == event), None)


class EventShape(BaseModel):
    """What the traces show about one event name: how often, whether it has an actor, which args."""

    count: int = 0
    has_actor: bool = True
    args: list[str] = Field(default_factory=list)  # arg fields present in every occurrence
    example: dict[str, Any] = Field(default_factory=dict)


class TraceSummary(BaseModel):
    events: dict[str, EventShape] = Field(default_factory=dict)
    state_fields: list[str] = Field(default_factory=list)
    config_keys: list[str] = Field(default_factory=list)


class MappingRequest(BaseModel):
    """What a mapping proposer sees: the spec's names, the traces' names, and the deterministic draft."""

    spec: SpecSignature
    traces: TraceSummary
    draft: TraceMapping
    unmatched_events: list[str] = Field(default_factory=list)
    unmatched_fields: list[str] = Field(default_factory=list)
    unmatched_constants: list[str] = Field(default_factory=list)


# The helper-LLM hook: given the request, return a complete mapping (it is checked against the spec).
MappingProposer = Callable[[MappingRequest], TraceMapping]


def _norm(name: str) -> str:
    return re.sub(r"[_\-\s]", "", name).lower()


def summarise(traces: Sequence[Trace]) -> TraceSummary:
    summary = TraceSummary()
    for trace in traces:
        for index, line in enumerate(trace.lines):
            for key in line.state:
                if key not in summary.state_fields:
                    summary.state_fields.append(key)
            if index == 0 and trace.has_init:
                summary.config_keys += [k for k in line.config if k not in summary.config_keys]
                continue
            shape = summary.events.get(line.event)
            if shape is None:
                shape = summary.events[line.event] = EventShape(args=sorted(line.args), example=line.model_dump())
            shape.count += 1
            shape.has_actor = shape.has_actor and line.actor is not None
            shape.args = [a for a in shape.args if a in line.args]
    return summary


def _match(name: str, candidates: Sequence[str]) -> str | None:
    found = [c for c in candidates if _norm(c) == _norm(name)]
    return found[0] if len(found) == 1 else None


def _arguments(params: list[str], shape: EventShape) -> list[str] | None:
    """Parameters matched to args by name; one parameter left over is the actor. None when that fails."""
    by_param = {p: _match(p, shape.args) for p in params}
    left = [p for p, arg in by_param.items() if arg is None]
    if len(left) > 1 or (left and not shape.has_actor):
        return None
    return ["actor" if arg is None else f"args.{arg}" for arg in by_param.values()]


def map_by_names(spec: SpecSignature, summary: TraceSummary) -> MappingRequest:
    """The deterministic mapping: equal names (ignoring case and underscores) only. Gaps are listed."""
    mapping = TraceMapping(source="names")
    request = MappingRequest(spec=spec, traces=summary, draft=mapping)
    for event, shape in summary.events.items():
        action = _match(event, list(spec.operators))
        arguments = _arguments(spec.operators[action], shape) if action else None
        if action is None or arguments is None:
            request.unmatched_events.append(event)
            why = "no action of that name" if action is None else f"the parameters of {action} match no event fields"
            mapping.notes.append(f"event {event}: {why}; checked against {mapping.next_action} (state only)")
            mapping.actions.append(ActionMapping(event=event))
        else:
            mapping.actions.append(ActionMapping(event=event, action=action, arguments=arguments))
    for field in summary.state_fields:
        variable = _match(field, spec.variables)
        if variable is None:
            request.unmatched_fields.append(field)
            mapping.notes.append(f"state field {field}: no variable of that name; not checked")
        else:
            mapping.variables.append(VariableMapping(field=field, variable=variable))
    for key in summary.config_keys:
        constant = _match(key, spec.constants)
        if constant is None:
            request.unmatched_constants.append(key)
            mapping.notes.append(f"config {key}: no constant of that name; the spec's cfg value is used")
        else:
            mapping.constants[key] = constant
    return request


def _checked(proposal: TraceMapping, request: MappingRequest) -> TraceMapping:
    """Keep what a proposer says only where it names things that exist; note every correction."""
    spec, summary = request.spec, request.traces
    mapping = proposal.model_copy(deep=True, update={"notes": list(proposal.notes)})
    actions: list[ActionMapping] = []
    for event in summary.events:
        entry = mapping.for_event(event) or ActionMapping(event=event)
        params = spec.operators.get(entry.action or "")
        if entry.action is not None and (params is None or len(params) != len(entry.arguments)):
            mapping.notes.append(f"proposed action {entry.action}{tuple(entry.arguments)} for {event} does not fit "
                                 f"the spec; checked against {mapping.next_action} instead")
            entry = ActionMapping(event=event)
        bad = [a for a in entry.arguments if a != "actor" and not a.startswith("args.")]
        if bad:
            mapping.notes.append(f"arguments {bad} of {event} are not 'actor' or 'args.<field>'; event checked "
                                 f"against {mapping.next_action}")
            entry = ActionMapping(event=event)
        actions.append(entry)
    mapping.actions = actions
    kept = [v for v in mapping.variables if v.variable in spec.variables and v.field in summary.state_fields]
    mapping.notes += [f"dropped variable mapping {v.field} -> {v.variable}: unknown name"
                      for v in mapping.variables if v not in kept]
    mapping.variables = kept
    mapping.constants = {k: c for k, c in mapping.constants.items() if c in spec.constants}
    return mapping


def resolve_mapping(artifact: Artifact, traces: Sequence[Trace], proposer: MappingProposer | None = None,
                    module: str | None = None) -> TraceMapping:
    """The deterministic mapping; if names do not all match and a proposer is given, its checked proposal."""
    request = map_by_names(signature(artifact, module), summarise(traces))
    gaps = request.unmatched_events or request.unmatched_fields or request.unmatched_constants
    if not gaps or proposer is None:
        return request.draft
    proposal = _checked(proposer(request), request)
    proposal.source = "llm" if proposal.source == "names" else proposal.source
    log.info("trace_validation.mapping_proposed", events=len(proposal.actions), notes=len(proposal.notes))
    return proposal


class NextRelation(BaseModel):
    """The model's next-state relation as TLA+ text and its stuttering subscript (``[][action]_subscript``),
    found by ``sysmo.evals.metrics.tla_next_relation``; with it, every replayed step must also satisfy
    ``[action]_subscript`` (a step of the model, or a stutter), as PGo's ``__IsRefinement`` demands."""

    action: str | None = None  # e.g. "Next \\/ ServerIsIdle"; None when it was not found
    subscript: str = "vars"  # the ``v`` of ``[][A]_v``, or the tuple of every variable
    source: str = ""  # "cfg NEXT", "SPECIFICATION SpecNoDeadlock", "definition Next"; "" when not found
    note: str = ""

    @property
    def found(self) -> bool:
        return self.action is not None


class MappingCoverage(BaseModel):
    """How much of what the traces log the mapping places in the spec: event names and logged state fields.

    An event is placed when it is mapped to an action of the spec, or checked against the spec's ``Next``
    alone while some state field logged on its lines is placed (the step is then checked against the spec's
    steps and the logged state); otherwise its lines check nothing of the spec. A field is placed when it is
    mapped to a spec variable; an unplaced field is never checked."""

    events: list[str] = Field(default_factory=list)  # every event name (the Init line's aside)
    fields: list[str] = Field(default_factory=list)  # every logged state field
    unplaced_events: list[str] = Field(default_factory=list)
    unplaced_fields: list[str] = Field(default_factory=list)
    next_only_events: list[str] = Field(default_factory=list)  # placed through Next and the logged state only

    @property
    def total(self) -> int:
        return len(self.events) + len(self.fields)

    @property
    def placed(self) -> int:
        return self.total - len(self.unplaced_events) - len(self.unplaced_fields)

    @property
    def value(self) -> float:
        """placed / (event names + fields); 1.0 when the traces log nothing to place."""
        return self.placed / self.total if self.total else 1.0

    @property
    def unplaced(self) -> list[str]:
        """``event X`` / ``field y`` for everything not placed, for reports."""
        return [f"event {e}" for e in self.unplaced_events] + [f"field {f}" for f in self.unplaced_fields]


def mapping_coverage(mapping: TraceMapping, traces: Sequence[Trace]) -> MappingCoverage:
    """What ``mapping`` places of the event names and state fields ``traces`` log (see ``MappingCoverage``)."""
    placed_fields = {v.field for v in mapping.variables}
    coverage = MappingCoverage()
    fields_of: dict[str, set[str]] = {}
    for trace in traces:
        for index, line in enumerate(trace.lines):
            coverage.fields += [f for f in line.state if f not in coverage.fields]
            if index == 0 and line.event == mapping.init_event:
                continue
            if line.event not in fields_of:
                coverage.events.append(line.event)
            fields_of.setdefault(line.event, set()).update(line.state)
    coverage.unplaced_fields = [f for f in coverage.fields if f not in placed_fields]
    for event in coverage.events:
        entry = mapping.for_event(event)
        if entry is not None and entry.action is not None:
            continue
        if fields_of[event] & placed_fields:
            coverage.next_only_events.append(event)
        else:
            coverage.unplaced_events.append(event)
    return coverage


# ---------------------------------------------------------------------------------- checking module


class TlaText(str):
    """A value already written as TLA+ text (PGo logs every value as a TLA+ literal): used as it is."""


class PartialFunction(dict):  # type: ignore[type-arg]
    """The values of a function-valued variable at some points of its domain: only those points are checked
    (``var'[k] = v`` for each logged ``k`` in the variable's domain), the rest of the variable is free."""


def tla_value(value: Any, as_set: bool = False, where: str = "value") -> str:
    """A JSON value as a TLA+ literal: lists -> tuples (sets when ``as_set``), objects -> records."""
    if isinstance(value, TlaText):
        return str(value)
    if isinstance(value, PartialFunction):
        if not value:
            return "<<>>"
        return "(" + " @@ ".join(f"{tla_value(k, as_set, where)} :> {tla_value(v, as_set, f'{where}[{k}]')}"
                                 for k, v in value.items()) + ")"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
        return f'"{escaped}"'
    if isinstance(value, list):
        items = ", ".join(tla_value(v, as_set, f"{where}[{i}]") for i, v in enumerate(value))
        return f"{{{items}}}" if as_set else f"<<{items}>>"
    if isinstance(value, dict):
        if not value:
            return "<<>>"
        if all(IDENTIFIER.fullmatch(k) for k in value):
            return "[" + ", ".join(f"{k} |-> {tla_value(v, as_set, f'{where}.{k}')}" for k, v in value.items()) + "]"
        if all(re.fullmatch(r"-?\d+", k) for k in value):  # integer-keyed object: a function on those integers
            pairs = [f"{int(k)} :> {tla_value(v, as_set, f'{where}.{k}')}" for k, v in value.items()]
            return "(" + " @@ ".join(pairs) + ")"
    raise TaskError(f"trace {where} holds {value!r}, which has no TLA+ literal here (use booleans, integers, "
                    "strings, lists, and objects with identifier or integer keys)")


def _argument_value(line: TraceLine, source: str, where: str) -> str:
    if source == "actor":
        return tla_value(line.actor, where=f"{where}.actor")
    field = source.removeprefix("args.")
    if field not in line.args:
        raise TaskError(f"trace {where} has no argument {field!r} that the mapping needs")
    return tla_value(line.args[field], where=f"{where}.args.{field}")


def _state_record(line: TraceLine, mapping: TraceMapping, where: str) -> str:
    parts = [f"{v.variable} |-> {tla_value(line.state[v.field], v.encoding == 'set', f'{where}.state.{v.field}')}"
             for v in mapping.variables if v.field in line.state]
    return "[" + ", ".join(parts or ["tv__none |-> TRUE"]) + "]"


def _boxed(action: str, subscript: str) -> str:
    """``[action]_subscript``; an action written over several lines keeps its layout (its first line indented to
    its column in the model), so that its junction lists stay aligned."""
    if "\n" not in action:
        return f"[{action.strip()}]_{subscript}"
    first, *rest = action.split("\n")
    column = max(1, len(first) - len(first.lstrip()))
    return "\n" + " " * (column - 1) + "[" + first.lstrip() + "\n" + "\n".join(rest) + f"]_{subscript}"


class CheckingModule(BaseModel):
    """The generated module and cfg replaying a batch of traces (one TLC run; ``tv__t`` picks the trace)."""

    module: str
    text: str
    cfg: str
    traces: list[str]
    lines: list[int]  # per trace: lines in total (the Init line included)


def _trace_log(trace: Trace, mapping: TraceMapping) -> str:
    entries = []
    for index, line in enumerate(trace.lines):
        where = f"{trace.name} line {index + 1}"
        entry = mapping.for_event(line.event) or ActionMapping(event=line.event)
        is_init = index == 0 and line.event == mapping.init_event
        args = [] if is_init else [_argument_value(line, source, where) for source in entry.arguments]
        entries.append(f'  [event |-> {tla_value(line.event)}, args |-> <<{", ".join(args)}>>, '
                       f"state |-> {_state_record(line, mapping, where)}]")
    return "<<\n" + ",\n".join(entries) + "\n  >>"


def _init_case(number: int, trace: Trace, mapping: TraceMapping) -> str:
    """One disjunct of TV__Init: trace ``number`` starts in the logged initial state (if it logs one)."""
    lines = [f"/\\ tv__t = {number}"]
    uses_init = mapping.init_event is not None and trace.lines[0].event == mapping.init_event
    if uses_init:
        first = trace.lines[0]
        lines += [f"/\\ {v.variable} = {tla_value(first.state[v.field], v.encoding == 'set', f'{trace.name} line 1')}"
                  for v in mapping.variables if v.field in first.state]
    lines.append(f"/\\ {POSITION} = {1 if uses_init else 0}")
    return "       \\/ " + "\n          ".join(lines)


def checking_module(traces: Sequence[Trace], mapping: TraceMapping, spec_module: str, base_cfg: str | None,
                    constants: dict[str, Any] | None = None, *, registers: bool = True,
                    refinement: NextRelation | None = None) -> CheckingModule:
    """The TLA+ module (traces as literals) and cfg that TLC runs to replay ``traces`` (same constants).

    ``registers`` (for a breadth-first run with one worker): TLC register ``REGISTER_BASE + tv__t`` keeps the
    furthest line consumed of each trace, so a line is printed only when it is further than any before (not
    for every state: printing was a quarter of a replay's time), and a trace consumed to its last line is
    not extended any further (its verdict is decided; its other branches are left unexplored). A random
    simulation cannot use them (TLC 2.15 does not hand the initial predicate's registers to its simulation
    workers): every step prints.

    ``refinement`` (the model's next-state relation, when found): every step must also satisfy
    ``[A]_v`` (``TV__Refines``), evaluated once the step's state is known (a boolean check, not a second
    enumeration of the model's steps): the logged event's action must be a step of the model's own ``Next``.
    """
    if not traces:
        raise TaskError("no traces to check")
    name = f"TV_{spec_module}"
    config = {**traces[0].config, **(constants or {})}
    steps = [line for trace in traces for line in trace.lines[1 if trace.has_init else 0:]]
    always = {v.variable for v in mapping.variables if all(v.field in line.state for line in steps)}
    partial = {v.variable for v in mapping.variables
               if any(isinstance(line.state.get(v.field), PartialFunction) for line in steps)}
    state_checks = []
    for variable in dict.fromkeys(m.variable for m in mapping.variables):
        check = f"{variable}' = e.state.{variable}"
        if variable in partial:  # the logged points of the function only (PGo process-local variables)
            check = (f"\\A tv__k \\in DOMAIN e.state.{variable} : "
                     f"tv__k \\in DOMAIN {variable}' => {variable}'[tv__k] = e.state.{variable}[tv__k]")
        state_checks.append(f"       /\\ {check}" if variable in always else
                            f'       /\\ IF "{variable}" \\in DOMAIN e.state THEN {check} ELSE TRUE')
    step_cases = []
    for entry in mapping.actions:
        if entry.action is None:
            continue
        call = entry.action + (f"({', '.join(f'e.args[{i + 1}]' for i in range(len(entry.arguments)))})"
                               if entry.arguments else "")
        step_cases.append(f"          \\/ e.event = {tla_value(entry.event)} /\\ {call}")
    mapped = [tla_value(a.event) for a in mapping.actions if a.action is not None]
    step_cases.append(f"          \\/ e.event \\notin {{{', '.join(mapped)}}} /\\ {mapping.next_action}")
    const_defs = "".join(f"TV__Const_{key} == {tla_value(value, where=f'config {key}')}\n"
                         for key, value in config.items() if key in mapping.constants and IDENTIFIER.fullmatch(key))
    logs = "".join(f"TV__Log{n} == {_trace_log(t, mapping)}\n\n" for n, t in enumerate(traces, start=1))
    refines = refinement is not None and refinement.action is not None
    if refines:  # "= TRUE": TLC evaluates the conjunct (short-circuit) instead of enumerating Next's disjuncts
        logs += ("\\* every step must be a step of the model's next-state relation, or a stutter "
                 f"({refinement.source})\n"
                 f"TV__Refines == {_boxed(refinement.action, refinement.subscript)}\n\n")
        state_checks.append("       /\\ TV__Refines = TRUE")
    text = (
        f"---- MODULE {name} ----\n"
        f"\\* Generated by sysmo trace validation: replays {len(traces)} trace(s) of {spec_module}.\n"
        f"EXTENDS {spec_module}, Integers, Sequences, TLC\n\n"
        f"VARIABLES tv__t, {POSITION}  \\* which trace, and how many of its lines are consumed\n\n"
        f"{const_defs}{logs}"
        f"TV__Logs == <<{', '.join(f'TV__Log{n}' for n in range(1, len(traces) + 1))}>>\n\n"
        "\\* printed for the initial states and each further line reached: sysmo reads how far each trace got\n"
        f'TV__Reached == PrintT(<<"{REACHED}", tv__t, {POSITION}>>)\n\n'
        f"TV__Init ==\n    /\\ Init\n    /\\ " + "\n".join(_init_case(n, t, mapping) for n, t in enumerate(traces, 1))
        .removeprefix("       ") + "\n    /\\ TV__Reached\n" + (f"    /\\ TLCSet({REGISTER_BASE} + tv__t, {POSITION})\n"
                                                            if registers else "") + "\n"
        f"TV__Next ==\n    /\\ {POSITION} < Len(TV__Logs[tv__t])\n"
        + (f"    /\\ TLCGet({REGISTER_BASE} + tv__t) < Len(TV__Logs[tv__t])  \\* decided once consumed to its end\n"
           if registers else "") +
        f"    /\\ LET e == TV__Logs[tv__t][{POSITION} + 1] IN\n"
        "       /\\ \\/ FALSE\n" + "\n".join(step_cases) + "\n"
        + ("\n".join(state_checks) + "\n" if state_checks else "")
        + f"    /\\ {POSITION}' = {POSITION} + 1\n"
        "    /\\ UNCHANGED tv__t\n"
        + (f"    /\\ IF {POSITION}' > TLCGet({REGISTER_BASE} + tv__t)\n"
           f'       THEN PrintT(<<"{REACHED}", tv__t, {POSITION}\'>>) /\\ TLCSet({REGISTER_BASE} + tv__t, {POSITION}\')\n'
           "       ELSE TRUE\n" if registers else f'    /\\ PrintT(<<"{REACHED}", tv__t, {POSITION}\'>>)\n')
        + "====\n"
    )
    base = tlc_cfg.parse(base_cfg) if base_cfg else tlc_cfg.TlcConfig()
    overridden = {mapping.constants[key] for key in config if key in mapping.constants}
    kept = [c for c in base.constants if re.split(r"\s*(?:=|<-)\s*", c, maxsplit=1)[0].strip() not in overridden]
    assigned = [f"{mapping.constants[key]} <- TV__Const_{key}" for key in config
                if key in mapping.constants and IDENTIFIER.fullmatch(key)]
    cfg = tlc_cfg.TlcConfig(init="TV__Init", next="TV__Next", constants=kept + assigned).render()
    return CheckingModule(module=name, text=text, cfg=cfg, traces=[t.name for t in traces],
                          lines=[len(t.lines) for t in traces])


# ---------------------------------------------------------------------------------------------- check


class TraceVerdict(BaseModel):
    """Whether one trace was accepted, how far it got, and what TLC said."""

    trace: str
    lines: int  # trace lines including the Init line
    accepted: bool
    outcome: Outcome  # ok (accepted) | failed (rejected) | inconclusive (timeout) | error (could not check)
    events_consumed: int  # lines matched, from the start
    first_failing_event: int | None = None  # 0-based line index of the first line that could not be matched
    failing_event: str | None = None  # that line's event name
    reason: str = ""
    run: int | None = None  # index into ConformanceResult.runs of the TLC run that decided this verdict


class ConformanceResult(BaseModel):
    """Accepted traces / traces, with the mapping used, a verdict per trace and the TLC runs behind them."""

    mapping: TraceMapping
    traces: list[TraceVerdict] = Field(default_factory=list)
    runs: list[CheckResult] = Field(default_factory=list)
    refinement: NextRelation | None = None  # the next-state relation every step was checked against, if any

    @property
    def accepted(self) -> int:
        return sum(v.accepted for v in self.traces)

    @property
    def score(self) -> float:
        return self.accepted / len(self.traces) if self.traces else 0.0

    @property
    def outcome(self) -> Outcome:
        """ok: every trace accepted; failed: some trace rejected; inconclusive: only timeouts; error otherwise."""
        outcomes = {v.outcome for v in self.traces}
        if Outcome.FAILED in outcomes:
            return Outcome.FAILED
        if not self.traces or Outcome.ERROR in outcomes:
            return Outcome.ERROR
        if Outcome.INCONCLUSIVE in outcomes:
            return Outcome.INCONCLUSIVE
        return Outcome.OK


def _reached(output: str) -> dict[int, int]:
    reached: dict[int, int] = {}
    for match in re.finditer(rf'<<"{REACHED}", (\d+), (\d+)>>', output):
        number, consumed = int(match.group(1)), int(match.group(2))
        reached[number] = max(reached.get(number, 0), consumed)
    return reached


class Walks(BaseModel):
    """A random simulation of the replay: ``num`` walks from random initial states (a random trace each)."""

    num: int
    depth: int
    seed: int = 1


def _run(files: dict[str, str], checking: CheckingModule, timeout_s: float,
         walks: Walks | None = None) -> tuple[CheckResult, dict[int, int]]:
    """One TLC run of the checking module (breadth-first, or the random ``walks``); the result and the furthest
    line consumed per trace number."""
    heap = settings().sandbox.jvm_heap_mb
    limits = Limits(timeout_s=timeout_s, cpu_s=int(timeout_s * 4) + 60, memory_mb=heap + 1024,
                    output_limit_bytes=50_000_000)
    mode = ([] if walks is None else
            ["-simulate", f"num={walks.num}", "-depth", str(walks.depth), "-seed", str(walks.seed)])
    args = ["-tool", "-workers", "1", "-deadlock", "-config", f"{checking.module}.cfg", "-metadir", "states",
            *mode, checking.module]
    run = run_java("tlc2.TLC", args, files={**files, f"{checking.module}.tla": checking.text,
                                             f"{checking.module}.cfg": checking.cfg},
                   limits=limits, jvm_flags=TLC_REPLAY_JVM_FLAGS, heap_mb=heap)
    report = parse_output(run.output)
    errors = [v for v in report.violations if v.kind != "deadlock"]
    broken = [v for v in errors if v.kind in ("config", "parse")]
    if broken:  # the replay could not start: the spec does not parse or the constants cannot be given
        outcome, reason = Outcome.ERROR, f"{broken[0].kind}: {broken[0].message[:500]}"
    elif run.timed_out:
        outcome, reason = Outcome.INCONCLUSIVE, f"TLC did not finish within {timeout_s:.0f} s"
    elif any(v.kind == "resources" for v in errors):  # heap, file size, disk: says nothing about the spec
        outcome, reason = Outcome.INCONCLUSIVE, next(v.message for v in errors if v.kind == "resources")
    elif errors:
        outcome, reason = Outcome.FAILED, f"{errors[0].kind}: {errors[0].message[:500]}"
    elif report.success and (report.queue_left or 0) > 0:  # TLCSet("exit", ...) in the spec, or a limit
        outcome, reason = Outcome.ERROR, (f"TLC stopped with {report.queue_left} states left on its queue: the "
                                          "spec ended the replay early")
    elif report.success:
        outcome, reason = Outcome.OK, "every reachable state of the replay explored"
    elif walks is not None and report.mode == "simulate" and report.finished:
        outcome, reason = Outcome.OK, f"{walks.num} random walks of at most {walks.depth - 1} steps ran without error"
    else:
        outcome, reason = Outcome.ERROR, f"TLC ended without finishing (exit code {run.returncode})"
    raw, truncated = CheckResult.bound_output(run.output)
    diagnostics = [Diagnostic(tool=TOOL, severity=Severity.ERROR, code=v.kind, message=v.message,
                              line=v.location.line if v.location else None,
                              column=v.location.column if v.location else None,
                              file=f"{v.location.module}.tla" if v.location else None) for v in errors]
    result = CheckResult(
        tool=TOOL, tool_version=f"TLC {report.version} (rev {report.revision or 'unknown'})", outcome=outcome,
        diagnostics=diagnostics, duration_s=run.duration_s, raw_output=raw, truncated=truncated,
        details={"reason": reason, "module": checking.module, "cfg": checking.cfg, "traces": checking.traces,
                 "mode": "bfs" if walks is None else "simulate",
                 "timed_out": run.timed_out, "error_trace": [s.model_dump() for s in report.trace],
                 "returncode": run.returncode, "isolation": run.isolation})
    return result, _reached(run.output)


def _verdicts(traces: Sequence[Trace], result: CheckResult, reached: dict[int, int], run: int) -> list[TraceVerdict]:
    verdicts = []
    for number, trace in enumerate(traces, start=1):
        total, consumed = len(trace.lines), reached.get(number, 0)
        base = dict(trace=trace.name, lines=total, events_consumed=consumed, run=run)
        if consumed >= total:  # the last line was matched too: the only way to be accepted
            verdicts.append(TraceVerdict(**base, accepted=True, outcome=Outcome.OK, reason="consumed to its last line"))
            continue
        line = trace.lines[consumed]
        where = dict(first_failing_event=consumed, failing_event=line.event)
        if result.outcome == Outcome.OK:
            why = ("no initial state of the spec matches the first line" if number not in reached
                   else f"no step of the spec reproduces line {consumed + 1} ({line.event}) from any state "
                        f"matching lines 1-{consumed}")
            verdicts.append(TraceVerdict(**base, **where, accepted=False, outcome=Outcome.FAILED, reason=why))
        elif result.outcome == Outcome.INCONCLUSIVE:
            verdicts.append(TraceVerdict(**base, accepted=False, outcome=Outcome.INCONCLUSIVE,
                                         reason=f"inconclusive: {result.details['reason']} (reached line {consumed})"))
        elif result.outcome == Outcome.FAILED and len(traces) == 1:
            verdicts.append(TraceVerdict(**base, **where, accepted=False, outcome=Outcome.FAILED,
                                         reason=f"the spec failed while replaying line {consumed + 1}: "
                                                f"{result.details['reason']}"))
        else:
            verdicts.append(TraceVerdict(**base, accepted=False, outcome=Outcome.ERROR,
                                         reason=f"TLC could not check the trace: {result.details['reason']}"))
    return verdicts


def _spec_files(artifact: Artifact, module: str | None) -> tuple[str, dict[str, str], str | None]:
    if artifact.language != Language.TLA:
        raise TaskError(f"trace validation needs a TLA+ artifact, not {artifact.language.value}")
    spec = prepare(artifact, module)
    tla = {name: text for name, text in spec.files.items() if name.endswith(".tla")}
    return spec.main_module, tla, spec.files.get(f"{spec.main_module}.cfg")


def _batches(traces: Sequence[Trace], constants: dict[str, Any] | None, size: int) -> list[list[Trace]]:
    """Traces grouped by their configuration (constants are per TLC run), at most ``size`` per group."""
    groups: dict[str, list[Trace]] = {}
    for trace in traces:
        groups.setdefault(json.dumps({**trace.config, **(constants or {})}, sort_keys=True), []).append(trace)
    return [group[i:i + size] for group in groups.values() for i in range(0, len(group), size)]


def loosely_mapped(mapping: TraceMapping, traces: Sequence[Trace]) -> bool:
    """Some event is checked against ``Next`` alone, or some logged field against no variable: the replay may
    branch at every line (with every event and field mapped, each line pins the step and the state)."""
    named = {v.field for v in mapping.variables}
    if any(entry.action is None for entry in mapping.actions):
        return True
    events = {entry.event for entry in mapping.actions}
    return any((line.event not in events and line.event != mapping.init_event) or set(line.state) - named
               for trace in traces for line in trace.lines)


def validate_traces(artifact: Artifact, traces: Sequence[Path | Trace], *, mapping: TraceMapping | None = None,
                    proposer: MappingProposer | None = None, module: str | None = None,
                    constants: dict[str, Any] | None = None, cfg: str | None = None,
                    timeout_s: float = DEFAULT_TIMEOUT_S, batch_size: int = 16,
                    parallel: int | None = None, walks_per_trace: int = DEFAULT_WALKS_PER_TRACE,
                    refinement: NextRelation | None = None) -> ConformanceResult:
    """Conformance: score = accepted traces / traces, with the mapping recorded and the first failing line.

    ``mapping`` defaults to the name-based one (gaps filled by ``proposer`` when given); ``cfg`` (default:
    the artifact's ``<Main>.cfg``) supplies constants the traces' Init lines do not. Traces sharing a
    configuration are replayed in one TLC run; if the spec fails to evaluate during a shared run, the
    traces it left undecided are replayed alone so that the failure is attributed to the right trace.
    The TLC runs are independent: up to ``parallel`` of them run at once (default: one per core, at most
    2, as the other TLC stages). Verdicts, runs and their order are the same as when run one at a time.

    ``walks_per_trace`` (default 25; 0 turns it off): when the mapping constrains the log loosely (an event
    checked against ``Next`` alone, or a logged field no variable stands for: ``loosely_mapped``), before the
    breadth-first replay one random simulation per batch walks ``walks_per_trace x traces`` times from random
    initial states (TLC ``-simulate``, fixed seed, at most ``WALK_TIMEOUT_S``). A trace some walk consumes to
    its last line is accepted: the model reproduces it, which is what the replay asks, and the breadth-first
    replay is left for the other traces. A loose mapping makes breadth-first replay explore every
    interleaving up to the trace's length, past any time limit (SysMoBench's DeepSeek-R1 locksvc: no trace
    decided in 120 s; 16 traces accepted by 400 walks in 3.6 s). With every event and field mapped each line
    pins the step and the state, breadth-first replay is narrow, and no walks are made. If a walk meets an
    evaluation error, the walks decide nothing and every trace is replayed breadth-first as before (walks cut
    short by their time limit keep what they reproduced). The one difference from
    breadth-first alone: a trace a walk reproduces is accepted even where breadth-first search would first
    have stopped at an evaluation error in some other branch of the same trace.

    ``refinement`` (default None: not checked): the model's next-state relation; every replayed step (walks
    included) must also be a step of it or a stutter (``checking_module``). It is recorded in the result.
    """
    loaded = [t if isinstance(t, Trace) else read_trace(t) for t in traces]
    main, files, own_cfg = _spec_files(artifact, module)
    used = mapping or resolve_mapping(artifact, loaded, proposer, main)
    base_cfg = cfg if cfg is not None else own_cfg
    result = ConformanceResult(mapping=used, refinement=refinement)
    verdicts: dict[str, TraceVerdict] = {}
    pending = _batches(loaded, constants, max(1, batch_size))

    def replay(batch: list[Trace]) -> tuple[CheckResult, dict[int, int]]:
        return _run(files, checking_module(batch, used, main, base_cfg, constants, refinement=refinement), timeout_s)

    def walk(batch: list[Trace]) -> tuple[CheckResult, dict[int, int]]:
        plan = Walks(num=walks_per_trace * len(batch), depth=max(len(t.lines) for t in batch) + 1)
        return _run(files, checking_module(batch, used, main, base_cfg, constants, registers=False,
                                           refinement=refinement),
                    min(timeout_s, WALK_TIMEOUT_S), plan)

    with ThreadPoolExecutor(max_workers=max(1, parallel or default_parallel())) as pool:
        if walks_per_trace > 0 and loosely_mapped(used, loaded):  # a walk-reproduced trace is accepted
            for batch, (run, reached) in zip(pending, pool.map(walk, pending), strict=True):
                if run.outcome in (Outcome.FAILED, Outcome.ERROR):  # breadth-first replay decides every trace
                    log.info("trace_validation.walks_discarded", module=main, traces=len(batch),
                             outcome=run.outcome.value, reason=str(run.details.get("reason", ""))[:200])
                    continue
                result.runs.append(run)
                for trace, verdict in zip(batch, _verdicts(batch, run, reached, len(result.runs) - 1), strict=True):
                    if verdict.accepted:
                        verdicts[trace.name] = verdict.model_copy(update={"reason": "a random walk of the spec "
                                                                          "consumed it to its last line"})
            pending = [b for b in ([t for t in batch if t.name not in verdicts] for batch in pending) if b]
        while pending:  # one wave of independent runs, then their retries (same order as one at a time)
            wave, pending = pending, []
            for batch, (run, reached) in zip(wave, pool.map(replay, wave), strict=True):
                result.runs.append(run)
                for trace, verdict in zip(batch, _verdicts(batch, run, reached, len(result.runs) - 1), strict=True):
                    if verdict.outcome == Outcome.ERROR and run.outcome == Outcome.FAILED and len(batch) > 1:
                        pending.append([trace])  # an evaluation error stopped the shared run: replay it alone
                    else:
                        verdicts[trace.name] = verdict
    result.traces = [verdicts[t.name] for t in loaded]
    log.info("trace_validation.done", module=main, traces=len(loaded), accepted=result.accepted,
             runs=len(result.runs), outcome=result.outcome.value, mapping=used.source)
    return result


def validate_trace(artifact: Artifact, trace: Trace | Path, mapping: TraceMapping | None = None,
                   **options: Any) -> TraceVerdict:
    """Replay one trace; accepted only if its last line is consumed."""
    return validate_traces(artifact, [trace], mapping=mapping, **options).traces[0]

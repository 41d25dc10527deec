"""Read TLC's ``-tool`` output: tagged messages, error traces as states, per-action coverage, statistics.

TLC frames each message as ``@!@!@STARTMSG <code>:<level> @!@!@ ... @!@!@ENDMSG <code> @!@!@`` and
messages can nest (an exception message holding the evaluation error). The codes are TLC 2.15's
``tlc2.output.EC`` constants named below.
"""

from __future__ import annotations

import re
from enum import IntEnum

from pydantic import BaseModel, Field


class Code(IntEnum):
    """The TLC 2.15 message codes this reader acts on (from ``tlc2.output.EC``)."""

    GENERAL = 1000  # "TLC threw an unexpected exception": evaluation or configuration error inside
    OUT_OF_MEMORY = 1001
    OUT_OF_MEMORY_INIT = 1002
    STACK_OVERFLOW = 1005
    NESTED_EXPRESSION = 2103  # positions of the expression being evaluated when an error struck
    ASSUMPTION_FALSE = 2104
    ASSUMPTION_EVALUATION_ERROR = 2105
    STATE_NOT_SPECIFIED_INIT = 2106
    INVARIANT_VIOLATED_INITIAL = 2107
    PROPERTY_VIOLATED_INITIAL = 2108
    STATE_NOT_SPECIFIED_NEXT = 2109
    INVARIANT_VIOLATED = 2110
    INVARIANT_EVALUATION_FAILED = 2111
    ACTION_PROPERTY_VIOLATED = 2112
    ACTION_PROPERTY_EVALUATION_FAILED = 2113
    DEADLOCK = 2114
    TEMPORAL_PROPERTY_VIOLATED = 2116
    NO_INITIAL_STATES = 2118
    BEHAVIOR_UP_TO_THIS_POINT = 2121
    BACK_TO_STATE = 2122
    ASSERT_FAILED = 2132
    TLC_STARTING = 2185
    TLC_FINISHED = 2186
    MODE_MC = 2187
    MODE_SIMULATION = 2188
    SUCCESS = 2193  # "Model checking completed. No error has been found."
    SEARCH_DEPTH = 2194
    STATS = 2199
    PROGRESS = 2200
    STATS_SIMULATION = 2210
    STATE = 2217
    STATE_STUTTERING = 2218
    VERSION = 2262
    COUNTER_EXAMPLE = 2264
    PARSING_FAILED = 3002
    COVERAGE_NEXT = 2772
    COVERAGE_INIT = 2773


# Codes 2222..2245 and 2279..2284 complain about the configuration; 5001..5006 about reading the cfg file.
CONFIG_ERROR_CODES = set(range(2222, 2246)) | {2279, 2280, 2281, 2284} | set(range(5001, 5007))
EVALUATION_ERROR_CODES = {
    Code.ASSUMPTION_EVALUATION_ERROR, Code.STATE_NOT_SPECIFIED_INIT, Code.STATE_NOT_SPECIFIED_NEXT,
    Code.INVARIANT_EVALUATION_FAILED, Code.ACTION_PROPERTY_EVALUATION_FAILED, Code.NO_INITIAL_STATES,
    Code.ASSERT_FAILED, Code.STACK_OVERFLOW, *range(2169, 2185), 2141, 2142, 2143, 2144, 2145, 2146, 2147,
    2154, 2155, 2157, 2158, 2164, 2165, 2172, 2215, 2246, 2247, 2248, 2250, 2252, 2265,
}
LEVEL_ERROR = 1

MARKER = re.compile(r"@!@!@(STARTMSG (\d+):(\d+)|ENDMSG (\d+)) @!@!@\n?")
LOCATION = re.compile(r"line (\d+), col (\d+) to line (\d+), col (\d+) of module (\w+)")
NESTED_POSITION = re.compile(r"Line (\d+), column (\d+) to line (\d+), column (\d+) in (\w+)")
ACTION_HEAD = re.compile(r"^(\d+): <(.+?)>\s*$")
# An action's coverage line. TLC 2.15 adds the span of the action's body after the definition's location:
#   <RequestRead line 257, col 1 to line 257, col 14 of module M (259 5 265 110)>: 0:12   (2.15)
#   <Inc line 9, col 1 to line 9, col 3 of module M>: 5:5                                 (older)
# the two numbers are distinct new states : states generated (distinct is 0 in simulation mode).
COVERAGE = re.compile(
    r"^<(?P<name>\w+) " + LOCATION.pattern
    + r"(?: \((?P<body_line>\d+) (?P<body_col>\d+) (?P<body_end_line>\d+) (?P<body_end_col>\d+)\))?"
    + r">: (?P<distinct>\d+):(?P<generated>\d+)"
)
STATS = re.compile(r"([\d,]+) states generated.*?([\d,]+) distinct states found.*?([\d,]+) states left on queue")
SIM_STATS = re.compile(r"([\d,]+) states checked")
DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
VERSION = re.compile(r"TLC2 Version (\S+)(?: of .*?\(rev: (\w+)\))?")

# What TLC (or the JVM under it) prints when the check ran out of a resource or hit one of TLC's own limits,
# and the reason told to the user. Such a run says nothing about the spec: its verdict is "inconclusive".
RESOURCE_LIMITS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"Java heap space|OutOfMemoryError|GC overhead limit exceeded|Direct buffer memory|"
                r"Requested array size exceeds VM limit|Cannot allocate memory", re.IGNORECASE),
     "TLC ran out of memory"),
    (re.compile(r"File too large", re.IGNORECASE), "TLC hit the file-size limit for its state files"),
    (re.compile(r"No space left on device|Disk quota exceeded", re.IGNORECASE), "TLC ran out of disk space"),
    (re.compile(r"unable to create (?:new )?native thread", re.IGNORECASE), "TLC hit the process limit"),
    (re.compile(r"too many elements|Too many possible next states|"
                r"Overflow when computing the number of elements", re.IGNORECASE),
     "TLC hit its enumeration limit (a set or a choice of successors too large to build)"),
]


class TlcMessage(BaseModel):
    code: int
    level: int
    text: str


class SourceSpan(BaseModel):
    module: str
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None


class TraceState(BaseModel):
    """One state of an error trace: its number, the action that led to it, and each variable's value text."""

    number: int
    action: str  # an action name, "Initial predicate" or "Stuttering"
    location: SourceSpan | None = None
    variables: dict[str, str] = Field(default_factory=dict)
    back_to_state: int | None = None  # for a lasso: the state this one loops back to

    def render(self) -> str:
        head = f"{self.number}: <{self.action}>" if self.back_to_state is None else \
            f"{self.number}: <{self.action}> back to state {self.back_to_state}"
        return "\n".join([head] + [f"/\\ {k} = {v}" for k, v in self.variables.items()])


class ActionCoverage(BaseModel):
    """How often an action fired: ``distinct`` new states and ``generated`` successor states."""

    name: str
    location: SourceSpan | None = None
    distinct: int = 0
    generated: int = 0

    @property
    def covered(self) -> bool:
        return self.generated > 0


class Violation(BaseModel):
    """Why TLC rejected the model: the kind, the invariant/property name when TLC says it, the message."""

    kind: str  # invariant | property | action-property | deadlock | assumption | evaluation | config | parse
    name: str | None = None
    message: str
    location: SourceSpan | None = None


class TlcReport(BaseModel):
    """Everything read from one TLC run."""

    mode: str = "bfs"  # bfs | simulate
    version: str = "unknown"
    revision: str | None = None
    finished: bool = False  # TLC printed its "Finished in ..." line
    success: bool = False  # TLC printed "No error has been found"
    violations: list[Violation] = Field(default_factory=list)
    trace: list[TraceState] = Field(default_factory=list)
    coverage: list[ActionCoverage] = Field(default_factory=list)
    init_coverage: list[ActionCoverage] = Field(default_factory=list)
    states_generated: int | None = None
    distinct_states: int | None = None
    queue_left: int | None = None
    depth: int | None = None
    messages: list[TlcMessage] = Field(default_factory=list)
    untagged: str = ""  # text outside any message (SANY's own output)

    def trace_text(self, limit: int = 12) -> str:
        """The error trace as TLC prints it, shortened to the first two and last ``limit - 2`` states."""
        states = self.trace
        if len(states) > limit:
            cut = len(states) - limit
            shown = [s.render() for s in states[:2]] + [f"... ({cut} states left out) ..."] + \
                [s.render() for s in states[-(limit - 2):]]
        else:
            shown = [s.render() for s in states]
        return "\n\n".join(shown)

    @property
    def covered_actions(self) -> list[str]:
        return [c.name for c in self.coverage if c.covered]

    def codes(self) -> set[int]:
        return {m.code for m in self.messages}


def split_messages(output: str) -> tuple[list[TlcMessage], str]:
    """The tagged messages (text of nested ones kept apart) and the untagged text between them."""
    messages: list[TlcMessage] = []
    stack: list[tuple[int, int, list[str]]] = []
    untagged: list[str] = []
    position = 0
    for match in MARKER.finditer(output):
        segment = output[position:match.start()]
        (stack[-1][2] if stack else untagged).append(segment)
        position = match.end()
        if match.group(2) is not None:
            stack.append((int(match.group(2)), int(match.group(3)), []))
        elif stack:
            code, level, parts = stack.pop()
            messages.append(TlcMessage(code=code, level=level, text="".join(parts).strip()))
    tail = output[position:]
    (stack[-1][2] if stack else untagged).append(tail)
    while stack:  # a run killed mid-message: keep what was printed
        code, level, parts = stack.pop()
        messages.append(TlcMessage(code=code, level=level, text="".join(parts).strip()))
    return messages, "".join(untagged)


def _span(match: re.Match[str] | None) -> SourceSpan | None:
    if match is None:
        return None
    line, col, end_line, end_col = (int(g) for g in match.groups()[:4])
    return SourceSpan(module=match.group(5), line=line, column=col, end_line=end_line, end_column=end_col)


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def parse_state(text: str) -> TraceState | None:
    """A 2217/2218 message: ``N: <Action line ... of module M>`` then ``/\\ var = value`` lines."""
    lines = text.strip("\n").split("\n")
    if not lines:
        return None
    first = lines[0].strip()
    stuttering = re.match(r"^(\d+): Stuttering", first)
    if stuttering:
        return TraceState(number=int(stuttering.group(1)), action="Stuttering")
    # "1: Back to state: <Next line ...>": the lasso's last step leads back to state 1 through Next
    back = re.match(r"^(\d+): Back to state:?\s*(?:<(.+?)>)?", first)
    if back:
        label = back.group(2) or ""
        location = _span(LOCATION.search(label))
        return TraceState(number=0, action=label.split(" line ")[0].strip() or "Back to state",
                          location=location, back_to_state=int(back.group(1)))
    head = ACTION_HEAD.match(first)
    if not head:
        return None
    label = head.group(2)
    location = _span(LOCATION.search(label))
    action = label.split(" line ")[0].strip() if location else label
    return TraceState(number=int(head.group(1)), action=action, location=location,
                      variables=parse_variables("\n".join(lines[1:])))


def parse_variables(body: str) -> dict[str, str]:
    """A state as TLC prints it, ``/\\ var = value`` lines (a value may go on over several lines): var -> value."""
    variables: dict[str, str] = {}
    chunks = re.split(r"^/\\ ", body, flags=re.MULTILINE) if body.lstrip().startswith("/\\") else [body]
    for chunk in chunks:
        chunk = chunk.strip()
        if not chunk or " = " not in chunk:
            continue
        name, value = chunk.split(" = ", 1)
        variables[name.strip()] = value.strip()
    return variables


def resource_limit(text: str) -> str | None:
    """The reason a check stopped for lack of a resource or at one of TLC's limits, or None.

    ``"TLC ran out of memory (Java heap space)"``: the summary and the phrase TLC or the JVM printed.
    """
    for pattern, reason in RESOURCE_LIMITS:
        found = pattern.search(text)
        if found:
            return f"{reason} ({found.group(0)})"
    return None


def _general_error(text: str) -> str:
    """TLC's "unexpected exception" message with its advice left out and the cause kept: "TLC threw an unexpected
    exception: Attempted to apply tuple <<>> to integer 1 which is out of domain." (the whole text when TLC names no
    cause; the wrapper's first words stay, ``_merge_evaluation_errors`` looks for them)."""
    flat = " ".join(text.split())
    cause = re.search(r"The exception was a [\w.$]+\s*(?::\s*)?(.*)", flat)
    if cause is None or not cause.group(1).strip():
        return flat
    return f"TLC threw an unexpected exception: {cause.group(1).strip()}"


def _violation(message: TlcMessage) -> Violation | None:
    code, text = message.code, message.text
    exhausted = resource_limit(text) if code not in (Code.INVARIANT_VIOLATED, Code.INVARIANT_VIOLATED_INITIAL,
                                                     Code.TEMPORAL_PROPERTY_VIOLATED, Code.ASSERT_FAILED) else None
    if exhausted is not None:
        return Violation(kind="resources", message=exhausted)
    if code in (Code.INVARIANT_VIOLATED, Code.INVARIANT_VIOLATED_INITIAL):
        name = re.search(r"Invariant (\w+) is violated", text)
        return Violation(kind="invariant", name=name.group(1) if name else None, message=text)
    if code in (Code.ACTION_PROPERTY_VIOLATED,):
        name = re.search(r"Action property (\w+) is violated", text)
        return Violation(kind="action-property", name=name.group(1) if name else None, message=text)
    if code in (Code.TEMPORAL_PROPERTY_VIOLATED, Code.PROPERTY_VIOLATED_INITIAL):
        name = re.search(r"property (\w+) is violated", text)
        return Violation(kind="property", name=name.group(1) if name else None, message=" ".join(text.split()))
    if code == Code.DEADLOCK:
        return Violation(kind="deadlock", message=text)
    if code == Code.ASSUMPTION_FALSE:
        return Violation(kind="assumption", message=text, location=_span(LOCATION.search(text)))
    if code == Code.PARSING_FAILED:
        return Violation(kind="parse", message=text)
    if code in CONFIG_ERROR_CODES and message.level == LEVEL_ERROR:
        return Violation(kind="config", message=" ".join(text.split()))
    if code == Code.GENERAL and message.level == LEVEL_ERROR:
        exception = re.search(r"The exception was a ([\w.$]+)", text)
        kind = "config" if exception and "ConfigFileException" in exception.group(1) else "evaluation"
        return Violation(kind=kind, message=_general_error(text))
    if code in EVALUATION_ERROR_CODES and message.level == LEVEL_ERROR:
        return Violation(kind="evaluation", message=" ".join(text.split()),
                         location=_span(LOCATION.search(text)))
    if code in (Code.OUT_OF_MEMORY, Code.OUT_OF_MEMORY_INIT):
        return Violation(kind="resources", message="TLC ran out of memory: " + " ".join(text.split()))
    if message.level == LEVEL_ERROR:  # an error-level message of a code not listed above is still an error
        return Violation(kind="evaluation", message=" ".join(text.split()), location=_span(LOCATION.search(text)))
    return None


def parse_output(output: str) -> TlcReport:
    """Read a whole ``tlc2.TLC -tool`` output (complete or cut short by a timeout)."""
    messages, untagged = split_messages(output)
    report = TlcReport(messages=messages, untagged=untagged)
    nested_positions: list[SourceSpan] = []
    evaluation_details: list[str] = []
    for message in messages:
        code, text = message.code, message.text
        if code == Code.VERSION:
            version = VERSION.search(text)
            if version:
                report.version, report.revision = version.group(1), version.group(2)
        elif code == Code.MODE_SIMULATION:
            report.mode = "simulate"
        elif code == Code.TLC_FINISHED:
            report.finished = True
        elif code == Code.SUCCESS:
            report.success = True
        elif code in (Code.STATE, Code.STATE_STUTTERING, Code.BACK_TO_STATE):
            state = parse_state(text)
            if state is not None:
                if state.back_to_state is not None:  # the loop-back step is numbered after the last state
                    state.number = (report.trace[-1].number if report.trace else 0) + 1
                report.trace.append(state)
        elif code in (Code.COVERAGE_NEXT, Code.COVERAGE_INIT):
            match = COVERAGE.match(text)
            if match:
                entry = ActionCoverage(name=match.group("name"), location=_span(LOCATION.search(text)),
                                       distinct=int(match.group("distinct")),
                                       generated=int(match.group("generated")))
                target = report.coverage if code == Code.COVERAGE_NEXT else report.init_coverage
                # coverage is printed periodically: the last report of an action wins
                target[:] = [c for c in target if c.name != entry.name or c.location != entry.location]
                target.append(entry)
        elif code in (Code.STATS, Code.PROGRESS):
            stats = STATS.search(text)
            if stats:
                report.states_generated, report.distinct_states, report.queue_left = (
                    _number(g) for g in stats.groups())
        elif code == Code.STATS_SIMULATION:
            stats = SIM_STATS.search(text)
            if stats:
                report.states_generated = _number(stats.group(1))
        elif code == Code.SEARCH_DEPTH:
            depth = DEPTH.search(text)
            if depth:
                report.depth = int(depth.group(1))
        elif code == Code.NESTED_EXPRESSION:
            nested_positions += [_span(m) for m in NESTED_POSITION.finditer(text)]  # type: ignore[misc]
        if message.level == LEVEL_ERROR or code in (Code.OUT_OF_MEMORY, Code.OUT_OF_MEMORY_INIT):
            if code not in (Code.BEHAVIOR_UP_TO_THIS_POINT, Code.COUNTER_EXAMPLE, Code.NESTED_EXPRESSION):
                violation = _violation(message)
                if violation is not None:
                    report.violations.append(violation)
        elif code in EVALUATION_ERROR_CODES or code in CONFIG_ERROR_CODES:
            # the reason inside a "TLC threw an unexpected exception" wrapper
            evaluation_details.append(" ".join(text.split()))
    _merge_evaluation_errors(report, nested_positions, evaluation_details)
    # the JVM's own "Exception in thread ... java.lang.OutOfMemoryError: ..." printed outside TLC's messages
    exhausted = resource_limit("\n".join(line for line in untagged.splitlines()
                                         if re.search(r"(Exception|Error)\b", line)))
    if exhausted is not None and not any(v.kind == "resources" for v in report.violations):
        report.violations.append(Violation(kind="resources", message=exhausted))
    # TLC repeats some failures (a resource: the exception, then "unable to fingerprint"; an evaluation error
    # met by a simulation twice): each is reported once
    seen: set[str] = set()
    report.violations = [v for v in report.violations if not (
        (key := v.kind + "\0" + (v.message if v.kind == "resources" else v.model_dump_json())) in seen
        or seen.add(key))]
    return report


def _merge_evaluation_errors(report: TlcReport, positions: list[SourceSpan], details: list[str]) -> None:
    """A "TLC threw an exception" message is only a wrapper: attach the real reason and innermost position."""
    for violation in report.violations:
        if details and ("TLC threw an unexpected exception" in violation.message or not violation.message):
            violation.message = "; ".join(dict.fromkeys(details))
            exhausted = resource_limit(violation.message)
            if exhausted is not None:  # the wrapped reason is a resource or a TLC limit, not the spec
                violation.kind, violation.message = "resources", f"{exhausted}: {violation.message}"
        if violation.kind == "evaluation" and violation.location is None and positions:
            violation.location = positions[-1]


# -tool messages that say nothing about the model: progress, statistics, coverage (tlc2.output.EC)
NOISE_CODES = {Code.TLC_STARTING, Code.TLC_FINISHED, Code.MODE_MC, Code.MODE_SIMULATION, 2189, 2190, Code.STATS,
               Code.PROGRESS, 2201, 2202, 2209, Code.STATS_SIMULATION, 2220, 2221, Code.VERSION,
               Code.COVERAGE_NEXT, Code.COVERAGE_INIT, *range(2774, 2780)}


def printed_output(raw: str) -> str:
    """TLC's ``-tool`` output as a reader sees it: the message frames removed and progress, statistics and
    coverage left out, so the error and its trace are what remains (the end of the framed output is the coverage
    report, not the error); output that is not framed is returned as it is."""
    if "@!@!@STARTMSG" not in raw:
        return raw
    messages, untagged = split_messages(raw)
    kept = [m.text for m in messages if m.code not in NOISE_CODES and m.text]
    # the untagged lines (SANY's parsing log) come before the messages, as TLC prints them
    return "\n".join(([untagged.strip()] if untagged.strip() else []) + kept)

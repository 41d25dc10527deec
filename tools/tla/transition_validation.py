"""Transition validation: is each recorded (pre state, post state) window of a real system one step of a spec action?

A window is one recorded transition of the system: the state before and after one occurrence of an action, with
the input that triggered it (a message) when there is one. SysMoBench's ``tv-eval`` records them per action
as ``windows_<Action>.ndjson``; :func:`read_windows` reads that format. A ``TransitionMapping`` says how the
recorded fields become spec variables (``VariableBinding``: the pre state as an initial-state constraint, the
post state as a check on the successor; auxiliary variables get defaults or a set to choose from), how the action
is called (its parameters' domains) and which constants TLC uses.

:func:`checking_module` writes ONE module per action that EXTENDS the spec and holds every window as a TLA+
literal: ``tv__window`` is chosen in the initial state (so one TLC run checks all windows), the pre state is set
from that window, the next-state relation is one step of the action, and every step prints which checks of the
recorded post state it misses (``tv__post``). A window passes when some step misses none. A window with no step
at all is one the action is not enabled in; one whose steps all miss gets the closest step's differences as its
explanation. The run is bounded (states, time): when it ends early a window without a passing step is
inconclusive, never passed. If the spec fails to evaluate on some window, the undecided windows are checked again
in halves, so one window's error does not decide the others.

>>> mapping = TransitionMapping(action="AcquireLock", parameters={"t": "Threads"},
...                              variables=[VariableBinding(variable="pc", field="pc"), ...])
>>> result = validate_action(artifact, mapping, read_windows(Path("windows_AcquireLock.ndjson")))
>>> result.passed, result.pass_rate
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.check import CheckResult, Outcome
from sysmo.errors import TaskError
from sysmo.log import get_logger
from sysmo.tools.tla import cfg as tlc_cfg
from sysmo.tools.tla import tlc
from sysmo.tools.tla.source import prepare
from sysmo.tools.tla.trace_validation import TlaText, signature, tla_value

log = get_logger(__name__)

WINDOW = "tv__window"  # which window the state belongs to (chosen in the initial state)
STEP = "tv__step"  # 0 in the pre state, 1 after the action's step
PRE = "tv__pre"  # tag printed for every initial state
POST = "tv__post"  # tag printed for every step, with the checks it misses
MARKER = "tv__"
WINDOW_RECORD = "w"  # the current window, as the harness's TV modules name it
CONDITION = "condition: "  # how a missed condition check is printed (its text follows)
# TLC register REGISTER_BASE + i for window i: 0 nothing seen yet, 1 its pre state printed, 2 a step passed (decided:
# no further steps of it are taken or printed). One worker (model_check's default) keeps the registers in one place.
REGISTER_BASE = 8192
DEFAULT_MAX_STATES = 500_000
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RUNS = 16  # TLC runs per action when the spec fails to evaluate on windows (one run otherwise)
WINDOWS_FILE = re.compile(r"^windows_(?P<action>[A-Za-z_]\w*)\.ndjson$")
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|<<|>>|\|->|[\[\]{}(),]|[^"<>|\[\]{}(),]+|[<>|]')

# ------------------------------------------------------------------------------------------------- windows


class Window(BaseModel):
    """One recorded transition: the state before and after one occurrence of an action, and its input."""

    model_config = ConfigDict(extra="allow")

    id: int
    pre: dict[str, Any]
    post: dict[str, Any]
    input: dict[str, Any] | None = None  # the triggering message, for message handlers
    actor: Any = None  # the node/thread that took the step ("node" or "actor" in the harness's files)
    trace_id: str | None = None


class WindowSet(BaseModel):
    """The windows of one action, read from one file."""

    action: str
    source: str
    windows: list[Window]


def read_windows(source: Path | str, action: str | None = None, name: str | None = None) -> WindowSet:
    """Read a ``windows_<Action>.ndjson`` file (or its text, with ``name``): one JSON object per line with ``id``,
    ``pre`` and ``post`` objects, and optionally ``input``, ``node``/``actor``, ``trace_id``. The action is the
    file name's ``<Action>`` unless given. A malformed line is a ``TaskError`` naming the file and line."""
    if isinstance(source, Path):
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise TaskError(f"cannot read windows file {source}: {exc.strerror}") from exc
        name = name or source.name
        found = WINDOWS_FILE.match(source.name)
        action = action or (found.group("action") if found else None)
    else:
        text = source
        name = name or "windows"
    if not action:
        raise TaskError(f"{name}: no action named: call the file windows_<Action>.ndjson or pass the action")
    windows: list[Window] = []
    seen: set[int] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise TaskError(f"{name} line {number} is not JSON ({exc.msg}): each line must be one window object "
                            '{"id": ..., "pre": {...}, "post": {...}}') from exc
        if not isinstance(data, dict):
            raise TaskError(f"{name} line {number} is not a window object: expected "
                            '{"id": ..., "pre": {...}, "post": {...}}')
        if "actor" not in data and "node" in data:
            data = {**data, "actor": data["node"]}
        try:
            window = Window.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise TaskError(f"{name} line {number} is not a window ({problems}): each window needs an integer "
                            '"id" and "pre" and "post" state objects') from exc
        if window.id in seen:
            raise TaskError(f"{name} line {number}: window id {window.id} appears twice")
        seen.add(window.id)
        windows.append(window)
    if not windows:
        raise TaskError(f"{name} holds no windows")
    return WindowSet(action=action, source=name, windows=windows)


def windows_in(folder: Path) -> dict[str, WindowSet]:
    """Every ``windows_<Action>.ndjson`` of a folder, by action."""
    if not folder.is_dir():
        raise TaskError(f"windows folder {folder} does not exist")
    found = {}
    for path in sorted(folder.iterdir()):
        match = WINDOWS_FILE.match(path.name)
        if match:
            found[match.group("action")] = read_windows(path)
    return found


# ------------------------------------------------------------------------------------------------- mapping


class VariableBinding(BaseModel):
    """How one spec variable is set in the pre state and checked in the post state (TLA+ text over ``w``, the
    window record: ``w.pre``, ``w.post``, ``w.input``, ``w.actor``).

    ``field`` alone: ``variable = w.pre.<field>`` and the successor must have ``variable' = w.post.<field>``.
    ``init`` replaces the pre-state expression (``relation`` ``\\in``: any value of a set, for auxiliary
    variables the recording does not show). The post check compares ``check`` (an expression over the spec's
    variables, evaluated in the successor; default the variable) with ``expect`` (default ``w.post.<field>``),
    or, with ``condition``, requires that formula of the successor. Without a field, expect or condition the
    variable is not checked (auxiliary).
    """

    variable: str
    field: str | None = None
    init: str | None = None
    relation: Literal["=", "\\in"] = "="
    check: str | None = None
    expect: str | None = None
    condition: str | None = None

    def init_text(self) -> str:
        if self.init is not None:
            return f"{self.variable} {self.relation} {self.init}"
        if self.field is None:
            raise TaskError(f"variable {self.variable}: give a recorded field or an init expression")
        return f"{self.variable} = {WINDOW_RECORD}.pre.{self.field}"


class PostCheck(BaseModel):
    """One check of the successor: ``projection`` (primed) equals ``expected``, or ``condition`` (primed) holds."""

    name: str
    projection: str | None = None
    expected: str | None = None
    condition: str | None = None


class TransitionMapping(BaseModel):
    """How one action's windows become TLC's initial states, its step, and the checks of its successor."""

    action: str  # the spec's action operator
    call: str | None = None  # the step as TLA+ text; default: \E over ``parameters`` of action(params)
    parameters: dict[str, str] = Field(default_factory=dict)  # parameter -> TLA+ set it ranges over
    variables: list[VariableBinding] = Field(default_factory=list)
    post_checks: list[PostCheck] = Field(default_factory=list)  # checks beyond the variables' own
    definitions: str = ""  # TLA+ definitions the expressions use (may use ``w``)
    constants: list[str] = Field(default_factory=list)  # cfg assignments, e.g. "Threads = {1, 2, 3}"
    values: dict[str, str] = Field(default_factory=dict)  # recorded string -> TLA+ expression
    source: str = "manual"  # manual | harness (read from a harness TV module)
    notes: list[str] = Field(default_factory=list)

    def checks(self) -> list[PostCheck]:
        found: list[PostCheck] = []
        for b in self.variables:
            if b.condition is not None:
                found.append(PostCheck(name=b.variable, condition=b.condition))
            elif b.expect is not None or b.check is not None or b.field is not None:
                expected = b.expect or (f"{WINDOW_RECORD}.post.{b.field}" if b.field else None)
                if expected is None:
                    raise TaskError(f"variable {b.variable}: a check needs a recorded field or an expect expression")
                found.append(PostCheck(name=b.variable, projection=b.check or b.variable, expected=expected))
        return found + self.post_checks

    def step(self, params: list[str]) -> str:
        """The TLA+ text of one step of the action."""
        if self.call:
            return self.call
        if not params:
            return self.action
        missing = [p for p in params if p not in self.parameters]
        if missing:
            raise TaskError(f"action {self.action}({', '.join(params)}): say which set each parameter ranges over "
                            f"(parameters: {{{', '.join(repr(p) + ': ...' for p in missing)}}}) or give the call")
        bound = ", ".join(f"{p} \\in {self.parameters[p]}" for p in params)
        return f"\\E {bound} : {self.action}({', '.join(params)})"


# ---------------------------------------------------------------------------------------- checking module


def _mapped(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str) and value in values:
        return TlaText(values[value])
    if isinstance(value, list):
        return [_mapped(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _mapped(v, values) for k, v in value.items()}
    return value


def window_literal(window: Window, values: dict[str, str]) -> str:
    """The window as a TLA+ record: ``[id, pre, post, input?, actor?]``."""
    record: dict[str, Any] = {"id": window.id, "pre": window.pre, "post": window.post}
    if window.input is not None:
        record["input"] = window.input
    if window.actor is not None:
        record["actor"] = window.actor
    return tla_value(_mapped(record, values), where=f"window {window.id}")


class ActionModule(BaseModel):
    """The generated module and cfg checking every window of one action in one TLC run."""

    module: str
    text: str
    cfg: str
    windows: list[int]  # window ids, in the order of tv__window = 1..N
    checks: list[str]


def _strip_comments(text: str) -> str:
    text = re.sub(r"\(\*.*?\*\)", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.DOTALL)
    return "\n".join(line.split("\\*", 1)[0] for line in text.splitlines())


def checking_module(spec: Artifact, mapping: TransitionMapping, windows: list[Window],
                    base_cfg: str | None = None) -> ActionModule:
    """The module (EXTENDS the spec) and cfg that check ``windows`` against ``mapping.action`` in one TLC run."""
    if not windows:
        raise TaskError(f"no windows to check for {mapping.action}")
    sig = signature(spec)
    if mapping.call is None and mapping.action not in sig.operators:
        raise TaskError(f"the spec defines no action {mapping.action}: map the recorded action to one of "
                        f"{', '.join(sorted(sig.operators)) or '(none)'}")
    bound = {b.variable for b in mapping.variables}
    unbound = [v for v in sig.variables if v not in bound]
    if unbound:
        raise TaskError(f"{mapping.action}: spec variables {', '.join(unbound)} have no binding: give each a recorded "
                        "field or an init expression (a default or a set to choose from)")
    unknown = sorted(bound - set(sig.variables))
    if unknown:
        raise TaskError(f"{mapping.action}: {', '.join(unknown)} are not variables of {sig.module}")
    own = set(re.findall(r"^\s*([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*==", _strip_comments(mapping.definitions), re.M))
    clash = sorted((own | {WINDOW_RECORD, WINDOW, STEP}) & (set(sig.operators) | set(sig.variables)
                                                            | set(sig.constants)))
    if clash:
        raise TaskError(f"{mapping.action}: the spec already defines {', '.join(clash)}, which the checking module "
                        "needs: rename them in the mapping's definitions")
    checks = mapping.checks()
    if not checks:
        raise TaskError(f"{mapping.action}: nothing of the post state is checked: bind some variable to a field")
    name = f"TV_{mapping.action}"
    literals = ",\n  ".join(window_literal(w, mapping.values) for w in windows)
    diffs = []
    for check in checks:
        label = tla_value(check.name)
        if check.condition is not None:  # the successor's value of the variable named, and the condition's text
            shown = f"ToString({check.name}')" if check.name in sig.variables else '"FALSE"'
            diffs.append(f"(IF ({check.condition})' THEN <<>> ELSE <<{label}, {shown}, "
                         f"{tla_value(CONDITION + ' '.join(check.condition.split()))}>>)")
        else:
            # compared as TLC prints them: a recorded value of another type (the string "None" where the spec
            # has the node 1) is then a difference to report, not an evaluation error that stops the run
            actual, expected = f"ToString(({check.projection})')", f"ToString({check.expected})"
            diffs.append(f"(IF {actual} = {expected} THEN <<>> ELSE <<{label}, {actual}, {expected}>>)")
    inits = "\n".join(f"    /\\ {b.init_text()}" for b in mapping.variables)
    params = sig.operators.get(mapping.action, [])
    text = (
        f"---- MODULE {name} ----\n"
        f"\\* Generated by sysmo transition validation: each of {len(windows)} recorded windows as one step of "
        f"{mapping.action}.\n"
        f"EXTENDS {sig.module}, Naturals, Sequences, TLC\n\n"
        f"VARIABLES {WINDOW}, {STEP}  \\* which window, and whether the step was taken\n\n"
        f"TV__Windows == <<\n  {literals}\n  >>\n\n"
        f"{WINDOW_RECORD} == TV__Windows[{WINDOW}]\n\n"
        f"{mapping.definitions.strip()}\n\n"
        f"ASSUME \\A tv__i \\in 1..Len(TV__Windows) : TLCSet({REGISTER_BASE} + tv__i, 0)\n\n"
        "TV__Init ==\n"
        f"    /\\ {WINDOW} \\in 1..Len(TV__Windows)\n"
        f"    /\\ {STEP} = 0\n"
        f"{inits}\n"
        f"    /\\ IF TLCGet({REGISTER_BASE} + {WINDOW}) > 0 THEN TRUE\n"
        f'       ELSE PrintT(<<"{PRE}", {WINDOW}>>) /\\ TLCSet({REGISTER_BASE} + {WINDOW}, 1)\n\n'
        "\\* the checks of the recorded post state this step misses: name, the step's value, the recorded value\n"
        "TV__Misses ==\n    " + "\n    \\o ".join(diffs) + "\n\n"
        "TV__Next ==\n"
        f"    /\\ {STEP} = 0\n"
        f"    /\\ TLCGet({REGISTER_BASE} + {WINDOW}) < 2  \\* decided once a step passed\n"
        f"    /\\ {mapping.step(params)}\n"
        f"    /\\ {STEP}' = 1\n"
        f"    /\\ {WINDOW}' = {WINDOW}\n"
        "    /\\ LET misses == TV__Misses IN\n"
        f'       /\\ PrintT(<<"{POST}", {WINDOW}, misses>>)\n'
        f"       /\\ IF misses = <<>> THEN TLCSet({REGISTER_BASE} + {WINDOW}, 2) ELSE TRUE\n"
        "====\n"
    )
    base = tlc_cfg.parse(base_cfg) if base_cfg else tlc_cfg.TlcConfig()
    given = {re.split(r"\s*(?:=|<-)\s*", c, maxsplit=1)[0].strip() for c in mapping.constants}
    kept = [c for c in base.constants if re.split(r"\s*(?:=|<-)\s*", c, maxsplit=1)[0].strip() not in given]
    cfg = tlc_cfg.TlcConfig(init="TV__Init", next="TV__Next", constants=kept + mapping.constants).render()
    return ActionModule(module=name, text=text, cfg=cfg, windows=[w.id for w in windows],
                        checks=[c.name for c in checks])


# -------------------------------------------------------------------------------------------------- check

Verdict = Literal["passed", "failed", "inconclusive", "error"]


class Miss(BaseModel):
    """One check a step missed: the successor's value and the recorded one (TLA+ text)."""

    check: str
    got: str
    recorded: str


class WindowVerdict(BaseModel):
    id: int
    verdict: Verdict
    steps: int = 0  # steps of the action from the pre state(s) (a passed window: those taken until one passed)
    pre_states: int = 0  # 1 when the pre state gave an initial state (printed once per window), else 0
    closest: list[Miss] = Field(default_factory=list)  # the misses of the step closest to the recording
    explanation: str = ""
    trace_id: str | None = None


class ActionResult(BaseModel):
    """Per action: windows, passed, failed, inconclusive, the pass rate and the first failing window."""

    action: str
    windows: int
    passed: int
    failed: int
    inconclusive: int
    errors: int = 0
    verdicts: list[WindowVerdict] = Field(default_factory=list)
    first_failure: dict[str, Any] | None = None  # id, pre, post, input, explanation
    runs: int = 0
    tool_version: str = ""
    mapping_source: str = "manual"
    error: str | None = None  # the action could not be checked at all (the spec or the mapping is broken)

    @property
    def pass_rate(self) -> float:
        return self.passed / self.windows if self.windows else 0.0

    @property
    def all_passed(self) -> bool:
        return self.windows > 0 and self.passed == self.windows

    @property
    def outcome(self) -> Outcome:
        if self.error is not None or self.errors:
            return Outcome.ERROR if not self.failed else Outcome.FAILED
        if self.failed:
            return Outcome.FAILED
        if self.inconclusive:
            return Outcome.INCONCLUSIVE
        return Outcome.OK


def _unescape(text: str) -> str:
    """A TLA+ string literal's body as text (TLC escapes quotes, backslashes, newlines and tabs)."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def _printed(result: CheckResult) -> tuple[dict[int, int], dict[int, list[list[Miss]]]]:
    """Initial states per window, and per window the misses of each step (TLC's printed lines)."""
    pre: dict[int, int] = {}
    steps: dict[int, list[list[Miss]]] = {}
    for line in result.details.get("printed", []):
        tagged = re.search(rf'<<"({PRE}|{POST})", (\d+)', line)
        if not tagged:
            continue
        index = int(tagged.group(2))
        if tagged.group(1) == PRE:
            pre[index] = pre.get(index, 0) + 1
            continue
        strings = [_unescape(s) for s in STRING.findall(line[tagged.end():])]
        misses = [Miss(check=strings[i], got=strings[i + 1], recorded=strings[i + 2])
                  for i in range(0, len(strings) - 2, 3)]
        steps.setdefault(index, []).append(misses)
    return pre, steps


def _elements(text: str) -> list[str] | None:
    """The top-level items of a TLA+ tuple as TLC prints it (``<<1, <<2>>, "a">>``), or None for anything else."""
    text = text.strip()
    if not (text.startswith("<<") and text.endswith(">>")):
        return None
    items, depth, current = [], 0, ""
    for token in TOKEN.findall(text[2:-2]):
        depth += token in ("<<", "[", "{", "(")
        depth -= token in (">>", "]", "}", ")")
        if token == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += token
    return items + [current.strip()] if current.strip() else items


def _differing(miss: Miss) -> int:
    """How many items of a tuple differ (1 for other values): ties between steps go to the nearer one."""
    got, recorded = _elements(miss.got), _elements(miss.recorded)
    if got is None or recorded is None or len(got) != len(recorded):
        return 1
    return sum(a != b for a, b in zip(got, recorded))


def describe_miss(miss: Miss) -> str:
    """``votedFor[2]: the step gives 1, the recording has 2`` for tuples of equal length, else the whole values;
    for a condition check, the successor's value and the condition it fails."""
    if miss.recorded.startswith(CONDITION):
        return f"{miss.check}: the step gives {miss.got}, which fails {miss.recorded.removeprefix(CONDITION)}"
    got, recorded = _elements(miss.got), _elements(miss.recorded)
    if got is not None and recorded is not None and len(got) == len(recorded):
        return "; ".join(f"{miss.check}[{i}]: the step gives {a}, the recording has {b}"
                         for i, (a, b) in enumerate(zip(got, recorded), start=1) if a != b)
    return f"{miss.check}: the step gives {miss.got}, the recording has {miss.recorded}"


def _explain(action: str, pre: int, steps: list[list[Miss]]) -> tuple[str, list[Miss]]:
    if pre == 0:
        return "the recorded pre state gives no initial state (the bindings' constraints cannot all hold)", []
    if not steps:
        return f"{action} is not enabled in the recorded pre state: the spec takes no step of it there", []
    closest = min(steps, key=lambda misses: (len(misses), sum(_differing(m) for m in misses)))
    shown = "; ".join(describe_miss(m) for m in closest)
    what = "the only step" if len(steps) == 1 else f"the closest of {len(steps)} steps"
    return f"{action} is enabled but no step reaches the recorded post state; {what} differs in " \
           f"{', '.join(m.check for m in closest)} ({shown})", closest


def _run(files: dict[str, str], module: ActionModule, max_states: int, timeout_s: float) -> CheckResult:
    artifact = Artifact(language=Language.TLA, files={**files, f"{module.module}.tla": module.text})
    return tlc.model_check(artifact, module.cfg, module=module.module, check_deadlock=False,
                           max_states=max_states, timeout_s=timeout_s, printed_marker=MARKER)


def _culprit(result: CheckResult, size: int) -> int | None:
    """The window (1..size) whose state TLC was evaluating when it failed: the last state of its error trace."""
    trace = tlc.report_of(result).trace
    value = trace[-1].variables.get(WINDOW, "") if trace else ""
    return int(value) if value.strip().isdigit() and 1 <= int(value) <= size else None


def validate_action(spec: Artifact, mapping: TransitionMapping, windows: WindowSet | list[Window], *,
                    cfg: str | None = None, max_states: int = DEFAULT_MAX_STATES,
                    timeout_s: float = DEFAULT_TIMEOUT_S, max_runs: int = DEFAULT_MAX_RUNS) -> ActionResult:
    """Check every window against one step of ``mapping.action``: one TLC run for all windows. More only when the
    spec fails to evaluate on some window: that window (named by TLC's error trace) gets the error and the
    undecided others are checked again (in halves when TLC names none), at most ``max_runs`` runs in all; windows
    still undecided then share the last error."""
    items = windows.windows if isinstance(windows, WindowSet) else list(windows)
    if spec.language != Language.TLA:
        raise TaskError(f"transition validation needs a TLA+ spec, not {spec.language.value}")
    prepared = prepare(spec)
    files = {n: t for n, t in prepared.files.items() if n.endswith(".tla")}
    base_cfg = cfg if cfg is not None else prepared.files.get(f"{prepared.main_module}.cfg")
    by_id = {w.id: w for w in items}
    decided: dict[int, WindowVerdict] = {}
    version, runs = "", 0
    pending = [items]
    while pending:
        batch = pending.pop(0)
        module = checking_module(spec, mapping, batch, base_cfg)
        result = _run(files, module, max_states, timeout_s)
        runs += 1
        version = result.tool_version
        pre, steps = _printed(result)
        reason = str(result.details.get("reason", ""))
        evaluation = result.outcome == Outcome.FAILED
        if result.outcome == Outcome.ERROR and not steps and not pre:
            message = result.summary(5)
            log.warning("transition_validation.error", action=mapping.action, error=message[:300])
            return ActionResult(action=mapping.action, windows=len(items), passed=0, failed=0, inconclusive=0,
                                errors=len(items), runs=runs, tool_version=version, mapping_source=mapping.source,
                                error=f"TLC could not check {mapping.action}: {message}")
        undecided: list[Window] = []
        culprit = _culprit(result, len(batch)) if evaluation else None
        for index, window in enumerate(batch, start=1):
            own = steps.get(index, [])
            if any(not misses for misses in own):
                decided[window.id] = WindowVerdict(id=window.id, verdict="passed", steps=len(own),
                                                   pre_states=pre.get(index, 0), trace_id=window.trace_id,
                                                   explanation="a step of the action reaches the recorded post state")
            elif result.outcome == Outcome.OK:
                text, closest = _explain(mapping.action, pre.get(index, 0), own)
                decided[window.id] = WindowVerdict(id=window.id, verdict="failed", steps=len(own), closest=closest,
                                                   pre_states=pre.get(index, 0), trace_id=window.trace_id,
                                                   explanation=text)
            elif evaluation and len(batch) > 1 and index != culprit and runs < max_runs:
                undecided.append(window)
            elif evaluation:
                why = ("the spec fails to evaluate on this window" if index == culprit or len(batch) == 1 else
                       f"not decided: TLC stopped at an evaluation error {runs} times (the run limit)")
                decided[window.id] = WindowVerdict(id=window.id, verdict="error", steps=len(own),
                                                   trace_id=window.trace_id,
                                                   explanation=f"{why}: {result.summary(3)[:600]}")
            else:  # a state bound, the time limit or a resource ran out: not a pass, not a failure
                decided[window.id] = WindowVerdict(id=window.id, verdict="inconclusive", steps=len(own),
                                                   trace_id=window.trace_id,
                                                   explanation=f"inconclusive: {reason}")
        if undecided and culprit is not None:
            pending.append(undecided)
        elif undecided:
            half = (len(undecided) + 1) // 2
            pending += [part for part in (undecided[:half], undecided[half:]) if part]
    verdicts = [decided[w.id] for w in items]
    count = {kind: sum(v.verdict == kind for v in verdicts) for kind in ("passed", "failed", "inconclusive", "error")}
    first = next((v for v in verdicts if v.verdict in ("failed", "error")), None)
    first_failure = None
    if first is not None:
        window = by_id[first.id]
        first_failure = {"id": first.id, "trace_id": window.trace_id, "pre": window.pre, "post": window.post,
                         "input": window.input, "explanation": first.explanation}
    outcome = ActionResult(action=mapping.action, windows=len(items), passed=count["passed"],
                           failed=count["failed"] + count["error"], inconclusive=count["inconclusive"],
                           errors=count["error"], verdicts=verdicts, first_failure=first_failure, runs=runs,
                           tool_version=version, mapping_source=mapping.source)
    log.info("transition_validation.done", action=mapping.action, windows=outcome.windows, passed=outcome.passed,
             failed=outcome.failed, inconclusive=outcome.inconclusive, runs=runs)
    return outcome


# ----------------------------------------------------------------------------- the harness's TV modules

HARNESS_SKIPPED = {"vars", "Init", "Next", "PostReached", "NeverPost", "Spec", "AllWindows", "w"}
DEFINITION = re.compile(r"^([A-Za-z_]\w*)\s*(\([^)]*\))?\s*==", re.M)


def _definitions(text: str) -> dict[str, str]:
    """Top-level definitions of a module body: name -> the whole definition text (head included)."""
    body = _strip_comments(text)
    body = body.split("====", 1)[0]
    found = list(DEFINITION.finditer(body))
    out: dict[str, str] = {}
    for i, match in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(body)
        out[match.group(1)] = body[match.start():end].rstrip()
    return out


def _conjuncts(definition: str) -> list[str]:
    """The top-level ``/\\`` conjuncts of a definition's body."""
    body = definition.split("==", 1)[1]
    lines = [line for line in body.splitlines() if line.strip()]
    bullets = [len(line) - len(line.lstrip()) for line in lines if line.lstrip().startswith("/\\")]
    if not bullets:
        return [" ".join(line.strip() for line in lines)]
    column = min(bullets)
    parts: list[str] = []
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if indent == column and line.lstrip().startswith("/\\"):
            parts.append(line.strip()[2:].strip())
        elif parts:
            parts[-1] += "\n" + line
    return parts


def from_harness_module(text: str, cfg: str | None = None) -> tuple[TransitionMapping, str, str | None]:
    """Read a harness ``TV_<Action>.tla`` (or ``WV_``) as a mapping: its Init sets the variables, its Next's
    ``S!Action(...)`` is the step, its ``PostReached`` conjuncts are the post checks, its other definitions are
    kept (they build logs and the triggering message from ``w``). Returns the mapping, the spec module the
    harness INSTANCEs and the windows file it reads. ``cfg``: the harness's cfg, for the constants."""
    definitions = _definitions(text)
    instance = re.search(r"^\s*(\w+)\s*==\s*INSTANCE\s+(\w+)", _strip_comments(text), re.M)
    windows = re.search(r'ndJsonDeserialize\("([^"]+)"\)', text)
    if instance is None or "Init" not in definitions or "Next" not in definitions \
            or "PostReached" not in definitions:
        raise TaskError("not a harness TV module: expected S == INSTANCE <spec>, Init, Next and PostReached")
    alias = instance.group(1)
    unqualify = re.compile(rf"\b{re.escape(alias)}!")
    variables: list[VariableBinding] = []
    for part in _conjuncts(definitions["Init"]):
        match = re.match(r"(\w+)\s*(=|\\in)\s*(.*)", part, re.S)
        if match is None:
            raise TaskError(f"harness Init conjunct {part!r} is not 'variable = expression' or 'variable \\in set'")
        name, relation, value = match.group(1), match.group(2), unqualify.sub("", match.group(3).strip())
        if name == "step":
            continue
        simple = re.fullmatch(rf"{WINDOW_RECORD}\.pre\.(\w+)", value)
        if simple and relation == "=":
            variables.append(VariableBinding(variable=name, field=simple.group(1)))
        else:
            variables.append(VariableBinding(variable=name, init=value, relation=relation))  # type: ignore[arg-type]
    calls = [unqualify.sub("", p.strip()) for p in _conjuncts(definitions["Next"])
             if not re.match(r"step\s*(=|')", p.strip())]
    acted = re.search(rf"{re.escape(alias)}!(\w+)", definitions["Next"])
    if not calls or acted is None:
        raise TaskError("harness Next names no action of the spec (S!Action)")
    by_name = {b.variable: b for b in variables}
    extra: list[PostCheck] = []
    checked: set[str] = set()  # variables PostReached compares with the window's post state
    for number, part in enumerate(_conjuncts(definitions["PostReached"]), start=1):
        part = unqualify.sub("", part.strip())
        if re.match(r"step\s*=", part):
            continue
        match = re.fullmatch(r"(\w+)\s*=\s*(.+)", part, re.S)
        if match and match.group(1) in by_name:
            binding = by_name[match.group(1)]
            checked.add(binding.variable)
            expected = match.group(2).strip()
            simple = re.fullmatch(rf"{WINDOW_RECORD}\.post\.(\w+)", expected)
            if not (simple and binding.field == simple.group(1)):  # else the field binding's own check
                by_name[binding.variable] = binding.model_copy(update={"expect": expected})
        else:
            touched = re.findall(r"\b(\w+)\s*\[", part)
            label = next((t for t in touched if t in by_name), f"post{number}")
            extra.append(PostCheck(name=label, condition=part))
    final = []
    for binding in by_name.values():
        if binding.variable not in checked and binding.field is not None:
            # set from the pre state but not compared after the step (the harness leaves it free)
            binding = VariableBinding(variable=binding.variable, init=f"{WINDOW_RECORD}.pre.{binding.field}")
        final.append(binding)
    kept = "\n\n".join(unqualify.sub("", body) for name, body in definitions.items()
                       if name not in HARNESS_SKIPPED and name != alias)
    constants = tlc_cfg.parse(cfg).constants if cfg else []
    mapping = TransitionMapping(action=acted.group(1), call=" /\\ ".join(f"({c})" for c in calls), variables=final,
                                post_checks=extra, definitions=kept, constants=constants, source="harness",
                                notes=["read from the harness's TV module: Init, Next and PostReached as written"])
    return mapping, instance.group(2), windows.group(1) if windows else None


# ------------------------------------------------------------------------------------- mapping by names

BINDER = re.compile(r"\\E\s+(?P<binders>[^:]+?)\s*:\s*(?:\(\s*)?(?P<action>[A-Za-z_]\w*)\s*\(")


def _norm(name: str) -> str:
    return re.sub(r"[_\-\s]", "", name).lower()


def _binders(text: str) -> dict[str, str]:
    """``n \\in Nodes, m \\in messages`` / ``n, m \\in Nodes`` -> {n: Nodes, m: messages}."""
    out: dict[str, str] = {}
    for group in re.finditer(r"((?:\w+\s*,\s*)*\w+)\s*\\in\s*([^,]+(?:\([^)]*\))?)", text):
        for name in re.split(r"\s*,\s*", group.group(1).strip()):
            out[name] = group.group(2).strip()
    return out


def _domains(definitions: dict[str, str], operators: dict[str, list[str]], action: str,
             depth: int = 3) -> dict[str, str]:
    """What ``Next`` quantifies each parameter of ``action`` over: directly (``\\E n \\in Nodes : A(n)``) or through
    operators that pass their own parameters on (``\\E t \\in Threads : ThreadNext(t)``, ``ThreadNext(t) == A(t)``)."""
    params = operators.get(action, [])
    body = _strip_comments(definitions.get("Next", ""))
    for match in BINDER.finditer(body):
        if match.group("action") == action:
            bound = _binders(match.group("binders"))
            call = re.search(rf"{action}\s*\(([^)]*)\)", body[match.start():])
            passed = [a.strip() for a in call.group(1).split(",")] if call else []
            return {p: bound[a] for p, a in zip(params, passed) if a in bound}
    if depth == 0:
        return {}
    for caller, text in definitions.items():
        caller_params = operators.get(caller, [])
        if caller in ("Next", action) or not caller_params:
            continue
        for call in re.finditer(rf"\b{action}\s*\(([^)]*)\)", _strip_comments(text.split("==", 1)[1])):
            passed = [a.strip() for a in call.group(1).split(",")]
            if all(a in caller_params for a in passed):
                outer = _domains(definitions, operators, caller, depth - 1)
                found = {p: outer[a] for p, a in zip(params, passed) if a in outer}
                if len(found) == len(params):
                    return found
    return {}


def mapping_by_names(spec: Artifact, windows: WindowSet) -> TransitionMapping:
    """The mapping when the recording uses the spec's names: recorded fields bind the variables of the same name
    (case and underscores ignored), the action is the operator of the window file's name, its parameters range
    over what the spec's ``Next`` quantifies them over, and every other variable keeps its value from the spec's
    ``Init`` (a message handler's message set holds just the window's ``input``). Gaps are a ``TaskError`` saying
    which mapping entry to write."""
    sig = signature(spec)
    action = next((o for o in sig.operators if _norm(o) == _norm(windows.action)), None)
    if action is None:
        raise TaskError(f"the spec has no action named like {windows.action}: write a mapping naming the action")
    fields = set.intersection(*(set(w.pre) & set(w.post) for w in windows.windows))
    definitions = _definitions(spec.main_text)
    init = {}
    for part in _conjuncts(definitions["Init"]) if "Init" in definitions else []:
        match = re.match(r"(\w+)\s*(=|\\in)\s*(.*)", part, re.S)
        if match:
            init[match.group(1)] = (match.group(2), match.group(3).strip())
    params = sig.operators.get(action, [])
    domains = _domains(definitions, sig.operators, action)
    has_input = any(w.input is not None for w in windows.windows)
    inbox = {domains[p] for p in params if domains.get(p) in sig.variables} if has_input else set()
    notes = []
    variables = []
    for variable in sig.variables:
        field = next((f for f in sorted(fields) if _norm(f) == _norm(variable)), None)
        if field is not None:
            variables.append(VariableBinding(variable=variable, field=field))
        elif variable in inbox:
            variables.append(VariableBinding(variable=variable, init=f"{{{WINDOW_RECORD}.input}}"))
            notes.append(f"{variable}: holds only the window's input (the message {action} handles)")
        elif variable in init:
            relation, value = init[variable]
            variables.append(VariableBinding(variable=variable, init=value,
                                             relation=relation))  # type: ignore[arg-type]
            notes.append(f"{variable}: not recorded; its value in the spec's Init")
        else:
            raise TaskError(f"{windows.action}: variable {variable} is not recorded and the spec's Init gives it no "
                            "plain value: write a mapping with an init expression for it")
    unused = sorted(f for f in fields if not any(b.field == f for b in variables))
    if unused:
        notes.append(f"recorded fields with no variable of that name (not checked): {', '.join(unused)}")
    missing = [p for p in params if p not in domains]
    if missing:
        raise TaskError(f"{action}({', '.join(params)}): the spec's Next does not say what {', '.join(missing)} "
                        "range over: write a mapping with parameters")
    return TransitionMapping(action=action, parameters=domains, variables=variables, source="names", notes=notes)

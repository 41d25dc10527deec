"""Gold-model variants for the robustness control (the SysMoBench paper's gold-model control): the reference spec
with its variables, actions and constants renamed, and with actions merged or split, must keep full marks.

- ``rename_identifiers``: a deterministic, token-level rename (string literals and comments untouched, so the
  program-counter labels the traces log keep their values); applied to the .tla and the .cfg.
- ``merge_actions`` / ``split_action``: granularity changes of a translated spec, written out as new operator
  definitions (the bodies are moved, re-indented, under ``\\/`` or behind a case condition).
- ``ScriptedHelper``: the helper role, scripted: it answers the trace-mapping request with the gold spec's
  name-based mapping carried through the renames (merged events to the merged action, split events to
  ``Next`` state-only), and an invariant request with the template's own example carried through the renames.
- ``spin_variants`` / ``dqueue_variants``: the ten variants of each system (five renames, then five granularity
  changes, alone or with renames); ``score_variants`` scores them on the four TLA+ stages.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sysmo.contracts.artifact import Artifact, Language
from sysmo.contracts.task import Task
from sysmo.evals.cascade import ScoringContext
from sysmo.evals.cascades import tla
from sysmo.evals.metrics import tla_conformance
from sysmo.evals.metrics.tla_syntax import split_module
from sysmo.tools.tla import trace_validation as tv

TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\(\*.*?\*\)|\\\*[^\n]*|[A-Za-z_][A-Za-z0-9_]*', re.DOTALL)
BODY_COLUMN = 7  # where a moved body's first bullet goes: after "    \/ " or "    /\ "


def _replace(text: str, names: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        token = match.group(0)
        return names.get(token, token) if token[0].isalpha() or token[0] == "_" else token

    return TOKEN.sub(one, text)


def rename_identifiers(text: str, names: dict[str, str]) -> str:
    """Every identifier token in ``names`` replaced; strings and comments are left as they are. A definition
    whose name changes length and whose body starts on its header line has its following lines shifted by the
    same amount, so the body's bullets stay aligned."""
    out, shift = [], 0
    for line in text.split("\n"):
        renamed = _replace(line, names) if names else line
        header = re.match(r"([A-Za-z_]\w*)", line)
        if header and "==" in line:  # a top-level definition: its continuation lines follow its body's column
            body_at = line.index("==") + 2
            shift = renamed.index("==") + 2 - body_at if line[body_at:].strip() else 0
        elif line.strip() and not line[0].isspace():
            shift = 0
        if shift > 0 and line.strip() and line[0].isspace():
            renamed = " " * shift + renamed
        elif shift < 0 and line.strip() and line[: -shift].strip() == "":
            renamed = renamed[-shift:]
        out.append(renamed)
    return "\n".join(out)


def _body(text: str, name: str) -> str:
    """The body of definition ``name``, its first line starting at BODY_COLUMN and the rest shifted with it."""
    unit = split_module(text).definition(name)
    assert unit is not None, name
    head, _, rest = unit.text.partition("==")
    first, *more = rest.rstrip().split("\n")
    if first.strip():  # the body starts on the header's line, right after "=="
        column = len(head) + 2 + (len(first) - len(first.lstrip()))
    else:  # the body starts on the next line, at its own indentation
        first, *more = more
        column = len(first) - len(first.lstrip())
    shift = column - BODY_COLUMN
    moved = [(line[shift:] if line[:shift].strip() == "" else line) if shift >= 0 else " " * -shift + line
             for line in more]
    return "\n".join([first.strip(), *moved]).rstrip()


def _drop_definition(text: str, name: str) -> str:
    unit = split_module(text).definition(name)
    assert unit is not None, name
    return text.replace(unit.text, "", 1)


def merge_actions(text: str, actions: list[str], merged: str, param: str, caller: str) -> str:
    """``actions`` (each ``A(param)``) become one action ``merged(param)``, a disjunction of their bodies."""
    bodies = [_body(text, a) for a in actions]
    definition = f"{merged}({param}) ==\n" + "\n".join(f"    \\/ {b}" for b in bodies) + "\n\n"
    call = " \\/ ".join(f"{a}({param})" for a in actions)
    out = text
    for a in actions[1:]:
        out = _drop_definition(out, a)
    out = out.replace(split_module(out).definition(actions[0]).text, definition.rstrip() + "\n", 1)
    caller_unit = split_module(out).definition(caller)
    assert caller_unit is not None and call in caller_unit.text, (caller, call)
    return out.replace(caller_unit.text, caller_unit.text.replace(call, f"{merged}({param})"), 1)


def split_action(text: str, action: str, param: str, condition: str, parts: tuple[str, str], caller: str) -> str:
    """``action(param)`` becomes two actions: ``parts[0]`` where ``condition`` holds, ``parts[1]`` where not."""
    body = _body(text, action)
    first = f"{parts[0]}({param}) ==\n    /\\ {condition}\n    /\\ {body}\n"
    second = f"{parts[1]}({param}) ==\n    /\\ ~({condition})\n    /\\ {body}\n"
    unit = split_module(text).definition(action)
    out = text.replace(unit.text, first + "\n" + second, 1)
    caller_unit = split_module(out).definition(caller)
    call = f"{action}({param})"
    assert caller_unit is not None and call in caller_unit.text, (caller, call)
    both = f"{parts[0]}({param}) \\/ {parts[1]}({param})"
    return out.replace(caller_unit.text, re.sub(rf"\b{re.escape(call)}", lambda _: both, caller_unit.text), 1)


@dataclass
class Variant:
    """One gold variant: the artifact, the renames applied, and how trace events map after granularity changes."""

    name: str
    artifact: Artifact
    renames: dict[str, str] = field(default_factory=dict)
    event_actions: dict[str, str | None] = field(default_factory=dict)  # event -> new action (None: Next)


def variant(gold: Artifact, name: str, renames: dict[str, str] | None = None,
            transform: Any = None, event_actions: dict[str, str | None] | None = None) -> Variant:
    """The gold artifact, optionally transformed (granularity), then renamed in every file."""
    files = dict(gold.files)
    main = gold.main_file
    if transform is not None:
        files[main] = transform(files[main])
    names = renames or {}
    files = {path: rename_identifiers(text, names) for path, text in files.items()}
    return Variant(name=name, artifact=Artifact(language=Language.TLA, files=files), renames=names,
                   event_actions=event_actions or {})


class _Reply(BaseModel):
    text: str
    model: str = "scripted-helper"
    mapping: dict[str, Any] | None = None

    def parse(self, schema: type[BaseModel]) -> BaseModel:
        return schema.model_validate(self.mapping or {})


class ScriptedHelper:
    """The helper role for a variant, answering from the gold spec's own names carried through the renames."""

    def __init__(self, task: Task, gold_mapping: tv.TraceMapping, chosen: Variant) -> None:
        self.task = task
        self.gold_mapping = gold_mapping
        self.variant = chosen

    def mapping(self) -> tv.TraceMapping:
        names = self.variant.renames
        actions = []
        for entry in self.gold_mapping.actions:
            action = names.get(entry.action, entry.action) if entry.action else None
            if entry.event in self.variant.event_actions:
                action = self.variant.event_actions[entry.event]
            actions.append(entry.model_copy(update={"action": action, "arguments": entry.arguments if action else []}))
        variables = [v.model_copy(update={"variable": names.get(v.variable, v.variable)})
                     for v in self.gold_mapping.variables]
        constants = {k: names.get(c, c) for k, c in self.gold_mapping.constants.items()}
        return self.gold_mapping.model_copy(update={"actions": actions, "variables": variables,
                                                    "constants": constants, "notes": []})

    def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> _Reply:
        purpose = getattr(kwargs.get("context"), "purpose", "")
        if purpose == "trace_mapping":
            return _Reply(text="", mapping=self.mapping().model_dump())
        prompt = messages[0]["content"]
        named = [t for t in self.task.references.invariants if re.search(rf"\b{t.name}\b", prompt)]
        template = max(named, key=lambda t: len(t.name))
        return _Reply(text=rename_identifiers(template.tla_example, self.variant.renames))


# -- the ten variants of each system, and their scores

STAGES = ("syntax", "runtime", "conformance", "invariants")
OPTIONS = {"runtime.runs": 1, "invariants.max_states": 50_000, "invariants.timeout_s": 60}
FULL_MARKS = {s: (1.0, "ok") for s in STAGES}

SPIN_VARS = {"locked": "held", "pc": "phase"}
SPIN_ACTIONS = {"Request": "Want", "Acquire": "Take", "Spin": "Wait", "Release": "Drop"}
SPIN_CONSTANTS = {"N": "Workers", "Procs": "WorkerIds"}
DQ_VARS = {"network": "mailbox", "processor": "sink", "stream": "source", "requester": "asker", "pc": "loc"}
DQ_ACTIONS = {"c": "ConsumerLoop", "c1": "ConsumerAsk", "c2": "ConsumerTake", "p": "ProducerLoop",
              "p1": "ProducerHear", "p2": "ProducerSend", "Consumer": "ConsumerProc", "Producer": "ProducerProc"}
DQ_CONSTANTS = {"BUFFER_SIZE": "Capacity", "NUM_CONSUMERS": "Consumers", "PRODUCER": "ProducerId",
                "NUM_NODES": "Nodes"}
RENAMES = ["vars", "actions", "constants", "vars+actions", "all names"]
REGRAINS = ["merged", "split", "merged+names", "split+names", "merged+split"]


def _spin_merge(text: str) -> str:
    return merge_actions(text, ["Acquire", "Spin"], "TestAndSet", "p", "Next")


def _spin_split(text: str) -> str:
    return split_action(text, "Release", "p", "p = 1", ("ReleaseFirst", "ReleaseOther"), "Next")


def _dq_merge(text: str) -> str:
    return merge_actions(text, ["c", "c1"], "cRequest", "self", "Consumer")


def _dq_split(text: str) -> str:
    return split_action(text, "p1", "self", "Len(network[self]) = 1", ("p1Last", "p1More"), "Producer")


def spin_variants(gold: Artifact) -> list[Variant]:
    merged = {"Acquire": "TestAndSet", "Spin": "TestAndSet"}
    split = {"Release": None}
    return [
        variant(gold, "vars", SPIN_VARS),
        variant(gold, "actions", SPIN_ACTIONS),
        variant(gold, "constants", SPIN_CONSTANTS),
        variant(gold, "vars+actions", {**SPIN_VARS, **SPIN_ACTIONS}),
        variant(gold, "all names", {**SPIN_VARS, **SPIN_ACTIONS, **SPIN_CONSTANTS}),
        variant(gold, "merged", transform=_spin_merge, event_actions=merged),
        variant(gold, "split", transform=_spin_split, event_actions=split),
        variant(gold, "merged+names", {**SPIN_VARS, "TestAndSet": "Attempt", **SPIN_CONSTANTS}, _spin_merge,
                {"Acquire": "Attempt", "Spin": "Attempt"}),
        variant(gold, "split+names", {**SPIN_VARS, **SPIN_CONSTANTS, "Request": "Want"}, _spin_split, split),
        variant(gold, "merged+split", transform=lambda t: _spin_split(_spin_merge(t)), event_actions={**merged, **split}),
    ]


def dqueue_variants(gold: Artifact) -> list[Variant]:
    merged = {"c": "cRequest", "c1": "cRequest"}
    split = {"p1": None}
    return [
        variant(gold, "vars", DQ_VARS),
        variant(gold, "actions", DQ_ACTIONS),
        variant(gold, "constants", DQ_CONSTANTS),
        variant(gold, "vars+actions", {**DQ_VARS, **DQ_ACTIONS}),
        variant(gold, "all names", {**DQ_VARS, **DQ_ACTIONS, **DQ_CONSTANTS}),
        variant(gold, "merged", transform=_dq_merge, event_actions=merged),
        variant(gold, "split", transform=_dq_split, event_actions=split),
        variant(gold, "merged+names", {**DQ_VARS, **DQ_CONSTANTS, "cRequest": "ConsumerRequest"}, _dq_merge,
                {"c": "ConsumerRequest", "c1": "ConsumerRequest"}),
        variant(gold, "split+names", {**DQ_VARS, **DQ_CONSTANTS}, _dq_split, split),
        variant(gold, "merged+split", transform=lambda t: _dq_split(_dq_merge(t)), event_actions={**merged, **split}),
    ]


def _validate(task: Task) -> str | None:
    path = task.references.extra.get("pgo_validate_cfg")
    return Path(path).read_text() if path else None


def gold_mapping(task: Task) -> tv.TraceMapping:
    """The trace mapping of the gold spec itself (by name), which the scripted helper carries through renames."""
    traces = tla_conformance.task_traces(task)
    loaded = tla_conformance.load_traces(traces, _validate(task))
    return tv.resolve_mapping(task.references.model, loaded)


def _score(task: Task, chosen: Variant, mapping: tv.TraceMapping) -> dict[str, tuple[float, str]]:
    ctx = ScoringContext(options=OPTIONS, helper=ScriptedHelper(task, mapping, chosen))
    return {stage: (r.value, r.outcome) for stage in STAGES
            for r in [getattr(tla, f"{stage}_stage")(chosen.artifact, task, ctx)]}


def score_variants(task: Task, variants: list[Variant]) -> dict[str, dict[str, tuple[float, str]]]:
    """Each variant's (value, outcome) on the four stages; TLC runs in subprocesses: two variants at a time."""
    mapping = gold_mapping(task)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip([v.name for v in variants], pool.map(lambda v: _score(task, v, mapping), variants)))

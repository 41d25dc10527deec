"""The sensitivity suite: mutants of gold models scored by each family's real cascade, and the detection matrix.

A gold model (a task's reference) is scored against its own task; every variant of it is scored the same way
(``cascade_for(kind).score(artifact, task, ScoringContext(options=...))``, real SANY/TLC, PlantUML, OpenSysML). A
column is a stage value or one metric of a stage; a variant LOST points in a column when its value is below the
gold's. Each operator declares the columns it must lose points in (``must_lose``) and those it must not touch
(``must_keep``), each with the reason; a column it declares nothing about is measured and shown, not judged.
A declared column where the gold itself has nothing to lose (value 0) or no value is "n/a" for that mutant.

The suite passes when every declared cell holds: every mutant lost points where declared and kept them where
declared, and every semantics-preserving variant kept full marks (the gold's values) in its kept columns.

No LLM is used: class diagrams are matched with exact string similarity, architecture nodes with exact names,
SysML text metrics without BERTScore and without the SysMEval judge (skipped), TLA+ conformance with the
deterministic trace-name mapping and invariants with the templates' own ``tla_example`` definitions.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.task import Task, TaskKind
from sysmo.errors import SysmoError
from sysmo.evals.cascade import ScoringContext, cascade_for
from sysmo.evals.sensitivity import MutationError
from sysmo.evals.sensitivity import architecture as arch_ops
from sysmo.evals.sensitivity import sysml as sysml_ops
from sysmo.evals.sensitivity import tla as tla_ops
from sysmo.evals.sensitivity import uml_class as uml_ops
from sysmo.log import get_logger

log = get_logger(__name__)

FAMILIES = ("tla", "sysml", "uml_class", "architecture")
Subset = Literal["ci", "full"]
EPSILON = 1e-6


class Column(BaseModel):
    """One cell of a variant's row: a stage's value (``key`` = stage) or one of its metrics (``stage.metric``)."""

    name: str
    key: str

    @property
    def stage(self) -> str:
        return self.key.split(".", 1)[0]


COLUMNS: dict[str, list[Column]] = {
    "tla": [Column(name=s, key=s) for s in ("syntax", "runtime", "conformance", "invariants")],
    "sysml": [Column(name="validity", key="validity"), Column(name="rougeL", key="text.rougeL_word"),
              Column(name="bleu", key="text.bleu_paper"), Column(name="elem_f1", key="elements.f1"),
              Column(name="struct_f1", key="elements.structure_f1")],
    "uml_class": [Column(name="syntax", key="syntax"), Column(name="clue", key="clue.clue"),
                  Column(name="class", key="clue.clue_class"), Column(name="relation", key="clue.clue_relation"),
                  Column(name="attribute", key="clue.clue_attribute"), Column(name="method", key="clue.clue_method")],
    "architecture": [Column(name="validity", key="validity"), Column(name="node_f1", key="structure.node_f1"),
                     Column(name="edge_f1", key="structure.edge_f1"), Column(name="ged", key="structure.ged_acc"),
                     Column(name="boundary", key="structure.layer_acc"),
                     Column(name="antipatterns", key="antipatterns")],
}

# the deterministic settings of each cascade (no LLM, no embedding model). TLA+: one simulation shows every
# action of the small starter systems; every gold state space is below the bound, which stops a mutant whose
# state space is unbounded (a weakened guard) early: its templates are then inconclusive, never holding
OPTIONS: dict[str, dict[str, object]] = {
    "tla": {"mode": "sysmo", "runtime.runs": 1, "invariants.timeout_s": 120, "invariants.max_states": 10_000,
            "conformance.timeout_s": 120},
    "sysml": {"mode": "sysmo", "text.bertscore": False},
    "uml_class": {"mode": "sysmo", "embedding": "exact"},
    "architecture": {"mode": "sysmo", "similarity": "exact"},
}


@dataclass
class Gold:
    """A gold model: the task it answers and the text of its main file."""

    task: Task
    source: str  # where it comes from: "starter", "sysmbench", "omg-sysml-v2", "sysmobench-pgo", "r2abench"

    @property
    def text(self) -> str:
        assert self.task.references.model is not None
        return self.task.references.model.main_text

    def artifact(self, text: str) -> Artifact:
        """The reference's files with the main file replaced by ``text``."""
        model = self.task.references.model
        assert model is not None and model.main_file is not None
        return model.model_copy(update={"files": {**model.files, model.main_file: text}})


Generate = Callable[[Gold, Subset], Iterator[tuple[str, str]]]  # (target, mutated text)


@dataclass
class Operator:
    family: str
    name: str
    generate: Generate
    must_lose: tuple[str, ...] = ()
    must_keep: tuple[str, ...] = ()
    preserving: bool = False
    reason: str = ""


class VariantResult(BaseModel):
    family: str
    task: str
    source: str
    operator: str
    target: str
    preserving: bool
    values: dict[str, float | None]
    gold: dict[str, float | None]
    must_lose: list[str]
    must_keep: list[str]
    verdicts: dict[str, str] = Field(default_factory=dict)  # column -> "lost" | "kept" | "MISS" | "n/a" | "-"
    outcomes: dict[str, str] = Field(default_factory=dict)  # stage -> outcome
    seconds: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and "MISS" not in self.verdicts.values()


class NotApplied(BaseModel):
    family: str
    task: str
    operator: str
    why: str


class SensitivityReport(BaseModel):
    subset: str
    families: list[str]
    results: list[VariantResult] = Field(default_factory=list)
    not_applied: list[NotApplied] = Field(default_factory=list)
    golds: dict[str, dict[str, float | None]] = Field(default_factory=dict)  # task -> its own values
    gold_problems: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results) and bool(self.results)


# -- operators per family


def _first(items: list, subset: Subset, full: int = 3) -> list:
    return items[:1] if subset == "ci" else items[:full]


def _trace_facts(task: Task) -> tuple[set[str], set[str], str]:
    """Event names, state variable names and the whole text of the task's traces (empty without traces)."""
    from sysmo.evals.metrics import tla_conformance

    traces = tla_conformance.task_traces(task)
    if traces is None:
        return set(), set(), ""
    validate = task.references.extra.get("pgo_validate_cfg")  # PGo runs: the task's <t>Validate.cfg (a path)
    try:
        loaded = tla_conformance.load_traces(traces, Path(validate).read_text(encoding="utf-8") if validate else None)
    except (SysmoError, OSError, ValueError) as exc:
        log.warning("sensitivity.traces_unreadable", task=task.id, error=str(exc))
        return set(), set(), ""
    events = {line.event for t in loaded for line in t.lines}
    state = {k for t in loaded for line in t.lines for k in line.state}
    # every name and value as plain text (JSON would escape newlines into '\\n' and glue 'n' to the next word)
    text = "\n".join(f"{line.event} {line.args} {line.state} {line.config}" for t in loaded for line in t.lines)
    return events, state, text


def _traced_actions(gold: Gold) -> list[str]:
    events, _, _ = _trace_facts(gold.task)
    actions = [a for a in tla_ops.next_actions(gold.text) if a in events]
    if not actions:
        raise MutationError("no action of Next is named by a trace event (PGo traces log PlusCal labels)")
    return actions


def _stutters(gold: Gold, action: str) -> bool:
    """The action changes nothing (``UNCHANGED vars``): its steps are stuttering steps, which ``[Next]_vars``
    allows whether or not ``Next`` names it, so dropping it is no mutation (spinlock's ``Spin``)."""
    try:
        tla_ops.noop_action(gold.text, action)
    except MutationError:
        return True
    return False


def _tla_drop(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    changing = [a for a in _traced_actions(gold) if not _stutters(gold, a)]
    for action in _first(changing, subset, full=99):
        yield action, tla_ops.drop_action_from_next(gold.text, action)


def _tla_noop(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    actions = []
    for action in _traced_actions(gold):
        try:
            actions.append((action, tla_ops.noop_action(gold.text, action)))
        except MutationError:
            continue  # already changes nothing (a stuttering action)
    yield from _first(actions, subset, full=99)


# guards that a template of the task's invariants.yaml is written to notice (the starter suite's buggy variants
# drop the same ones): task -> (action, guard text, the invariant that must then fail)
GUARDED = {
    "starter/tla/bounded_buffer": ("Put", "Len(buffer) < Capacity", "BoundedCapacity"),
    "starter/tla/spinlock": ("Acquire", "~locked", "MutualExclusion"),
    "starter/tla/two_phase_commit": ("Commit", 'votes[rm] = "yes"', "CommitNeedsAllYes"),
    "starter/tla/leader_election": ("Elected", "Head(inbox[n]) = Ids[n]", "AtMostOneLeader"),
}


def _tla_weaken(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    if gold.task.id not in GUARDED:
        raise MutationError("no guard of this task is declared as one an invariant template notices (GUARDED)")
    action, guard, invariant = GUARDED[gold.task.id]
    yield f"{action}: {guard} ({invariant})", tla_ops.weaken_guard(gold.text, action, guard)


def _tla_rename_variable(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    _, state, _ = _trace_facts(gold.task)
    traced = [v for v in tla_ops.variables(gold.text) if v in state]
    if not traced:
        raise MutationError("no declared variable appears in the traces' states")
    for variable in _first(traced, subset, full=99):
        yield variable, tla_ops.rename_variable(gold.text, variable, f"{variable}Mutated")


def _tla_swap_init(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    # a variable the traces log: a PGo trace logs a few process variables only, and an Init value no trace
    # records is not something conformance can see
    _, state, _ = _trace_facts(gold.task)
    for variable in [v for v in tla_ops.variables(gold.text) if v in state]:
        try:
            yield f"Init of {variable}", tla_ops.swap_init_values(gold.text, variable)
            return
        except MutationError:
            continue
    raise MutationError("Init gives no traced variable a value this operator can swap (a boolean, a number, a "
                        "string the spec also assigns, or <<>>)")


def _tla_unrelated(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    yield "module", tla_ops.trivial_unrelated_spec(gold.text)


def _tla_reorder(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    yield "definitions", tla_ops.reorder_definitions(gold.text)


def _untraced_definitions(gold: Gold) -> list[str]:
    """Top-level definitions that neither the traces, nor the cfg, nor an invariant template mention, and that
    are not actions of Next (whose names the trace events are mapped to)."""
    _, _, trace_text = _trace_facts(gold.task)
    model = gold.task.references.model
    assert model is not None
    others = "\n".join(text for name, text in model.files.items() if name != model.main_file)
    templates = "\n".join(str(value) for t in gold.task.references.invariants for value in t.model_dump().values())
    actions = set(tla_ops.next_actions(gold.text))
    return [n for n in tla_ops.parse_module(gold.text).names()
            if n not in actions and n not in ("Init", "Next", "Spec")
            and not any(tla_ops._uses(text, n) for text in (trace_text, others, templates))]


def _tla_rename_definition(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    names = _untraced_definitions(gold)
    if not names:
        raise MutationError("every definition is named by the traces, the cfg, a template or is an action")
    for name in _first(names, subset, full=2):
        yield f"{name} -> {name}Renamed", tla_ops.rename_definition(gold.text, name, f"{name}Renamed")


def _sysml_drop_part(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    # parts named nowhere else (no connection, redefinition or reference), so the model stays valid
    alone = [p for p in sysml_ops.part_usages(gold.text) if sysml_ops.uses(gold.text, p) == 1]
    if not alone:
        raise MutationError("no one-line part usage that nothing else refers to")
    for part in _first(alone, subset):
        yield part, sysml_ops.drop_part(gold.text, part)


def _sysml_retype_port(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    ports = list(dict.fromkeys(sysml_ops.port_usages(gold.text)))
    if not ports or len(sysml_ops.port_definitions(gold.text)) < 2:
        raise MutationError("needs a typed port usage and two port definitions")
    for port in _first(ports, subset):
        yield port, sysml_ops.retype_port(gold.text, port)


def _sysml_multiplicity(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    yield "multiplicity 0", sysml_ops.change_multiplicity(gold.text, 0)


_SYSML_DEF = r"\b(?:part|port|item|attribute|action|state|interface|enum|connection|requirement)\s+def\s+(\w+)"


def _sysml_definitions(text: str) -> list[str]:
    return list(dict.fromkeys(re.findall(_SYSML_DEF, text)))


def _sysml_rename(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    names = _sysml_definitions(gold.text)
    if not names:
        raise MutationError("no definition to rename")
    for name in _first(names, subset):
        yield f"{name} -> Mutated{name}", sysml_ops.rename_element(gold.text, name, f"Mutated{name}")


def _sysml_snake(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    names = [n for n in _sysml_definitions(gold.text)
             if sysml_ops.snake_case(n) != n and not sysml_ops.uses(gold.text, sysml_ops.snake_case(n))]
    if not names:
        raise MutationError("no CamelCase definition name to respell")
    for name in _first(names, subset):
        yield f"{name} -> {sysml_ops.snake_case(name)}", sysml_ops.rename_element(gold.text, name,
                                                                                 sysml_ops.snake_case(name))


def _sysml_reorder(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    yield "package members", sysml_ops.reorder_members(gold.text)


def _uml_drop_class(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    lines = gold.text.split("\n")
    ends = {e for i in uml_ops.relation_lines(gold.text) for e in uml_ops._ends(lines[i])}
    related = [b.name for b in uml_ops.class_blocks(gold.text) if b.name in ends]
    if not related:
        raise MutationError("no class that ends a relation")
    for name in _first(related, subset):
        yield name, uml_ops.drop_class(gold.text, name)


def _uml_flip(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    for index in range(len(_first(uml_ops.relation_lines(gold.text), subset))):
        yield f"relation {index}", uml_ops.flip_relation_kind(gold.text, index)


def _uml_multiplicity(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    yield "first multiplicity", uml_ops.change_multiplicity(gold.text)


def _uml_reorder(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    yield "classes and relations", uml_ops.reorder_declarations(gold.text)


def _linked_components(text: str) -> list[str]:
    ends = {e for n in range(len(arch_ops.edges(text))) for e in arch_ops.edge_ends(text, n)}
    return [a for a in arch_ops.elements(text) if a in ends]


def _arch_drop(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    linked = _linked_components(gold.text)
    if not linked:
        raise MutationError("no declared component with an edge")
    for alias in _first(linked, subset):
        yield alias, arch_ops.drop_component(gold.text, alias)


def _arch_move(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    def siblings(alias: str) -> int:
        box = arch_ops.container_of(gold.text, alias)
        return 0 if box is None else sum(box.head < line < box.end for line in arch_ops.elements(gold.text).values())

    # a component with a sibling: its container stays a container (emptied, it would become a leaf node itself)
    placed = [a for a in arch_ops.elements(gold.text) if siblings(a) >= 2]
    if not placed:
        raise MutationError("no component inside a container with another component")
    for alias in _first(placed, subset):
        yield alias, arch_ops.move_component(gold.text, alias)


def _arch_drop_edge(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    for index in range(len(_first(arch_ops.edges(gold.text), subset))):
        yield f"edge {index}", arch_ops.drop_edge(gold.text, index)


def _arch_reverse_edge(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    for index in range(len(_first(arch_ops.edges(gold.text), subset))):
        yield f"edge {index}", arch_ops.reverse_edge(gold.text, index)


def _arch_rename_alias(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    for alias in _first(_linked_components(gold.text), subset):
        yield f"{alias} -> {alias}Renamed", arch_ops.rename_alias(gold.text, alias, f"{alias}Renamed")


def _arch_reorder(gold: Gold, subset: Subset) -> Iterator[tuple[str, str]]:
    yield "edges", arch_ops.reorder_edges(gold.text)


OPERATORS: list[Operator] = [
    # TLA+
    Operator("tla", "drop_action_from_next", _tla_drop, must_lose=("conformance",),
             reason="conformance: the traces log the action's events, which no step of the mutant can produce. "
                    "Runtime is not declared: it counts the actions TLC's coverage lists, and a dropped action "
                    "is not listed (its share can stay 1)."),
    Operator("tla", "noop_action", _tla_noop, must_lose=("conformance",),
             reason="conformance: the traced state after the action's events differs from the unchanged one. "
                    "Invariants are not declared: only a template about the action's effect (a liveness one) "
                    "notices, and not every action has one."),
    Operator("tla", "weaken_guard", _tla_weaken, must_lose=("invariants",), must_keep=("syntax",),
             reason="invariants: the guard is the one a template of the task is written to protect (GUARDED, the "
                    "same guard a buggy variant of the starter task drops). Conformance is not declared: a weaker "
                    "guard admits more behaviours, so the recorded traces still replay."),
    Operator("tla", "rename_variable", _tla_rename_variable, must_lose=("conformance",), must_keep=("syntax",),
             reason="conformance: the traces' states name the variable; with no helper to map names, the "
                    "renamed variable is not constrained by them and the mapping must not silently match it. "
                    "Invariants are not declared (a helper would concretise the templates onto the new name)."),
    Operator("tla", "swap_init_values", _tla_swap_init, must_lose=("conformance",), must_keep=("syntax",),
             reason="conformance: every trace's Init line logs the initial state, which the mutant does not have."),
    Operator("tla", "trivial_unrelated_spec", _tla_unrelated, must_lose=("conformance", "invariants"),
             must_keep=("syntax",),
             reason="conformance: no trace event is a step of it; invariants: no template's state exists in it, "
                    "so none can be shown to hold. Runtime is not declared: the spec runs without error."),
    Operator("tla", "reorder_definitions", _tla_reorder, preserving=True,
             must_keep=("syntax", "runtime", "conformance", "invariants"),
             reason="the same module up to the order of its definitions (each still defined before use)."),
    Operator("tla", "rename_definition", _tla_rename_definition, preserving=True,
             must_keep=("syntax", "runtime", "conformance", "invariants"),
             reason="a consistent rename of a definition that no trace, cfg or template names (not an action)."),
    # SysML v2
    Operator("sysml", "drop_part", _sysml_drop_part, must_lose=("rougeL", "bleu", "elem_f1", "struct_f1"),
             must_keep=("validity",),
             reason="text: tokens removed; elements: the part's key (named and name-free) is missing. The part is "
                    "referred to nowhere else, so the model stays valid."),
    Operator("sysml", "retype_port", _sysml_retype_port, must_lose=("rougeL", "bleu"),
             reason="text: the type name changed. Elements are not declared: element keys are kind + name + "
                    "containment, types are not compared (a documented blind spot); validity is not declared "
                    "(a connection may now join ports of mismatched types)."),
    Operator("sysml", "change_multiplicity", _sysml_multiplicity, must_lose=("bleu",),
             must_keep=("validity",),
             reason="BLEU (whitespace tokens): the bound changed. ROUGE-L is not declared: its tokenizer keeps "
                    "letters and digits only, so [1..*] -> [1] is invisible to it. Elements are not declared: "
                    "multiplicities are not compared."),
    Operator("sysml", "rename_element", _sysml_rename, must_lose=("rougeL", "bleu", "elem_f1"),
             must_keep=("validity", "struct_f1"),
             reason="text and named elements: the definition has another name (consistently, so the model stays "
                    "valid); the name-free structure keys are the same."),
    Operator("sysml", "respell_name", _sysml_snake, preserving=True,
             must_keep=("validity", "elem_f1", "struct_f1"),
             reason="FuelTank -> fuel_tank everywhere: valid, and equal after the elements' name normalisation. "
                    "Text metrics compare tokens and are not expected to keep."),
    Operator("sysml", "reorder_members", _sysml_reorder, preserving=True,
             must_keep=("validity", "elem_f1", "struct_f1"),
             reason="the package's members in reverse order: SysML v2 resolves names regardless of order. Text "
                    "metrics are order-sensitive by design and are not expected to keep."),
    # class diagrams
    Operator("uml_class", "drop_class", _uml_drop_class, must_lose=("clue", "class", "relation"),
             must_keep=("syntax",),
             reason="CLUE class: a reference class has no candidate; relation: its relations are gone too."),
    Operator("uml_class", "flip_relation_kind", _uml_flip, must_lose=("clue", "relation"),
             must_keep=("syntax", "class", "attribute", "method"),
             reason="CLUE relation: the relation type's LUT similarity is below 1 (and the multiplicity term "
                    "changes group for association <-> dependency); classes are untouched."),
    Operator("uml_class", "change_multiplicity", _uml_multiplicity, must_lose=("clue", "relation"),
             must_keep=("syntax", "class"),
             reason="CLUE relation: the multiplicity term (the new bound is neither equal nor both 'many')."),
    Operator("uml_class", "reorder_declarations", _uml_reorder, preserving=True,
             must_keep=("syntax", "clue", "class", "relation", "attribute", "method"),
             reason="classes and relations in reverse order: the same diagram."),
    # architecture
    Operator("architecture", "drop_component", _arch_drop, must_lose=("node_f1", "edge_f1", "ged"),
             must_keep=("validity",),
             reason="node F1: a reference leaf is missing; edge F1: its edges are gone; GED: a node and its "
                    "edges to insert. Boundary is not declared: it is measured over aligned pairs only."),
    Operator("architecture", "move_component", _arch_move, must_lose=("boundary", "ged"),
             must_keep=("validity", "node_f1", "edge_f1"),
             reason="boundary (layer accuracy): the aligned node sits in another container; GED: a boundary "
                    "error. Nodes and edges are the same."),
    Operator("architecture", "drop_edge", _arch_drop_edge, must_lose=("edge_f1", "ged"),
             must_keep=("validity", "node_f1", "boundary"),
             reason="edge F1 and GED: a reference edge is missing."),
    Operator("architecture", "reverse_edge", _arch_reverse_edge, must_lose=("edge_f1", "ged"),
             must_keep=("validity", "node_f1", "boundary"),
             reason="edge F1 and GED: a directed reference edge is not recovered by its reverse."),
    Operator("architecture", "rename_alias", _arch_rename_alias, preserving=True,
             must_keep=("validity", "node_f1", "edge_f1", "ged", "boundary", "antipatterns"),
             reason="the alias is not shown: the rendered diagram is the same."),
    Operator("architecture", "reorder_edges", _arch_reorder, preserving=True,
             must_keep=("validity", "node_f1", "edge_f1", "ged", "boundary", "antipatterns"),
             reason="edges in reverse order: the same graph."),
]


def operators(family: str) -> list[Operator]:
    return [o for o in OPERATORS if o.family == family]


# -- gold models


# the CI subset: the smallest TLA+ task; SysML: the starter tasks with ports (quadcopter) and multiplicities (bicycle)
CI_TASKS = {"tla": ("starter/tla/bounded_buffer",),
            "sysml": ("starter/sysml/quadcopter_drone", "starter/sysml/bicycle_family"),
            "uml_class": ("starter/uml_class/library_loans",),
            "architecture": ("starter/architecture/bike_sharing_system",)}
FULL_SYSMBENCH = 10  # SysMBench references in the full subset (the first ones OpenSysML accepts)
OMG_EXAMPLES = ("Simple Tests/PartTest.sysml", "Simple Tests/MultiplicityTest.sysml",
                "Simple Tests/ConnectionTest.sysml",
                "Vehicle Example/VehicleDefinitions.sysml")


def gold_models(family: str, subset: Subset, data_dir: Path | None = None) -> tuple[list[Gold], list[str]]:
    """The gold models of ``family`` in ``subset`` and notes on the published data that was not found."""
    from sysmo.benchmarks.starter import load_starter_tasks

    notes: list[str] = []
    starter = [t for t in load_starter_tasks() if t.kind.value == family and t.references.model is not None]
    if subset == "ci":
        return [Gold(t, "starter") for t in starter if t.id in CI_TASKS[family]], notes
    golds = [Gold(t, "starter") for t in starter]
    try:
        golds += _published(family, data_dir, notes)
    except SysmoError as exc:
        notes.append(f"{family}: published data not used: {exc}")
    return golds, notes


def _published(family: str, data_dir: Path | None, notes: list[str]) -> list[Gold]:
    from sysmo.benchmarks import datadir

    root = datadir.require_data_dir(data_dir)
    if family == "tla":
        from sysmo.benchmarks import sysmobench

        tasks = sysmobench.load(datadir.dataset_dir(root, "sysmobench"))
        # PGo gold specs with traces, small enough for the suite (raftkvs is ~19k lines)
        chosen = [t for t in tasks if t.references.model is not None and t.references.traces is not None
                  and len(t.references.model.main_text.splitlines()) < 1000]
        return [Gold(t, "sysmobench-pgo") for t in chosen]
    if family == "sysml":
        from sysmo.benchmarks import sysmbench

        tasks = sysmbench.load(datadir.dataset_dir(root, "sysmbench"))
        accepted = [t for t in tasks if t.references.model is not None and t.labels.get("reference_valid") is not False]
        golds = [Gold(t, "sysmbench") for t in accepted[:FULL_SYSMBENCH]]
        examples = root / "sysml-v2-release" / "sysml" / "src" / "examples"
        for name in OMG_EXAMPLES:
            path = examples / name
            if not path.is_file():
                notes.append(f"sysml: OMG example {name} not found under {examples}")
                continue
            from sysmo.contracts.artifact import Language
            from sysmo.contracts.task import TaskReferences

            model = Artifact(language=Language.SYSML, files={path.name: path.read_text(encoding="utf-8")})
            golds.append(Gold(Task(id=f"omg-sysml-v2/{path.stem}", benchmark="omg-sysml-v2", kind=TaskKind.SYSML,
                                   references=TaskReferences(model=model)), "omg-sysml-v2"))
        return golds
    if family == "architecture":
        from sysmo.benchmarks import r2abench
        from sysmo.llm.replay import r2abench_checkout

        checkout = r2abench_checkout(data_dir)
        if not checkout.is_dir():
            notes.append(f"architecture: no R2ABench checkout at {checkout} (set $SYSMO_R2ABENCH_DIR): starter only")
            return []
        tasks = r2abench.load(checkout)
        seen: set[str] = set()
        golds = []
        for t in tasks:
            if t.references.model is None or t.references.model.main_text in seen:
                continue
            seen.add(t.references.model.main_text)  # one per project (its ablations share the reference)
            golds.append(Gold(t, "r2abench"))
        return golds
    notes.append(f"{family}: no published gold models in the data (starter only)")
    return []


# -- scoring


def _value(card, column: Column) -> float | None:
    value = card.flat().get(column.key)
    if value is not None:
        return value
    stage = card.stage(column.stage)
    if stage is not None and (stage.detail.get("gated") or stage.outcome in ("error", "failed")):
        return 0.0  # gated by syntax, or the stage failed without a number: it lost its points
    return None


def score_values(family: str, artifact: Artifact, task: Task) -> tuple[dict[str, float | None], dict[str, str]]:
    card = cascade_for(TaskKind(family)).score(artifact, task, ScoringContext(options=dict(OPTIONS[family])))
    values = {c.name: _value(card, c) for c in COLUMNS[family]}
    return values, {s.stage: s.outcome for s in card.stages}


def judge(values: dict[str, float | None], gold: dict[str, float | None], op: Operator,
          columns: list[Column]) -> dict[str, str]:
    verdicts: dict[str, str] = {}
    for column in columns:
        name = column.name
        mine, theirs = values.get(name), gold.get(name)
        lost = mine is not None and theirs is not None and mine < theirs - EPSILON
        if name in op.must_lose:
            if theirs is None or theirs <= EPSILON:
                verdicts[name] = "n/a"  # the gold has nothing to lose here
            else:
                verdicts[name] = "lost" if lost or (mine is None) else "MISS"
        elif name in op.must_keep:
            if theirs is None:
                verdicts[name] = "n/a"
            else:
                verdicts[name] = "MISS" if lost or mine is None else "kept"
        else:
            verdicts[name] = "(lost)" if lost else "-"
    return verdicts


Progress = Callable[[str], None]


def run(families: list[str] | None = None, subset: Subset = "ci", data_dir: Path | None = None,
        progress: Progress | None = None) -> SensitivityReport:
    """Every operator of every family on the subset's gold models, scored and judged."""
    chosen = families or list(FAMILIES)
    report = SensitivityReport(subset=subset, families=chosen)
    say = progress or (lambda _: None)
    for family in chosen:
        golds, notes = gold_models(family, subset, data_dir)
        report.gold_problems.extend(notes)
        for gold in golds:
            started = time.monotonic()
            reference = gold.task.references.model
            assert reference is not None
            gold_values, _ = score_values(family, reference, gold.task)
            report.golds[gold.task.id] = gold_values
            say(f"{family} {gold.task.id}: gold " + ", ".join(
                f"{k}={'-' if v is None else f'{v:.2f}'}" for k, v in gold_values.items())
                + f" ({time.monotonic() - started:.1f} s)")
            for op in operators(family):
                try:
                    variants = list(op.generate(gold, subset))
                except MutationError as exc:
                    report.not_applied.append(NotApplied(family=family, task=gold.task.id, operator=op.name,
                                                         why=str(exc)))
                    say(f"  {op.name}: not applicable ({exc})")
                    continue
                for target, text in variants:
                    report.results.append(_score_variant(family, gold, op, target, text, gold_values, say))
    return report


def _score_variant(family: str, gold: Gold, op: Operator, target: str, text: str,
                   gold_values: dict[str, float | None], say: Progress) -> VariantResult:
    started = time.monotonic()
    result = VariantResult(family=family, task=gold.task.id, source=gold.source, operator=op.name, target=target,
                           preserving=op.preserving, values={}, gold=gold_values, must_lose=list(op.must_lose),
                           must_keep=list(op.must_keep))
    if text == gold.text:
        result.error = "the operator left the model unchanged"
    else:
        try:
            result.values, result.outcomes = score_values(family, gold.artifact(text), gold.task)
            result.verdicts = judge(result.values, gold_values, op, COLUMNS[family])
        except SysmoError as exc:
            result.error = str(exc)
    result.seconds = time.monotonic() - started
    shown = ", ".join(f"{k} {v}" for k, v in result.verdicts.items() if v not in ("-",))
    say(f"  {op.name} [{target}]: {'ok' if result.ok else 'MISS'} ({shown}) {result.seconds:.1f} s"
        + (f" error: {result.error}" if result.error else ""))
    return result

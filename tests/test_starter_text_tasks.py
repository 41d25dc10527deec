"""Starter text tasks (SysML v2, class diagrams, architecture): shape, coverage, validity in real tools."""

from __future__ import annotations

import re
from functools import lru_cache

import pytest

from sysmo.benchmarks.r2abench import sections
from sysmo.benchmarks.starter import STARTER_DIR, load_starter_tasks
from sysmo.contracts.task import Task, TaskKind
from sysmo.tools.plantuml.architecture import parse_architecture
from sysmo.tools.plantuml.class_model import ClassKind, RelationType
from sysmo.tools.plantuml.parse_class import parse_class_diagram
from sysmo.contracts.check import Outcome, Severity

TEXT_KINDS = {TaskKind.SYSML: ".sysml", TaskKind.UML_CLASS: ".puml", TaskKind.ARCHITECTURE: ".puml"}
MINIMUM = {TaskKind.SYSML: 8, TaskKind.UML_CLASS: 8, TaskKind.ARCHITECTURE: 5}
PRD_SECTIONS = ["system introduction", "core objectives", "functional features", "technical constraints",
                "non-functional requirements", "system architecture description"]


@lru_cache(maxsize=1)
def _all_tasks() -> tuple[Task, ...]:
    return tuple(load_starter_tasks())


def _tasks(kind: TaskKind) -> list[Task]:
    return [t for t in _all_tasks() if t.kind == kind]


def _name(task: Task) -> str:
    return task.id.rsplit("/", 1)[-1]


def _reference(task: Task) -> str:
    assert task.references.model is not None, task.id
    return task.references.model.main_text


def _by_name(kind: TaskKind, name: str) -> Task:
    return next(t for t in _tasks(kind) if _name(t) == name)


def _words(identifier: str) -> str:
    """``CartItem`` -> ``cart item``: how a requirement names a class."""
    return " ".join(re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", identifier)).lower()


def test_starter_suite_loads_enough_text_tasks_of_each_kind() -> None:
    counts = {kind.value: len(_tasks(kind)) for kind in TEXT_KINDS}
    assert all(counts[kind.value] >= MINIMUM[kind] for kind in TEXT_KINDS), counts


@pytest.mark.parametrize("kind", sorted(TEXT_KINDS), ids=lambda k: k.value)
def test_text_tasks_carry_requirement_reference_and_metadata(kind: TaskKind) -> None:
    for task in _tasks(kind):
        assert task.id == f"starter/{kind.value}/{_name(task)}" and task.benchmark == "starter"
        assert (STARTER_DIR / kind.value / _name(task) / "task.yaml").is_file()
        assert task.title.strip() and task.domain and task.domain.strip()
        assert task.difficulty in range(1, 6)
        assert task.key_grammar and all(isinstance(g, str) and g for g in task.key_grammar)
        assert task.references.model is not None
        assert task.references.model.main_file == "reference" + TEXT_KINDS[kind]
        assert _reference(task).strip()
        # a requirement is a paragraph a modeller can work from, not a one-liner
        assert task.inputs.requirement and len(task.inputs.requirement.split()) >= 60, task.id


def test_sysml_difficulty_follows_the_sysmbench_line_count_bands() -> None:
    """SysMBench grades difficulty by reference lines: <30, <60, <90, <120, >=120 -> 1..5."""
    for task in _tasks(TaskKind.SYSML):
        lines = sum(1 for line in _reference(task).splitlines() if line.strip())
        expected = 1 + sum(lines >= bound for bound in (30, 60, 90, 120))
        assert task.difficulty == expected, (task.id, lines)


def test_sysml_references_cover_the_main_grammar_and_use_units() -> None:
    text = "\n".join(_reference(task) for task in _tasks(TaskKind.SYSML))
    constructs = [r"\bpart def\b", r"\bport def\b", r"\binterface def\b", r"\bconnect\b", r"\baction def\b",
                  r"\bflow\b", r"\bstate def\b", r"\btransition\b", r"\baccept after\b",
                  r"\brequirement def\b", r"\brequire constraint\b", r"\bconstraint def\b", r"\bcalc def\b",
                  r"\benum def\b", r"\bsatisfy\b", r"\buse case def\b", r"\ballocate\b", r"\bexhibit state\b",
                  r":>\s*\w", r":>>",
                  r"\[(kg|m/s|W|V|Hz|min|s)\]"]
    for construct in constructs:
        assert re.search(construct, text), construct
    for task in _tasks(TaskKind.SYSML):
        reference = _reference(task)
        assert "ScalarValues::" in reference and "ISQ::" in reference, task.id


def test_class_references_parse_into_typed_members_and_all_six_relation_types() -> None:
    seen: set[RelationType] = set()
    for task in _tasks(TaskKind.UML_CLASS):
        diagram = parse_class_diagram(_reference(task))
        declared = [c for c in diagram.classes if not c.implicit]
        assert not [c.name for c in diagram.classes if c.implicit], task.id  # every endpoint is declared
        attributes = [a for c in declared for a in c.attributes]
        methods = [m for c in declared if c.kind != ClassKind.ENUM for m in c.methods]
        assert attributes and all(a.type for a in attributes), task.id
        assert methods and all(m.return_type for m in methods), task.id
        assert all(p.name and p.type for m in methods for p in m.parameters), task.id
        assert any(m.parameters for m in methods), task.id
        types = {r.type for r in diagram.relationships}
        assert {t.value for t in types} == set(task.labels["relation_types"]), task.id
        for rel in diagram.relationships:
            if rel.type in (RelationType.ASSOCIATION, RelationType.AGGREGATION, RelationType.COMPOSITION):
                assert rel.source_multiplicity and rel.target_multiplicity, (task.id, rel.line)
        seen |= types
    assert seen == set(RelationType)


def test_class_requirements_name_most_reference_classes() -> None:
    for task in _tasks(TaskKind.UML_CLASS):
        requirement = (task.inputs.requirement or "").lower()
        names = [c.name for c in parse_class_diagram(_reference(task)).classes]
        named = [n for n in names if _words(n) in requirement]
        assert len(named) >= 0.75 * len(names), (task.id, sorted(set(names) - set(named)))


def test_architecture_prds_have_the_six_r2abench_sections_and_when_then_features() -> None:
    for task in _tasks(TaskKind.ARCHITECTURE):
        prd = task.inputs.requirement or ""
        found = {s.key: s for s in sections(prd)}
        assert all(name in found for name in PRD_SECTIONS), (task.id, sorted(found))
        features = found["functional features"]
        body = "\n".join(prd.splitlines()[features.start + 1:features.end])
        assert len(re.findall(r"\bWhen\b[^\n]*\bthen\b", body)) >= 5, task.id


def test_architecture_references_have_layers_leaves_stores_and_labelled_edges() -> None:
    nested = []
    for task in _tasks(TaskKind.ARCHITECTURE):
        graph = parse_architecture(_reference(task))
        leaves = graph.leaves()
        containers = [n for n in graph.nodes if not n.leaf]
        assert len(leaves) >= 10 and len(containers) >= 3, task.id
        assert {"database", "queue"} <= {n.kind for n in leaves}, task.id
        assert not [n.id for n in graph.nodes if n.implicit], task.id  # edges only join declared elements
        assert graph.edges and all(e.label for e in graph.edges), task.id
        leaf_ids = {n.id for n in leaves}
        connected = {e.source for e in graph.edges} | {e.target for e in graph.edges}
        assert leaf_ids <= connected, (task.id, sorted(leaf_ids - connected))  # no orphan components
        labels = task.labels
        assert (labels["leaf_nodes"], labels["containers"], labels["edges"]) == \
            (len(leaves), len(containers), len(graph.edges)), task.id
        if any(n.parent and not n.leaf for n in graph.nodes):
            nested.append(task.id)
    assert len(nested) >= 2, nested  # some references nest containers (node in node, package in package)


@pytest.mark.slow
def test_every_sysml_reference_validates_in_opensysml_without_errors_or_typing_findings() -> None:
    from sysmo.tools.sysml.validate import validate

    for task in _tasks(TaskKind.SYSML):
        assert task.references.model is not None
        result = validate(task.references.model)
        bad = [d.render() for d in result.diagnostics if d.severity in (Severity.ERROR, Severity.TYPING)]
        assert result.outcome == Outcome.OK and not bad, (task.id, bad)
    # the same check rejects a reference with one broken type name
    broken = _reference(_by_name(TaskKind.SYSML, "elevator_controller")).replace(
        "accept call : CallRequest", "accept call : CallRequset", 1)
    assert validate(broken).outcome == Outcome.FAILED


@pytest.mark.slow
def test_every_plantuml_reference_passes_plantuml_and_keeps_all_declared_elements() -> None:
    from sysmo.tools.plantuml.check import check

    for kind in (TaskKind.UML_CLASS, TaskKind.ARCHITECTURE):
        for task in _tasks(kind):
            text = _reference(task)
            result = check(text)
            assert result.outcome == Outcome.OK, (task.id, [d.message for d in result.diagnostics])
            # PlantUML's own entity count: an element swallowed by a broken body would be missing
            if kind == TaskKind.UML_CLASS:
                declared = len([c for c in parse_class_diagram(text).classes if not c.implicit])
            else:
                declared = len(parse_architecture(text).leaves())
            match = re.search(r"\((\d+) entities\)", result.details.get("description") or "")
            assert match and int(match.group(1)) >= declared, (task.id, result.details.get("description"))
    # the same check rejects a reference whose relationship lost its label colon, on that line
    text = _reference(_by_name(TaskKind.UML_CLASS, "library_loans"))
    broken = text.replace("Loan ..> FinePolicy : uses", "Loan ..> FinePolicy uses", 1)
    result = check(broken)
    line = text.splitlines().index("Loan ..> FinePolicy : uses") + 1
    assert result.outcome == Outcome.FAILED and [d.line for d in result.errors] == [line]

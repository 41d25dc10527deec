"""Starter text tasks (SysML v2, class diagrams, architecture): shape, coverage, validity in real tools."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from sysmo.benchmarks.r2abench import sections
from sysmo.tools.plantuml.architecture import parse_architecture
from sysmo.tools.plantuml.class_model import ClassKind, RelationType
from sysmo.tools.plantuml.parse_class import parse_class_diagram
from sysmo.tools.result import Outcome, Severity

STARTER = Path(__file__).resolve().parents[1] / "benchmarks" / "starter"
KINDS = {"sysml": ".sysml", "uml_class": ".puml", "architecture": ".puml"}
MINIMUM = {"sysml": 8, "uml_class": 8, "architecture": 5}
YAML_KEYS = {"id", "kind", "title", "domain", "difficulty", "key_grammar", "requirement_file",
             "reference_file", "labels"}
PRD_SECTIONS = ["system introduction", "core objectives", "functional features", "technical constraints",
                "non-functional requirements", "system architecture description"]


def _folders(kind: str) -> list[Path]:
    return sorted(p for p in (STARTER / kind).iterdir() if (p / "task.yaml").is_file())


def _meta(folder: Path) -> dict:
    return yaml.safe_load((folder / "task.yaml").read_text(encoding="utf-8"))


def _requirement(folder: Path) -> str:
    return (folder / _meta(folder)["requirement_file"]).read_text(encoding="utf-8")


def _reference(folder: Path) -> str:
    return (folder / _meta(folder)["reference_file"]).read_text(encoding="utf-8")


def _words(identifier: str) -> str:
    """``CartItem`` -> ``cart item``: how a requirement names a class."""
    return " ".join(re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", identifier)).lower()


def test_starter_suite_has_enough_text_tasks_of_each_kind() -> None:
    counts = {kind: len(_folders(kind)) for kind in KINDS}
    assert all(counts[kind] >= MINIMUM[kind] for kind in KINDS), counts


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_task_yaml_names_its_folder_kind_and_existing_files(kind: str) -> None:
    for folder in _folders(kind):
        meta = _meta(folder)
        assert set(meta) >= YAML_KEYS, (folder.name, YAML_KEYS - set(meta))
        assert meta["id"] == folder.name and meta["kind"] == kind
        assert meta["title"].strip() and meta["domain"].strip()
        assert meta["difficulty"] in range(1, 6)
        assert meta["key_grammar"] and all(isinstance(g, str) and g for g in meta["key_grammar"])
        assert isinstance(meta["labels"], dict)
        assert meta["reference_file"].endswith(KINDS[kind])
        # a requirement is a paragraph a modeller can work from, not a one-liner
        assert len(_requirement(folder).split()) >= 60, folder.name
        assert _reference(folder).strip()


def test_starter_text_task_ids_are_unique_across_kinds() -> None:
    ids = [folder.name for kind in KINDS for folder in _folders(kind)]
    assert len(ids) == len(set(ids))


def test_sysml_difficulty_follows_the_sysmbench_line_count_bands() -> None:
    """SysMBench grades difficulty by reference lines: <30, <60, <90, <120, >=120 -> 1..5."""
    for folder in _folders("sysml"):
        lines = sum(1 for line in _reference(folder).splitlines() if line.strip())
        expected = 1 + sum(lines >= bound for bound in (30, 60, 90, 120))
        assert _meta(folder)["difficulty"] == expected, (folder.name, lines)


def test_sysml_references_cover_the_main_grammar_and_use_units() -> None:
    text = "\n".join(_reference(folder) for folder in _folders("sysml"))
    constructs = [r"\bpart def\b", r"\bport def\b", r"\binterface def\b", r"\bconnect\b", r"\baction def\b",
                  r"\bflow\b", r"\bstate def\b", r"\btransition\b", r"\baccept after\b",
                  r"\brequirement def\b", r"\brequire constraint\b", r"\bconstraint def\b", r"\bcalc def\b",
                  r"\benum def\b", r"\bsatisfy\b", r"\buse case def\b", r"\ballocate\b", r"\bexhibit state\b",
                  r":>\s*\w", r":>>",
                  r"\[(kg|m/s|W|V|Hz|min|s)\]"]
    for construct in constructs:
        assert re.search(construct, text), construct
    for folder in _folders("sysml"):
        reference = _reference(folder)
        assert "ScalarValues::" in reference and "ISQ::" in reference, folder.name


def test_class_references_parse_into_typed_members_and_all_six_relation_types() -> None:
    seen: set[RelationType] = set()
    for folder in _folders("uml_class"):
        diagram = parse_class_diagram(_reference(folder))
        declared = [c for c in diagram.classes if not c.implicit]
        assert not [c.name for c in diagram.classes if c.implicit], folder.name  # every endpoint is declared
        attributes = [a for c in declared for a in c.attributes]
        methods = [m for c in declared if c.kind != ClassKind.ENUM for m in c.methods]
        assert attributes and all(a.type for a in attributes), folder.name
        assert methods and all(m.return_type for m in methods), folder.name
        assert all(p.name and p.type for m in methods for p in m.parameters), folder.name
        assert any(m.parameters for m in methods), folder.name
        types = {r.type for r in diagram.relationships}
        assert {t.value for t in types} == set(_meta(folder)["labels"]["relation_types"]), folder.name
        for rel in diagram.relationships:
            if rel.type in (RelationType.ASSOCIATION, RelationType.AGGREGATION, RelationType.COMPOSITION):
                assert rel.source_multiplicity and rel.target_multiplicity, (folder.name, rel.line)
        seen |= types
    assert seen == set(RelationType)


def test_class_requirements_name_most_reference_classes() -> None:
    for folder in _folders("uml_class"):
        requirement = _requirement(folder).lower()
        names = [c.name for c in parse_class_diagram(_reference(folder)).classes]
        named = [n for n in names if _words(n) in requirement]
        assert len(named) >= 0.75 * len(names), (folder.name, sorted(set(names) - set(named)))


def test_architecture_prds_have_the_six_r2abench_sections_and_when_then_features() -> None:
    for folder in _folders("architecture"):
        prd = _requirement(folder)
        found = {s.key: s for s in sections(prd)}
        assert all(name in found for name in PRD_SECTIONS), (folder.name, sorted(found))
        features = found["functional features"]
        body = "\n".join(prd.splitlines()[features.start + 1:features.end])
        assert len(re.findall(r"\bWhen\b[^\n]*\bthen\b", body)) >= 5, folder.name


def test_architecture_references_have_layers_leaves_stores_and_labelled_edges() -> None:
    for folder in _folders("architecture"):
        graph = parse_architecture(_reference(folder))
        leaves = graph.leaves()
        containers = [n for n in graph.nodes if not n.leaf]
        assert len(leaves) >= 10 and len(containers) >= 3, folder.name
        assert {"database", "queue"} <= {n.kind for n in leaves}, folder.name
        assert not [n.id for n in graph.nodes if n.implicit], folder.name  # edges only join declared elements
        assert graph.edges and all(e.label for e in graph.edges), folder.name
        leaf_ids = {n.id for n in leaves}
        connected = {e.source for e in graph.edges} | {e.target for e in graph.edges}
        assert leaf_ids <= connected, (folder.name, sorted(leaf_ids - connected))  # no orphan components
        labels = _meta(folder)["labels"]
        assert (labels["leaf_nodes"], labels["containers"], labels["edges"]) == \
            (len(leaves), len(containers), len(graph.edges)), folder.name
    nested = [folder.name for folder in _folders("architecture")
              if any(graph_node.parent and not graph_node.leaf
                     for graph_node in parse_architecture(_reference(folder)).nodes)]
    assert len(nested) >= 2, nested  # some references nest containers (node in node, package in package)


@pytest.mark.slow
def test_every_sysml_reference_validates_in_opensysml_without_errors_or_typing_findings() -> None:
    from sysmo.tools.sysml.validate import validate

    for folder in _folders("sysml"):
        result = validate(_reference(folder))
        bad = [d.render() for d in result.diagnostics if d.severity in (Severity.ERROR, Severity.TYPING)]
        assert result.outcome == Outcome.OK and not bad, (folder.name, bad)
    # the same check rejects a reference with one broken type name
    broken = _reference(STARTER / "sysml" / "elevator_controller").replace("accept call : CallRequest",
                                                                            "accept call : CallRequset", 1)
    assert validate(broken).outcome == Outcome.FAILED


@pytest.mark.slow
def test_every_plantuml_reference_passes_plantuml_and_keeps_all_declared_elements() -> None:
    from sysmo.tools.plantuml.check import check

    for kind in ("uml_class", "architecture"):
        for folder in _folders(kind):
            text = _reference(folder)
            result = check(text)
            assert result.outcome == Outcome.OK, (folder.name, [d.message for d in result.diagnostics])
            # PlantUML's own entity count: an element swallowed by a broken body would be missing
            if kind == "uml_class":
                declared = len([c for c in parse_class_diagram(text).classes if not c.implicit])
            else:
                declared = len(parse_architecture(text).leaves())
            match = re.search(r"\((\d+) entities\)", result.details.get("description") or "")
            assert match and int(match.group(1)) >= declared, (folder.name, result.details.get("description"))
    # the same check rejects a reference whose relationship lost its label colon, on that line
    text = _reference(STARTER / "uml_class" / "library_loans")
    broken = text.replace("Loan ..> FinePolicy : uses", "Loan ..> FinePolicy uses", 1)
    result = check(broken)
    line = text.splitlines().index("Loan ..> FinePolicy : uses") + 1
    assert result.outcome == Outcome.FAILED and [d.line for d in result.errors] == [line]

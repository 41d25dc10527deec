"""The element tree exported through OpenSysML (OMG API JSON): kinds, names, containment, type references."""

from __future__ import annotations

import importlib
from pathlib import Path

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.check import Outcome
from sysmo.tools.sysml.element_tree import ElementKind, ElementTree, element_tree

BICYCLE = """package 'BicycleDefinition' {
\tprivate import ScalarValues::*;
\tpart def Bicycle {
\t\tattribute weight : Real;
\t\tattribute gear : GearState;
\t\tpart chassis : Frame;
\t\tref part rider : Cyclist;
\t}
\tattribute def GearState {
\t\tattribute index : Integer;
\t\tattribute cadence : Real;
\t}
\tpart def Frame;
\tpart def Cyclist;
}"""

TRAINING = Path("sysml-v2-release") / "sysml" / "src" / "training"


def _rows(tree: ElementTree) -> list[tuple[str, str | None, str | None, list[str]]]:
    """(kind, qualified name, owner's qualified name, types) per element, in document order."""
    index = tree.by_id()
    return [(e.kind.value, e.qualified_name, index[e.owner].qualified_name if e.owner else None, e.types)
            for e in tree.elements]


def test_bicycle_definition_tree_is_pinned():
    tree = element_tree(BICYCLE)
    assert tree.complete and tree.check is not None and tree.check.outcome == Outcome.OK
    b = "BicycleDefinition"
    assert _rows(tree) == [
        ("package", b, None, []),
        ("part_def", f"{b}::Bicycle", b, []),
        ("attribute", f"{b}::Bicycle::weight", f"{b}::Bicycle", ["ScalarValues::Real"]),
        ("attribute", f"{b}::Bicycle::gear", f"{b}::Bicycle", [f"{b}::GearState"]),
        ("part", f"{b}::Bicycle::chassis", f"{b}::Bicycle", [f"{b}::Frame"]),
        ("part", f"{b}::Bicycle::rider", f"{b}::Bicycle", [f"{b}::Cyclist"]),
        ("attribute_def", f"{b}::GearState", b, []),
        ("attribute", f"{b}::GearState::index", f"{b}::GearState", ["ScalarValues::Integer"]),
        ("attribute", f"{b}::GearState::cadence", f"{b}::GearState", ["ScalarValues::Real"]),
        ("part_def", f"{b}::Frame", b, []),
        ("part_def", f"{b}::Cyclist", b, []),
    ]
    bicycle = tree.find(f"{b}::Bicycle")
    assert bicycle is not None and bicycle.line == 3 and bicycle.end_line == 8
    assert [c.name for c in tree.children(bicycle)] == ["weight", "gear", "chassis", "rider"]
    assert tree.path(tree.find(f"{b}::Bicycle::chassis")) == [b, "Bicycle", "chassis"]


def test_state_machine_tree_has_states_and_transitions_with_source_and_target(shared_benchmarks: Path):
    text = (shared_benchmarks / TRAINING / "23. State Definitions" / "State Definition Example-1.sysml").read_text()
    tree = element_tree(text)
    machine = "'State Definition Example-1'::VehicleStates"
    assert [(e.kind.value, e.name) for e in tree.children(tree.find(machine))] == [
        ("state", "off"), ("transition", "off_to_starting"), ("state", "starting"),
        ("transition", "starting_to_on"), ("state", "on"), ("transition", "on_to_off"),
    ]
    transitions = [(t.name, t.source, t.target) for t in tree.of_kind(ElementKind.TRANSITION)]
    assert transitions == [
        ("off_to_starting", f"{machine}::off", f"{machine}::starting"),
        ("starting_to_on", f"{machine}::starting", f"{machine}::on"),
        ("on_to_off", f"{machine}::on", f"{machine}::off"),
    ]
    assert [e.name for e in tree.of_kind(ElementKind.ATTRIBUTE_DEF)] == ["VehicleStartSignal", "VehicleOnSignal", "VehicleOffSignal"]
    # the accept triggers and successions inside transitions are implied structure, not elements
    assert {e.kind for e in tree.elements} == {ElementKind.PACKAGE, ElementKind.ATTRIBUTE_DEF, ElementKind.STATE_DEF,
                                              ElementKind.STATE, ElementKind.TRANSITION}


def test_interface_tree_across_two_files_has_ports_directions_and_connector_ends(shared_benchmarks: Path):
    folder = shared_benchmarks / TRAINING
    artifact = Artifact(language="sysml", files={
        "Port Example.sysml": (folder / "10. Ports" / "Port Example.sysml").read_text(),
        "Interface Example.sysml": (folder / "11. Interfaces" / "Interface Example.sysml").read_text(),
    })
    tree = element_tree(artifact)
    assert tree.check is not None and tree.check.ok
    out_port = tree.find("'Port Example'::FuelOutPort")
    assert out_port is not None and out_port.kind == ElementKind.PORT_DEF
    assert [(c.kind.value, c.name, c.direction, c.types) for c in tree.children(out_port)] == [
        ("attribute", "temperature", None, ["'Port Example'::Temp"]),
        ("item", "fuelSupply", "out", ["'Port Example'::Fuel"]),
        ("item", "fuelReturn", "in", ["'Port Example'::Fuel"]),
    ]
    (interface,) = tree.of_kind(ElementKind.INTERFACE)
    assert interface.name is None
    assert interface.types == ["'Interface Example'::FuelInterface"]
    assert interface.ends == ["tankAssy.fuelTankPort", "eng.engineFuelPort"]
    assert tree.by_id()[interface.owner].qualified_name == "'Interface Example'::vehicle"
    ends = tree.children(tree.find("'Interface Example'::FuelInterface"))
    assert [(e.kind.value, e.name, e.types) for e in ends] == [
        ("port", "supplierPort", ["'Port Example'::FuelOutPort"]),
        ("port", "consumerPort", ["'Port Example'::FuelInPort"]),
    ]


def test_connections_flows_conjugated_ports_redefinitions_requirements_and_actions():
    text = """package T {
  private import ScalarValues::*;
  item def Fuel;
  port def FuelPort { out item fuel : Fuel; }
  part def Tank { port fp : FuelPort; attribute m : Real; }
  part def Engine { port fp : ~FuelPort; }
  part def SportsTank :> Tank;
  part car {
    part tank : Tank { :>> m = 3.0; }
    part engine : Engine;
    connect tank.fp to engine.fp;
    flow of Fuel from tank.fp.fuel to engine.fp.fuel;
  }
  action def Drive { in item f : Fuel; out attribute d : Real; }
  requirement def R { subject c : Tank; }
  requirement r1 : R;
  satisfy r1 by car.tank;
}"""
    tree = element_tree(text)
    assert tree.check is not None and tree.check.ok
    assert tree.find("T::Engine::fp").types == ["~T::FuelPort"]
    assert tree.find("T::SportsTank").specializes == ["T::Tank"]
    redefinition = tree.find("T::car::tank::m")
    assert (redefinition.kind, redefinition.name, redefinition.redefines) == (ElementKind.REFERENCE, "m", ["T::Tank::m"])
    assert [(e.kind.value, e.ends) for e in tree.of_kind(ElementKind.CONNECTION, ElementKind.FLOW)] == [
        ("connection", ["tank.fp", "engine.fp"]), ("flow", ["tank.fp.fuel", "engine.fp.fuel"])]
    assert [(e.name, e.direction, e.types) for e in tree.children(tree.find("T::Drive"))] == [
        ("f", "in", ["T::Fuel"]), ("d", "out", ["ScalarValues::Real"])]
    assert tree.find("T::r1").types == ["T::R"]
    assert [(e.kind.value, e.name, e.types) for e in tree.children(tree.find("T::R"))] == [("reference", "c", ["T::Tank"])]
    (satisfy,) = tree.of_kind(ElementKind.SATISFY)
    assert satisfy.ends == ["T::r1", "car.tank"]


def test_a_model_with_syntax_errors_has_no_tree_but_keeps_its_check():
    tree = element_tree("package P { part def A }\n part x : ;")
    assert tree.complete is False and tree.elements == []
    assert tree.check is not None and tree.check.outcome == Outcome.FAILED
    assert {d.code for d in tree.check.errors} == {"syntax"}


def test_library_names_are_learnt_once_and_the_turtle_export_skipped_after(monkeypatch):
    """Library elements have name-based ids: once a Turtle export named ``ScalarValues::Real``, a later valid
    model referencing only known library elements is exported as JSON alone, and its tree is the same as
    the one read with its own Turtle export."""
    et = importlib.import_module("sysmo.tools.sysml.element_tree")
    from sysmo.tools.sysml.kernel import shared_kernel
    from sysmo.tools.sysml.validate import model_files, run_files

    monkeypatch.setattr(et, "_LIBRARIES", {})  # nothing learnt yet in this test
    first = element_tree(BICYCLE)
    learnt = et.library_of(shared_kernel()).names_for(set())
    assert learnt == {}  # known-and-empty: the cache answers for no references
    asked: list[tuple[str, ...]] = []
    original = et.run_files

    def spy(*args, **kwargs):
        check, run = original(*args, **kwargs)
        asked.append(tuple(run.exports) if run else ())
        return check, run

    monkeypatch.setattr(et, "run_files", spy)
    other = BICYCLE.replace("Bicycle", "Tricycle").replace("weight", "mass")
    second = element_tree(other)
    assert asked == [(et.JSON_EXPORT,)]  # no Turtle export: Real and Integer were met in the first model
    check, run = run_files(model_files(other), exports=(et.JSON_EXPORT, et.TURTLE_EXPORT))
    assert run is not None
    with_turtle = et.parse_api_json(run.exports[et.JSON_EXPORT], run.exports[et.TURTLE_EXPORT])
    assert [e.model_dump() for e in second.elements] == [e.model_dump() for e in with_turtle]
    assert any(e.types == ["ScalarValues::Real"] for e in second.elements)
    assert first.complete and second.complete


def test_a_model_with_errors_always_reads_its_own_turtle_export(monkeypatch):
    """``Real`` without its import: the JSON export still references ScalarValues::Real, its Turtle export has
    no stub for it, and the tree keeps the type unnamed as before (the cache is not consulted)."""
    et = importlib.import_module("sysmo.tools.sysml.element_tree")

    monkeypatch.setattr(et, "_LIBRARIES", {})
    element_tree(BICYCLE)  # learns ScalarValues::Real
    broken = "package V {\n  part def Car {\n    attribute mass : Real;\n  }\n}\n"
    tree = element_tree(broken)
    assert tree.check is not None and tree.check.outcome == Outcome.FAILED
    mass = next(e for e in tree.elements if e.name == "mass")
    assert mass.types == []


def test_library_stubs_keep_unnamed_library_elements():
    from sysmo.tools.sysml.element_tree import LibraryNames, library_names, library_stubs

    turtle = (
        '<urn:sysmlv2:element:r>\n    a sysml:DataType ;\n    sysml:elementId "r" ;\n'
        '    sysml:qualifiedName "ScalarValues::Real" ;\n    sysml:isLibraryElement "true"^^xsd:boolean .\n\n'
        'elmt:m\n    a sysml:OwningMembership ;\n    sysml:elementId "m" ;\n'
        '    sysml:isLibraryElement "true"^^xsd:boolean .\n\n'
        'elmt:own\n    a sysml:PartDefinition ;\n    sysml:elementId "own" .\n'
    )
    assert library_stubs(turtle) == {"r": "ScalarValues::Real", "m": None}
    assert library_names(turtle) == {"r": "ScalarValues::Real"}
    names = LibraryNames()
    assert names.names_for({"r"}) is None
    names.learn(turtle)
    assert names.names_for({"r", "m"}) == {"r": "ScalarValues::Real"}
    assert names.names_for({"r", "x"}) is None

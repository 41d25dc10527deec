"""The scorer-sensitivity suite: its mutation operators (fast, text only) and the CI subset scored by the real
cascades (slow: PlantUML, OpenSysML, SANY/TLC)."""

from __future__ import annotations

import pytest

from sysmo.benchmarks.starter import STARTER_DIR
from sysmo.evals.sensitivity import MutationError
from sysmo.evals.sensitivity import architecture as arch_ops
from sysmo.evals.sensitivity import sysml as sysml_ops
from sysmo.evals.sensitivity import tla as tla_ops
from sysmo.evals.sensitivity import uml_class as uml_ops

BUFFER = (STARTER_DIR / "tla" / "bounded_buffer" / "BoundedBuffer.tla").read_text(encoding="utf-8")
SPINLOCK = (STARTER_DIR / "tla" / "spinlock" / "Spinlock.tla").read_text(encoding="utf-8")
TWO_PC = (STARTER_DIR / "tla" / "two_phase_commit" / "TwoPhaseCommit.tla").read_text(encoding="utf-8")


def _definition(spec: str, name: str) -> str:
    return tla_ops.parse_module(spec).definition(name).text


# -- TLA+ operators


def test_next_actions_are_the_actions_next_names():
    assert tla_ops.next_actions(BUFFER) == ["Put", "Get"]  # ProducerIds is a set, not an action
    assert tla_ops.next_actions(SPINLOCK) == ["Request", "Acquire", "Spin", "Release"]


def test_drop_action_from_next_inline_parenthesised_and_bulleted():
    assert _definition(tla_ops.drop_action_from_next(BUFFER, "Put"), "Next") == \
        r"Next == (\E c \in ConsumerIds : Get(c))"
    assert _definition(tla_ops.drop_action_from_next(SPINLOCK, "Spin"), "Next") == \
        r"Next == \E p \in Procs : Request(p) \/ Acquire(p) \/ Release(p)"
    dropped = _definition(tla_ops.drop_action_from_next(TWO_PC, "RecvVote"), "Next")
    assert "RecvVote" not in dropped and "Commit" in dropped
    assert "RecvVote(rm, vote) ==" in tla_ops.drop_action_from_next(TWO_PC, "RecvVote")  # the definition stays


def test_drop_action_refuses_what_next_does_not_name():
    with pytest.raises(MutationError, match="no disjunction reachable from Next calls the action .Nope."):
        tla_ops.drop_action_from_next(BUFFER, "Nope")
    lonely = BUFFER.replace(r"Next == (\E p \in ProducerIds : Put(p)) \/ (\E c \in ConsumerIds : Get(c))",
                            r"Next == \E p \in ProducerIds : Put(p)")
    with pytest.raises(MutationError, match="only disjunct"):
        tla_ops.drop_action_from_next(lonely, "Put")


def test_noop_action_keeps_guards_and_changes_nothing():
    noop = _definition(tla_ops.noop_action(SPINLOCK, "Acquire"), "Acquire")
    assert noop.split("\n") == ["Acquire(p) ==", '    /\\ pc[p] = "spin"', "    /\\ ~locked",
                                "    /\\ UNCHANGED <<locked, pc>>"]
    assert _definition(tla_ops.noop_action(BUFFER, "Put"), "Put").endswith("/\\ UNCHANGED buffer")
    with pytest.raises(MutationError, match="already changes no variable"):
        tla_ops.noop_action(SPINLOCK, "Spin")


def test_weaken_guard_drops_the_named_or_last_guard():
    assert "Len(buffer) < Capacity" not in _definition(tla_ops.weaken_guard(BUFFER, "Put"), "Put")
    weakened = _definition(tla_ops.weaken_guard(SPINLOCK, "Acquire", "~locked"), "Acquire")
    assert "~locked" not in weakened and 'pc[p] = "spin"' in weakened and "locked' = TRUE" in weakened
    with pytest.raises(MutationError, match="no guard containing"):
        tla_ops.weaken_guard(SPINLOCK, "Acquire", "nothing like this")


def test_rename_variable_is_consistent_and_checked():
    renamed = tla_ops.rename_variable(SPINLOCK, "locked", "held")
    assert tla_ops.variables(renamed) == ["held", "pc"]
    assert "locked" not in renamed.replace("lock", "")  # every use, none left behind
    with pytest.raises(MutationError, match="not a declared variable"):
        tla_ops.rename_variable(SPINLOCK, "Procs", "P")
    with pytest.raises(MutationError, match="already used"):
        tla_ops.rename_variable(SPINLOCK, "locked", "pc")


def test_swap_init_values_per_kind():
    assert _definition(tla_ops.swap_init_values(SPINLOCK), "Init").startswith("Init == locked = TRUE")
    assert _definition(tla_ops.swap_init_values(BUFFER), "Init") == "Init == buffer = <<1>>"
    # a function to a string: another string the spec assigns to the same variable
    assert '"prepared"' in _definition(tla_ops.swap_init_values(TWO_PC), "Init")


def test_trivial_unrelated_spec_keeps_name_and_constants():
    spec = tla_ops.trivial_unrelated_spec(BUFFER)
    assert tla_ops.module_name(spec) == "BoundedBuffer"
    assert tla_ops.constants(spec) == ["Producers", "Consumers", "Capacity"]
    assert "buffer" not in spec and {"Init", "Next", "Spec"} <= set(tla_ops.parse_module(spec).names())


def test_reorder_definitions_defines_before_use():
    reordered = tla_ops.reorder_definitions(BUFFER)
    names = tla_ops.parse_module(reordered).names()
    assert names != tla_ops.parse_module(BUFFER).names()
    assert sorted(names) == sorted(tla_ops.parse_module(BUFFER).names())
    # vars is used by Spec through the subscript '_vars' and WF_vars: it must stay above Spec
    assert names.index("vars") < names.index("Spec") and names.index("Next") < names.index("Spec")
    assert names.index("Put") < names.index("Next")


def test_rename_definition_renames_every_use():
    renamed = tla_ops.rename_definition(BUFFER, "ProducerIds", "Makers")
    assert "ProducerIds" not in renamed and renamed.count("Makers") == BUFFER.count("ProducerIds")
    with pytest.raises(MutationError, match="defines no"):
        tla_ops.rename_definition(BUFFER, "Nothing", "X")


# -- PlantUML and SysML operators

CLASSES = """@startuml
class Library {
  - name : String
}
class Book {
  - isbn : String
}
class Shelf
Library "1" o-- "0..*" Book : holds
Shelf "1" *-- "1" Book
Book <|-- Shelf
@enduml
"""

ARCH = """@startuml
package "Front" {
  [Web App] as Web
  [Mobile App] as Mobile
}
package "Back" {
  [API] as Api
  database "Store" as Db
}
Web --> Api : HTTPS
Mobile --> Api : HTTPS
Api --> Db : SQL
@enduml
"""

SYSML = """package Shop {
    private import ScalarValues::*;
    port def PowerPort;
    port def DataPort;
    part def Motor {
        port power : PowerPort;
    }
    part def Car {
        part motor : Motor;
        part wheels : Motor[4];
        part spare : Motor;
    }
}
"""


def test_class_diagram_operators():
    dropped = uml_ops.drop_class(CLASSES, "Shelf")
    assert "class Shelf" not in dropped and "Shelf" not in dropped and 'Library "1" o-- "0..*" Book' in dropped
    assert 'Library "1" *-- "0..*" Book' in uml_ops.flip_relation_kind(CLASSES, 0)
    assert "Book <|.. Shelf" in uml_ops.flip_relation_kind(CLASSES, 2)
    assert 'Library "*" o-- "0..*" Book' in uml_ops.change_multiplicity(CLASSES)  # "1" -> "*"
    reordered = uml_ops.reorder_declarations(CLASSES)
    assert reordered.index("class Shelf") < reordered.index("class Library")
    assert sorted(filter(None, reordered.split("\n"))) == sorted(filter(None, CLASSES.split("\n")))
    with pytest.raises(MutationError):
        uml_ops.drop_class(CLASSES, "Missing")


def test_architecture_operators():
    assert "Mobile" not in arch_ops.drop_component(ARCH, "Mobile")
    moved = arch_ops.move_component(ARCH, "Web")
    assert arch_ops.container_of(moved, "Web").name == "Back"  # type: ignore[union-attr]
    assert "Web --> Api" not in arch_ops.drop_edge(ARCH, 0)
    assert "Api --> Web : HTTPS" in arch_ops.reverse_edge(ARCH, 0)
    renamed = arch_ops.rename_alias(ARCH, "Api", "Gateway")
    assert "[API] as Gateway" in renamed and "Web --> Gateway" in renamed and "Gateway --> Db" in renamed
    assert arch_ops.reorder_edges(ARCH).index("Api --> Db") < arch_ops.reorder_edges(ARCH).index("Web --> Api")


def test_sysml_operators():
    assert sysml_ops.part_usages(SYSML) == ["motor", "wheels", "spare"]
    assert "part spare" not in sysml_ops.drop_part(SYSML, "spare")
    assert "port power : DataPort;" in sysml_ops.retype_port(SYSML, "power")
    assert "Motor[5]" in sysml_ops.change_multiplicity(SYSML)
    renamed = sysml_ops.rename_element(SYSML, "Motor", "Engine")
    assert "part def Engine" in renamed and "Engine[4]" in renamed and "Motor" not in renamed
    assert sysml_ops.snake_case("PowerPort") == "power_port"
    reordered = sysml_ops.reorder_members(SYSML)
    assert reordered.index("part def Car") < reordered.index("port def PowerPort")
    assert reordered.index("private import") < reordered.index("part def Car")
    with pytest.raises(MutationError):
        sysml_ops.retype_port(SYSML.replace("port def DataPort;", ""), "power")


# -- the CI subset, scored by the real cascades


@pytest.fixture(scope="module")
def text_families_report():
    from sysmo.evals.sensitivity import suite

    return suite.run(["sysml", "uml_class", "architecture"], "ci")


@pytest.mark.slow
def test_text_families_detect_every_declared_mutant(text_families_report):
    from sysmo.evals.sensitivity import matrix

    report = text_families_report
    assert {r.family for r in report.results} == {"sysml", "uml_class", "architecture"}
    misses = [(r.task, r.operator, r.target, r.verdicts, r.error) for r in report.results if not r.ok]
    assert not misses, matrix.render_text(report)
    assert report.ok
    for family in ("sysml", "uml_class", "architecture"):
        rows = matrix.family_matrix(report, family)
        assert all(row.variants > 0 for row in rows), f"{family}: an operator made no variant"
        assert all(row.misses == 0 for row in rows)


@pytest.mark.slow
def test_preserving_variants_keep_full_marks(text_families_report):
    preserving = [r for r in text_families_report.results if r.preserving]
    assert {r.operator for r in preserving} == {"respell_name", "reorder_members", "reorder_declarations",
                                                "rename_alias", "reorder_edges"}
    for r in preserving:
        kept = [c for c in r.must_keep if r.verdicts[c] == "kept"]
        assert kept == r.must_keep, (r.task, r.operator, r.verdicts)
        assert all(r.values[c] == pytest.approx(r.gold[c]) for c in r.must_keep)


@pytest.fixture(scope="module")
def tla_report(tla_run_cache):
    from sysmo.evals.sensitivity import suite

    return suite.run(["tla"], "ci")


def _verdict(report, operator: str, column: str) -> str:
    (result,) = [r for r in report.results if r.operator == operator]
    return result.verdicts[column]


@pytest.mark.slow
@pytest.mark.parametrize("operator, column", [
    ("noop_action", "conformance"),
    ("weaken_guard", "invariants"),
    ("swap_init_values", "conformance"),
    ("trivial_unrelated_spec", "invariants"),
])
def test_tla_mutants_detected_on_this_base(tla_report, operator, column):
    assert _verdict(tla_report, operator, column) == "lost"


@pytest.mark.slow
@pytest.mark.parametrize("operator", ["reorder_definitions", "rename_definition"])
def test_tla_preserving_variants_keep_full_marks(tla_report, operator):
    (result,) = [r for r in tla_report.results if r.operator == operator]
    assert result.error is None and all(result.verdicts[s] == "kept" for s in result.must_keep), result.verdicts


@pytest.mark.slow
@pytest.mark.parametrize("operator", ["drop_action_from_next", "rename_variable", "trivial_unrelated_spec"])
def test_tla_conformance_detects(tla_report, operator):
    """sysmo-mode conformance: every replayed step satisfies [Next]_vars, and what the mapping cannot place
    scales the value down (docs/conformance.md)."""
    assert _verdict(tla_report, operator, "conformance") == "lost"


# -- the command and the report


def test_registered_in_reproduce_all():
    from sysmo.reproduce.registry import HEAVY, discover

    found = discover()
    assert "sensitivity" in found and "sensitivity" not in HEAVY  # `all` runs the CI subset
    assert "sensitivity-full" in HEAVY  # the full subset only when named


def test_command_refuses_unknown_family_and_subset():
    from sysmo_cli import run_sysmo

    run = run_sysmo("reproduce", "sensitivity", "--family", "petri")
    assert run.code != 0 and "unknown --family 'petri'" in run.stdout + run.stderr
    run = run_sysmo("reproduce", "sensitivity", "--subset", "most")
    assert run.code != 0 and "use ci or full" in run.stdout + run.stderr


@pytest.mark.slow
def test_command_prints_the_matrix_and_writes_csv(tmp_path):
    import csv

    from sysmo_cli import run_sysmo

    out = tmp_path / "sens.csv"
    run = run_sysmo("reproduce", "sensitivity", "--family", "uml_class", "--csv-out", str(out))
    assert run.code == 0, run.stdout + run.stderr
    assert "uml_class: 1 gold model(s), 4 variants, 0 miss(es)" in run.stdout
    assert "= reorder_declarations" in run.stdout and "✓ 1/1" in run.stdout
    assert "starter/uml_class/library_loans: gold" in run.stderr  # progress on stderr
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 4 * 6  # variants x columns
    flip = [r for r in rows if r["operator"] == "flip_relation_kind" and r["column"] == "relation"]
    assert flip[0]["declared"] == "lose" and flip[0]["verdict"] == "lost" and float(flip[0]["value"]) < 1.0

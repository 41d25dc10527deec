"""A TLA+ diagnostic names the submitted file and line, never a module sysmo generated: real SANY on a spec with
an error on line 5, checked whole and one definition at a time (the definitions' modules are generated)."""

from __future__ import annotations

from sysmo.contracts.artifact import Artifact
from sysmo.contracts.check import Diagnostic
from sysmo.evals.metrics import tla_syntax
from sysmo.tools.tla.source_map import LineMap

HEAD = "---- MODULE Lock ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\n"
TAIL = "Other == x' = x + 2\n====\n"
BROKEN_LINE_5 = {
    "cut short": "Next == x' = x +\n",  # SANY reports the generated module's footer
    "stray parenthesis": "Next == x' = x + )\n",  # SANY's message repeats the generated line
    "unknown name": "Next == x' = y + 1\n",  # a semantic error
}


def test_every_diagnostic_of_a_line_5_error_names_lock_tla_line_5() -> None:
    for what, line_5 in BROKEN_LINE_5.items():
        result = tla_syntax.score(Artifact(language="tla", files={"Lock.tla": HEAD + line_5 + TAIL}))
        assert not result.full.ok, what
        assert {(d.file, d.line) for d in result.full.errors} == {("Lock.tla", 5)}, what
        failed = [d for d in result.definitions if d.outcome != "ok"]
        assert [d.name for d in failed] == ["Next"], (what, failed)
        message = failed[0].message
        assert message.startswith("Lock.tla:5:"), (what, message)
        assert tla_syntax.WRAPPER_PREFIX not in message, (what, message)
        if "line " in message:  # SANY's own words name the place too
            assert "at line 5," in message, (what, message)


def test_a_diagnostic_object_and_a_semantic_span_move_to_the_submitted_file() -> None:
    line_map = LineMap(generated="SysmoDef2", source_file="Lock.tla", lines=[0, 2, 3, 5],
                       text=["---- MODULE SysmoDef2 ----", "EXTENDS Naturals", "VARIABLE x", "Next == x' = y"])
    moved = line_map.diagnostic(Diagnostic(tool="SANY", file="SysmoDef2.tla", line=4, column=14, message=(
        "Unknown operator: `y' at line 4, col 14 to line 4, col 14 of module SysmoDef2")))
    assert (moved.file, moved.line, moved.column) == ("Lock.tla", 5, 14)
    assert moved.message == "Unknown operator: `y' at line 5, col 14 to line 5, col 14 of module Lock"
    assert line_map.original(5) == 5  # the footer: the end of the copied definition
    assert line_map.original(1) is None  # our header is nobody's line
    other = Diagnostic(tool="SANY", file="Naturals.tla", line=4, message="x")
    assert line_map.diagnostic(other) == other

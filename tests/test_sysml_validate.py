"""OpenSysML validation: diagnostics parsed with code, severity, place; outcome rules; broken variants on the right line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sysmo.contracts.artifact import Artifact
from sysmo.errors import SysmoError
from sysmo.contracts.check import Outcome, Severity
from sysmo.tools.sysml.diagnostics import parse_load_output, split_hint
from sysmo.tools.sysml.validate import failing_files, self_check, validate

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


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _error_lines(result) -> set[int]:
    return {d.line for d in result.errors}


def test_a_valid_model_is_ok_without_diagnostics():
    result = validate(BICYCLE)
    assert result.outcome == Outcome.OK
    assert result.diagnostics == []
    assert result.tool == "opensysml" and result.tool_version.startswith("v0.11")


def test_unresolved_type_is_an_error_with_code_line_column_span_and_hint():
    result = validate(BICYCLE.replace("part chassis : Frame;", "part chassis : Fram;"))
    assert result.outcome == Outcome.FAILED
    (d,) = result.diagnostics
    assert (d.severity, d.code, d.file, d.line, d.column) == (Severity.ERROR, "unresolved", "model.sysml", 6, 18)
    assert d.end_line == 6 and d.end_column == 21  # the caret underline covers `Fram`
    assert split_hint(d.message) == ("unresolved reference: Fram", "did you mean Frame?")


def test_strict_typing_codes_are_their_own_severity_and_fail_unless_relaxed():
    text = "package P {\n  part def E;\n  port def Q;\n  part def C {\n    port p : E;\n  }\n}"
    result = validate(text)
    typing = [d for d in result.diagnostics if d.severity == Severity.TYPING]
    assert [(d.code, d.line) for d in typing] == [("usage-typing", 5)]
    assert result.outcome == Outcome.FAILED and result.details["typing_only"] is True
    assert "typing[usage-typing]" in result.summary()
    assert validate(text, typing_fails=False).outcome == Outcome.OK


def test_warnings_do_not_fail_a_model(shared_benchmarks: Path):
    rows = {json.loads(line)["id"]: json.loads(line) for line in open(shared_benchmarks / "sysmbench" / "sysmbench.jsonl")}
    result = validate(rows[12]["reference_model"])  # end feature multiplicity warning only
    assert result.outcome == Outcome.OK
    assert [(d.severity, d.code, d.line) for d in result.diagnostics] == [(Severity.WARNING, "end-feature-multiplicity", 11)]


def test_empty_or_comment_only_models_fail_as_empty():
    for text in ("", "  \n", "// nothing\n/* at all */\n"):
        result = validate(text)
        assert result.outcome == Outcome.FAILED
        assert [d.code for d in result.diagnostics] == ["empty-model"]


def test_an_artifact_is_loaded_as_a_whole_and_files_named_in_diagnostics():
    artifact = Artifact(language="sysml", files={
        "defs.sysml": "package Defs { part def Engine; }",
        "use.sysml": "package Use {\n  private import Defs::*;\n  part e : Engine;\n  part m : Motor;\n}",
        "notes.md": "not a model: ignored",
    })
    result = validate(artifact)
    assert result.outcome == Outcome.FAILED
    assert [(d.file, d.line, d.code) for d in result.errors] == [("use.sysml", 4, "unresolved")]
    assert set(failing_files(result)) == {"use.sysml"}
    assert result.details["files"] == 2


def test_each_check_is_isolated_from_the_previous_ones():
    assert validate("package Lib { part def Engine; }").ok
    # the previous model is gone: Lib is not visible any more
    result = validate("package User { private import Lib::*; part e : Engine; }")
    assert result.outcome == Outcome.FAILED
    assert {d.code for d in result.errors} == {"unresolved"}


def test_kernel_commands_inside_the_model_text_are_syntax_errors_not_commands(tmp_path: Path):
    target = tmp_path / "leak.json"
    result = validate(f"package P {{ part def A; }}\n%save {target}\n%help\n")
    assert result.outcome == Outcome.FAILED
    assert (result.errors[0].code, result.errors[0].line) == ("syntax", 2)
    assert not target.exists()


def test_file_names_escaping_the_model_folder_are_refused():
    with pytest.raises(SysmoError):
        validate({"../evil.sysml": "package P;"})
    with pytest.raises(SysmoError):
        validate(Artifact(language="tla", files={"A.tla": "---- MODULE A ----\n===="}))


def test_parser_reads_headers_carets_and_notes():
    output = (
        "/w/m.sysml:3:5: warning[name-conflict]: Duplicate of other owned member name\n"
        "    part a;\n"
        "    ^~~~~~~\n"
        "/w/m.sysml:4:1: error[one-type]: several types\n"
        "note: 'P' is opened by more than one loaded file\n"
        "✓ package P\n"
    )
    found = parse_load_output(output, folder="/w")
    assert [(d.severity, d.code, d.file, d.line, d.column, d.end_column) for d in found] == [
        (Severity.WARNING, "name-conflict", "m.sysml", 3, 5, 11),
        (Severity.TYPING, "one-type", "m.sysml", 4, 1, None),
        (Severity.INFO, "note", None, None, None, None),
    ]


def test_self_check_is_green():
    status = self_check()
    assert status.ok, status.message
    assert status.version.startswith("v0.11")


# ---------------------------------------------------------------- broken variants of valid models

def _valid_references(shared_benchmarks: Path) -> list[tuple[int, str]]:
    validity = {json.loads(line)["id"]: json.loads(line)["valid"]
                for line in open(shared_benchmarks / "sysmbench" / "reference_validation_opensysml.jsonl")}
    rows = [json.loads(line) for line in open(shared_benchmarks / "sysmbench" / "sysmbench.jsonl")]
    return [(r["id"], r["reference_model"]) for r in rows if validity[r["id"]]]


DECLARATION = re.compile(r"^\s*(?:ref\s+)?(?:part|attribute|port|item)\s+(\w+)\s*:\s*(\w+)\s*;\s*$")


def test_a_deleted_semicolon_is_reported_on_its_line(shared_benchmarks: Path):
    checked = 0
    for ref_id, text in _valid_references(shared_benchmarks)[:25]:
        lines = _lines(text)
        index = next((i for i, line in enumerate(lines) if DECLARATION.match(line)), None)
        if index is None:
            continue
        lines[index] = lines[index].rstrip().removesuffix(";")
        result = validate("\n".join(lines))
        assert result.outcome == Outcome.FAILED, ref_id
        assert index + 1 in _error_lines(result), (ref_id, result.summary())
        assert {d.code for d in result.errors} == {"syntax"}
        checked += 1
    assert checked >= 10


def test_a_renamed_type_is_reported_where_it_is_used(shared_benchmarks: Path):
    checked = 0
    for ref_id, text in _valid_references(shared_benchmarks)[:40]:
        lines = _lines(text)
        for index, line in enumerate(lines):
            match = DECLARATION.match(line)
            if match and re.search(rf"\b(?:part|item|port|attribute) def {match.group(2)}\b", text):
                lines[index] = line.replace(f": {match.group(2)}", f": {match.group(2)}Renamed")
                result = validate("\n".join(lines))
                naming = [d for d in result.errors if f"{match.group(2)}Renamed" in d.message]
                # later errors may follow from it (features of the lost type); the renamed one is on its line
                assert [(d.line, d.code) for d in naming] == [(index + 1, "unresolved")], (ref_id, result.summary())
                assert result.errors[0] == naming[0]
                checked += 1
                break
    assert checked >= 10


def test_a_removed_import_is_reported_on_every_line_that_needs_it():
    lines = _lines(BICYCLE)
    del lines[1]  # private import ScalarValues::*;
    result = validate("\n".join(lines))
    assert [(d.line, d.code) for d in result.errors] == [(3, "unresolved"), (9, "unresolved"), (10, "unresolved")]
    assert all("ScalarValues::" in d.message for d in result.errors)  # the hint names the missing import


@pytest.mark.parametrize(("line_no", "old", "new"), [
    (5, "gear : ", "gear -> "),  # a bad arrow
    (6, "part chassis", "part # chassis"),  # a stray token
    (10, "Integer;", "Integer;;)"),
])
def test_a_bad_token_is_reported_on_its_line(line_no: int, old: str, new: str):
    lines = _lines(BICYCLE)
    assert old in lines[line_no - 1]
    lines[line_no - 1] = lines[line_no - 1].replace(old, new)
    result = validate("\n".join(lines))
    assert result.outcome == Outcome.FAILED
    assert result.errors[0].line == line_no and result.errors[0].code == "syntax"
